"""Checking a SAML Response posted to the ACS, and reading what it says about the person.

Imports lxml and signxml: only the ACS handler imports this module (lazily), so no other
function pays for them at a cold start.

The order, each step refusing with ``SamlRefused``:

1. Decode (base64, bounded size) and parse with a hardened parser: no DTD at all (so no
   entity expansion, internal or external), no network, no huge trees.
2. Shape: the root is a ``samlp:Response`` with exactly one ``saml:Assertion`` anywhere in
   the document (a second one, wherever it hides, refuses the whole Response: signature
   wrapping needs two), no encrypted assertion, no comment or processing instruction inside
   a NameID or attribute value (``adm<!---->in``).
3. Signature, by signxml only, trusting only ``idp-cert`` (and ``old-idp-cert`` while set),
   passed as the certificate to verify against: a certificate inside the Response is never
   trusted. The Response's own signature (a child of the root) or the Assertion's (a child of
   the Assertion) is accepted; with ``want-assertions-signed`` the Assertion's is required.
   Everything after this is read from signxml's ``signed_xml`` (what was signed, as
   canonicalized), never from the posted tree, so wrapped content is never read.
4. Conditions: ``StatusCode`` Success; Destination (when present) and the bearer
   confirmation's Recipient the ACS; Audience the SP entity id; NotBefore / NotOnOrAfter
   with ``CLOCK_SKEW_SECONDS``; InResponseTo read (the service checks it is outstanding).
"""

from __future__ import annotations

import base64
import binascii
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from lxml import etree
from signxml import InvalidInput, InvalidSignature, XMLVerifier
from signxml.algorithms import DigestAlgorithm, SignatureMethod
from signxml.exceptions import InvalidCertificate, InvalidDigest, SignXMLException
from signxml.verifier import SignatureConfiguration

from chalicelib.saml.config import CLOCK_SKEW_SECONDS, SamlConfig
from chalicelib.saml.errors import SamlRefused
from chalicelib.saml.metadata import certificate_body

MAX_RESPONSE_BYTES = 256 * 1024
# The assertion's ID and the request it answers become keys of the saml-state table (replay
# and outstanding-request checks): longer ones are refused before any read, since DynamoDB
# refuses a key past 2 KB (a 500). IdPs' IDs are some 40 characters.
MAX_ID_LENGTH = 256
P = "{urn:oasis:names:tc:SAML:2.0:protocol}"
A = "{urn:oasis:names:tc:SAML:2.0:assertion}"
DS = "{http://www.w3.org/2000/09/xmldsig#}"
SUCCESS = "urn:oasis:names:tc:SAML:2.0:status:Success"
BEARER = "urn:oasis:names:tc:SAML:2.0:cm:bearer"
EXPIRED_ADVICE = (
    "Sign in again. If this keeps happening, ask your administrator to check that the "
    "clocks of this registry and of the identity provider are right."
)


@dataclass
class Assertion:
    """What an accepted assertion says (all of it read from the signed XML)."""

    assertion_id: str
    name_id: str
    attributes: dict[str, list[str]] = field(default_factory=dict)
    in_response_to: str | None = None
    valid_until: datetime | None = None
    name_id_format: str | None = None  # the NameID's Format, echoed in a LogoutRequest
    session_index: str | None = None  # the AuthnStatement's, echoed in a LogoutRequest
    issuer: str | None = None  # the IdP's entity id: its logout messages must name it


def _refused(message: str, advice: str | None = None, detail: str = "") -> SamlRefused:
    if advice is None:
        return SamlRefused(message, log_detail=detail or message, status=403)
    return SamlRefused(message, advice, log_detail=detail or message, status=403)


def _parser() -> etree.XMLParser:
    return etree.XMLParser(
        resolve_entities=False,
        no_network=True,
        huge_tree=False,
        load_dtd=False,
        dtd_validation=False,
        remove_blank_text=False,
    )


def decode(posted: str) -> bytes:
    """The Response XML from the form's ``SAMLResponse`` (base64)."""
    if not posted or len(posted) > MAX_RESPONSE_BYTES * 4 // 3 + 4:
        raise _refused("The sign-in response is missing or too large.", detail="bad size")
    try:
        return base64.b64decode("".join(posted.split()), validate=True)
    except (binascii.Error, ValueError):
        raise _refused("The sign-in response is not base64.", detail="not base64") from None


def parse(xml: bytes) -> Any:
    """The document's root, parsed safely; any DTD (hence any entity) is refused."""
    head = xml[:4096].upper()
    if b"<!DOCTYPE" in head or b"<!ENTITY" in xml.upper():
        raise _refused("The sign-in response contains a DTD.", detail="DTD in the Response")
    try:
        root = etree.fromstring(xml, parser=_parser())
    except etree.XMLSyntaxError:
        raise _refused("The sign-in response is not well-formed XML.", detail="bad XML") from None
    info = root.getroottree().docinfo
    if info.internalDTD is not None or info.externalDTD is not None or info.doctype:
        raise _refused("The sign-in response contains a DTD.", detail="DTD in the Response")
    return root


def _check_shape(root: Any) -> None:
    if root.tag != P + "Response":
        raise _refused("The sign-in response is not a SAML Response.", detail=f"root {root.tag}")
    if any(True for _ in root.iter(A + "EncryptedAssertion")):
        raise _refused(
            "The identity provider encrypted the assertion, which this registry does not support.",
            "Ask your administrator to turn off assertion encryption for this registry in "
            "the identity provider.",
        )
    count = sum(1 for _ in root.iter(A + "Assertion"))
    if count != 1:
        raise _refused(
            "The sign-in response must carry exactly one assertion.",
            detail=f"{count} assertions",
        )
    for name in (A + "NameID", A + "AttributeValue"):
        for element in root.iter(name):
            if any(True for _ in element.iter(etree.Comment, etree.ProcessingInstruction)):
                raise _refused(
                    "The sign-in response has a comment inside a name.",
                    detail="comment inside NameID or AttributeValue",
                )


def _pem(text: str) -> str:
    body = certificate_body(text)
    lines = [body[i : i + 64] for i in range(0, len(body), 64)]
    return "-----BEGIN CERTIFICATE-----\n" + "\n".join(lines) + "\n-----END CERTIFICATE-----\n"


def _expectations(config: SamlConfig, location: str) -> SignatureConfiguration:
    defaults = SignatureConfiguration()
    methods, digests = set(defaults.signature_methods), set(defaults.digest_algorithms)
    if config.values.get("signature-signing-method") == "SHA1":
        methods |= {SignatureMethod.RSA_SHA1, SignatureMethod.ECDSA_SHA1}
    if config.values.get("signature-digest-method") == "SHA1":
        digests |= {DigestAlgorithm.SHA1}
    return SignatureConfiguration(
        location=location,
        expect_references=1,
        signature_methods=frozenset(methods),
        digest_algorithms=frozenset(digests),
    )


def _verified(config: SamlConfig, xml: bytes, location: str, signed_tag: str) -> Any:
    """The element signed by the signature at ``location`` (signxml's ``signed_xml``), when
    one of the IdP certificates verifies it and it is a ``signed_tag``; else None."""
    certificates = config.idp_certificates
    if not certificates:
        raise _refused(
            "Single sign-on has no identity provider certificate to check responses with.",
            detail="no idp-cert",
        )
    for certificate in certificates:
        try:
            result = XMLVerifier().verify(
                xml,
                x509_cert=_pem(certificate),
                expect_config=_expectations(config, location),
                parser=_parser(),
            )
        except (InvalidSignature, InvalidDigest, InvalidCertificate, InvalidInput):
            continue
        except (SignXMLException, ValueError, TypeError) as error:
            # an unreadable certificate setting, an unsupported algorithm: try the other
            detail = type(error).__name__
            if certificate is certificates[-1]:
                raise _refused(
                    "The sign-in response's signature could not be checked.",
                    detail=f"signature check failed: {detail}",
                ) from None
            continue
        if isinstance(result, list):  # one reference is expected: never a list
            continue
        signed = result.signed_xml
        if signed is not None and signed.tag == signed_tag:
            return signed
    return None


def _signed_assertion(config: SamlConfig, xml: bytes, root: Any) -> tuple[Any, Any | None]:
    """(the signed Assertion, the signed Response or None) read from what signxml verified."""
    response_signed = root.find(DS + "Signature") is not None
    assertion = root.find(A + "Assertion")
    assertion_signed = assertion is not None and assertion.find(DS + "Signature") is not None
    signed_response = signed_assertion = None
    if response_signed:
        signed_response = _verified(config, xml, "./", P + "Response")
        if signed_response is None:
            raise _bad_signature()
    if assertion_signed:
        signed_assertion = _verified(config, xml, f"./{A}Assertion/", A + "Assertion")
        if signed_assertion is None:
            raise _bad_signature()
    if signed_assertion is None:
        if config.values.get("want-assertions-signed") or signed_response is None:
            raise _refused(
                "The sign-in response's assertion is not signed.",
                "Ask your administrator to have the identity provider sign its assertions "
                "for this registry.",
                detail="unsigned assertion",
            )
        found = signed_response.findall(A + "Assertion")
        if len(found) != 1:
            raise _refused("The sign-in response must carry exactly one assertion.")
        signed_assertion = found[0]
    return signed_assertion, signed_response


def _bad_signature() -> SamlRefused:
    return _refused(
        "The sign-in response's signature does not match the identity provider's certificate.",
        "Ask your administrator to check that the identity provider certificate (idp-cert) "
        "in this registry's SAML settings is the one the identity provider signs with.",
        detail="signature not valid for idp-cert or old-idp-cert",
    )


def _time(value: str | None) -> datetime | None:
    if not value:
        return None
    try:
        moment = datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
    except ValueError:
        raise _refused("The sign-in response has an unreadable time.", detail="bad time") from None
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def _check_window(not_before: str | None, not_on_or_after: str | None, moment: datetime) -> None:
    skew = timedelta(seconds=CLOCK_SKEW_SECONDS)
    start, end = _time(not_before), _time(not_on_or_after)
    if start is not None and moment + skew < start:
        raise _refused("The sign-in response is not valid yet.", EXPIRED_ADVICE, "NotBefore")
    if end is not None and moment - skew >= end:
        raise _refused("The sign-in response has expired.", EXPIRED_ADVICE, "NotOnOrAfter")


def _text(element: Any) -> str:
    """An element's whole text (every text node of it, as signed), trimmed."""
    return str(element.xpath("string()")).strip() if element is not None else ""


def _conditions(config: SamlConfig, assertion: Any, moment: datetime) -> datetime | None:
    conditions = assertion.find(A + "Conditions")
    if conditions is None:
        raise _refused("The sign-in response has no conditions (audience).", detail="no Conditions")
    _check_window(conditions.get("NotBefore"), conditions.get("NotOnOrAfter"), moment)
    restrictions = conditions.findall(A + "AudienceRestriction")
    if not restrictions or any(
        config.entity_id not in {_text(a) for a in r.findall(A + "Audience")} for r in restrictions
    ):
        raise _refused(
            "The sign-in response is meant for another service.",
            f"Ask your administrator to set the identity provider's audience (SP entity id) "
            f"for this registry to {config.entity_id}.",
            detail="Audience is not the SP entity id",
        )
    return _time(conditions.get("NotOnOrAfter"))


def _confirmation(config: SamlConfig, assertion: Any, moment: datetime) -> tuple[str | None, Any]:
    """The bearer confirmation's InResponseTo and its NotOnOrAfter, checked."""
    subject = assertion.find(A + "Subject")
    data = None
    for confirmation in subject.findall(A + "SubjectConfirmation") if subject is not None else ():
        if confirmation.get("Method") == BEARER:
            data = confirmation.find(A + "SubjectConfirmationData")
            break
    if data is None:
        raise _refused("The sign-in response has no bearer confirmation.", detail="no bearer")
    if data.get("Recipient") != config.acs_url:
        raise _wrong_destination("Recipient")
    if data.get("NotBefore"):
        raise _refused("The sign-in response's confirmation is malformed.", detail="NotBefore")
    _check_window(None, data.get("NotOnOrAfter"), moment)
    return data.get("InResponseTo"), _time(data.get("NotOnOrAfter"))


def _wrong_destination(what: str) -> SamlRefused:
    return _refused(
        "The sign-in response was sent to another address.",
        "Ask your administrator to set the identity provider's single sign-on URL (ACS) "
        "to this registry's /users/saml/auth address.",
        detail=f"{what} is not the ACS URL",
    )


def _attributes(assertion: Any) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for statement in assertion.findall(A + "AttributeStatement"):
        for attribute in statement.findall(A + "Attribute"):
            values = [_text(v) for v in attribute.findall(A + "AttributeValue")]
            found.setdefault(attribute.get("Name") or "", []).extend(values)
    return found


def check(config: SamlConfig, posted: str, moment: datetime) -> Assertion:
    """The assertion of the posted Response when every check passes (see the module)."""
    xml = decode(posted)
    root = parse(xml)
    _check_shape(root)
    assertion, response = _signed_assertion(config, xml, root)
    outer = response if response is not None else root  # unsigned fields only refuse
    status = outer.find(f"{P}Status/{P}StatusCode")
    if status is None or status.get("Value") != SUCCESS:
        raise _refused(
            "The identity provider did not sign you in.",
            "Try again; if it keeps failing, ask your administrator whether your identity "
            "provider account may use this registry.",
            detail=f"status {status.get('Value') if status is not None else None}",
        )
    destination = outer.get("Destination")
    if destination is not None and destination != config.acs_url:
        raise _wrong_destination("Destination")
    until = _conditions(config, assertion, moment)
    in_response_to, confirmed_until = _confirmation(config, assertion, moment)
    outer_reply = outer.get("InResponseTo")
    if outer_reply and in_response_to and outer_reply != in_response_to:
        raise _refused("The sign-in response answers two requests.", detail="InResponseTo differ")
    name_id_element = assertion.find(f"{A}Subject/{A}NameID")
    name_id = _text(name_id_element)
    statement = assertion.find(f"{A}AuthnStatement")
    assertion_id = assertion.get("ID") or ""
    if not assertion_id:
        raise _refused("The sign-in response's assertion has no ID.", detail="no ID")
    replied = in_response_to or outer_reply or ""
    if max(len(assertion_id), len(replied)) > MAX_ID_LENGTH:
        raise _refused("The sign-in response's identifiers are too long.", detail="ID too long")
    ends = [t for t in (until, confirmed_until) if t is not None]
    return Assertion(
        assertion_id=assertion_id,
        name_id=name_id,
        attributes=_attributes(assertion),
        in_response_to=in_response_to or outer_reply or None,
        valid_until=min(ends) if ends else None,
        name_id_format=name_id_element.get("Format") if name_id_element is not None else None,
        session_index=statement.get("SessionIndex") if statement is not None else None,
        issuer=_text(assertion.find(A + "Issuer")) or None,
    )


def readable(posted: str) -> str:
    """The posted Response (already accepted by ``check``) pretty-printed for the ``debug``
    page, each signature's value and certificate left out (no key material is shown)."""
    root = parse(decode(posted))
    for name in (DS + "SignatureValue", DS + "X509Certificate"):
        for element in root.iter(name):
            element.text = "(left out)"
    etree.indent(root, space="  ")
    return str(etree.tostring(root, encoding="unicode"))
