"""Single logout at ``/users/saml/slo`` (HTTP-Redirect binding, SAML bindings §3.4).

Two messages arrive there, each in the query string (``SAMLRequest`` or ``SAMLResponse``:
raw DEFLATE, base64; ``RelayState``; ``SigAlg`` and ``Signature`` when signed):

* ``answered``: the IdP's LogoutResponse to the LogoutRequest this site sent at sign-out.
  Its ``InResponseTo`` must name an outstanding ``logout#`` request of this browser
  (``store``: its cookie, once only, until it expires) and its Issuer the IdP that signed
  the person in.
* ``idp_logout``: the IdP's LogoutRequest (the person signed out elsewhere). Always signed:
  an unsigned one would let anyone end anyone's sessions. Issuer, Destination (this SLO
  URL), IssueInstant / NotOnOrAfter and the NameID are checked, its ID is used once; the
  answer names the UI sessions SAML opened for that NameID (the web room ends them) and
  the IdP URL carrying our LogoutResponse.

Refusals (``SamlRefused``, 4xx) change nothing: state is written only once every check
passed. Size is bounded before anything is decoded (``MAX_ENCODED``) and while inflating
(``MAX_XML``: a deflate bomb stops there). The parse is ``response.parse`` (no DTD).

The signature of this binding is not an XML signature: it is the IdP key's signature over
the query string ``SAMLRequest=…&RelayState=…&SigAlg=…`` as the IdP encoded it (§3.4.4.1),
checked with ``cryptography`` against ``idp-cert`` / ``old-idp-cert`` (the public key of the
configured certificate only). API Gateway hands the handler decoded values, so the octets
are rebuilt in the encodings IdPs use (upper- or lower-case percent escapes, ``+`` or
``%20`` for a space); the signature covers the whole message, so every element read from
the parsed tree is signed.
"""

from __future__ import annotations

import base64
import binascii
import logging
import re
import zlib
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any
from urllib.parse import quote, quote_plus

from cryptography import x509
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec, padding, rsa
from lxml import etree

from chalicelib.core.data.ids import now
from chalicelib.saml import authn, response, store
from chalicelib.saml.config import (
    CLOCK_SKEW_SECONDS,
    MAX_ENCODED,
    MAX_RELAY,
    MAX_SIGNATURE,
    SamlConfig,
)
from chalicelib.saml.errors import SamlRefused

log = logging.getLogger("registry.saml")

MAX_XML = 64 * 1024  # bytes once inflated
MESSAGE_SECONDS = 10 * 60  # how old an IdP's LogoutRequest may be (IssueInstant)
P, A = response.P, response.A
SUCCESS = response.SUCCESS
_HASHES: dict[str, tuple[str, type[hashes.HashAlgorithm]]] = {
    "http://www.w3.org/2001/04/xmldsig-more#rsa-sha256": ("rsa", hashes.SHA256),
    "http://www.w3.org/2001/04/xmldsig-more#rsa-sha384": ("rsa", hashes.SHA384),
    "http://www.w3.org/2001/04/xmldsig-more#rsa-sha512": ("rsa", hashes.SHA512),
    "http://www.w3.org/2001/04/xmldsig-more#ecdsa-sha256": ("ec", hashes.SHA256),
    "http://www.w3.org/2001/04/xmldsig-more#ecdsa-sha384": ("ec", hashes.SHA384),
    "http://www.w3.org/2001/04/xmldsig-more#ecdsa-sha512": ("ec", hashes.SHA512),
}
_SHA1: dict[str, tuple[str, type[hashes.HashAlgorithm]]] = {
    "http://www.w3.org/2000/09/xmldsig#rsa-sha1": ("rsa", hashes.SHA1),
    "http://www.w3.org/2001/04/xmldsig-more#ecdsa-sha1": ("ec", hashes.SHA1),
}
_ESCAPE = re.compile(r"%[0-9A-F]{2}")
# An xs:ID as IdPs make them, at most response.MAX_ID_LENGTH long (it becomes a key).
_ID = re.compile(rf"[A-Za-z_][A-Za-z0-9_.-]{{0,{response.MAX_ID_LENGTH - 1}}}")
NOT_CONFIRMED = (
    "Your identity provider did not confirm that it signed you out: you may still be "
    "signed in there."
)
LOGOUT_ADVICE = (
    "You may still be signed in at your identity provider. If this keeps happening, ask "
    "your administrator to check the single logout settings of this registry and of the "
    "identity provider."
)


@dataclass(frozen=True)
class IdpLogout:
    """An accepted LogoutRequest: the UI sessions to end and where to send the browser."""

    session_hashes: list[str]
    location: str | None  # the IdP's SLO URL with our LogoutResponse (None: none is set)


def _refused(message: str, detail: str, status: int = 403) -> SamlRefused:
    return SamlRefused(message, LOGOUT_ADVICE, status=status, log_detail=detail)


def _one(query: Mapping[str, Any], name: str) -> str | None:
    """The query parameter ``name`` (None when absent); sent twice is refused."""
    if name not in query:
        return None
    getlist = getattr(query, "getlist", None)
    values = list(getlist(name)) if getlist else [query[name]]
    if len(values) > 1:
        raise _refused("The logout message is malformed.", f"{name} sent twice", 400)
    return values[0] if values else None


def decode(encoded: str | None) -> Any:
    """The message's root element: base64 and DEFLATE, each bounded, then parsed safely."""
    if not encoded or len(encoded) > MAX_ENCODED:
        raise _refused("The logout message is missing or too large.", "bad size", 400)
    try:
        deflated = base64.b64decode("".join(encoded.split()), validate=True)
    except (binascii.Error, ValueError):
        raise _refused("The logout message is not base64.", "not base64", 400) from None
    inflater = zlib.decompressobj(-15)
    try:
        xml = inflater.decompress(deflated, MAX_XML)
    except zlib.error:
        raise _refused("The logout message is not deflated.", "not deflated", 400) from None
    if inflater.unconsumed_tail:
        raise _refused("The logout message is too large.", "too large inflated", 400)
    if not inflater.eof:
        raise _refused("The logout message is not deflated.", "truncated deflate", 400)
    try:
        return response.parse(xml)
    except SamlRefused as refusal:
        message = "The logout message is not well-formed XML."
        raise _refused(message, refusal.log_detail, 400) from None


def _encoded(text: str, plus: bool, lower: bool) -> str:
    """``text`` URL-encoded as an IdP may have: ``+`` or ``%20`` for a space, lower- or
    upper-case escapes (see the module)."""
    encoded = quote_plus(text, safe="") if plus else quote(text, safe="")
    return _ESCAPE.sub(lambda m: m.group(0).lower(), encoded) if lower else encoded


def _signed_octets(query: Mapping[str, Any], field: str, alg: str) -> list[bytes]:
    """``field=…[&RelayState=…]&SigAlg=…`` in each encoding ``_encoded`` knows (a ``+``
    left undecoded in the RelayState is tried as the space it encoded)."""
    relay = _one(query, "RelayState")
    relays: list[str | None] = [None]
    if relay is not None:
        relays = list(sorted({relay, relay.replace("+", " ")}))
    found = set()
    for shown in relays:
        parts = [(field, _one(query, field) or "")]
        parts += [("RelayState", shown)] if shown is not None else []
        parts.append(("SigAlg", alg))
        found |= {
            "&".join(f"{name}={_encoded(value, plus, lower)}" for name, value in parts).encode()
            for plus in (False, True)
            for lower in (False, True)
        }
    return sorted(found)


def _public_keys(config: SamlConfig) -> list[Any]:
    keys = []
    for certificate in config.idp_certificates:
        try:
            pem = response._pem(certificate).encode()
            keys.append(x509.load_pem_x509_certificate(pem).public_key())
        except ValueError:
            continue  # an unreadable setting: the other certificate may still serve
    return keys


def _verify(key: Any, kind: str, digest: hashes.HashAlgorithm, sig: bytes, data: bytes) -> bool:
    try:
        if kind == "rsa" and isinstance(key, rsa.RSAPublicKey):
            key.verify(sig, data, padding.PKCS1v15(), digest)
        elif kind == "ec" and isinstance(key, ec.EllipticCurvePublicKey):
            key.verify(sig, data, ec.ECDSA(digest))
        else:
            return False
    except InvalidSignature:
        return False
    return True


def check_signature(
    config: SamlConfig, query: Mapping[str, Any], field: str, required: bool
) -> bool:
    """Whether the message is signed (by ``idp-cert`` or ``old-idp-cert``: anything else
    refuses); an unsigned one is refused when ``required``."""
    signature, alg = _one(query, "Signature"), _one(query, "SigAlg")
    if signature is None and alg is None:
        if required:
            raise _refused("The logout message is not signed.", "unsigned logout message")
        return False
    allowed = dict(_HASHES)
    if config.values.get("signature-signing-method") == "SHA1":
        allowed |= _SHA1
    if not signature or not alg or alg not in allowed or len(signature) > MAX_SIGNATURE:
        raise _refused("The logout message's signature is malformed.", "bad SigAlg or size")
    try:
        raw = base64.b64decode("".join(signature.split()), validate=True)
    except (binascii.Error, ValueError):
        raise _refused("The logout message's signature is malformed.", "bad signature") from None
    kind, digest = allowed[alg]
    keys = _public_keys(config)
    if not keys:
        raise _refused("No identity provider certificate to check with.", "no idp-cert")
    for octets in _signed_octets(query, field, alg):
        if any(_verify(key, kind, digest(), raw, octets) for key in keys):
            return True
    raise _refused(
        "The logout message's signature does not match the identity provider's certificate.",
        "signature not valid for idp-cert or old-idp-cert",
    )


def _moment(value: str | None, what: str) -> datetime | None:
    try:
        return response._time(value)
    except SamlRefused:
        raise _refused("The logout message has an unreadable time.", f"bad {what}") from None


def _check_common(config: SamlConfig, root: Any, tag: str, issuer: str | None) -> None:
    """The root, version, ID, Destination (this SLO URL when present) and Issuer (the IdP
    that signed the person in, when known)."""
    if (
        root.tag != P + tag
        or root.get("Version") != "2.0"
        or not _ID.fullmatch(root.get("ID") or "")
    ):
        raise _refused(f"The logout message is not a SAML {tag}.", f"not a {tag}", 400)
    destination = root.get("Destination")
    if destination is not None and destination != config.slo_url:
        raise _refused(
            "The logout message was sent to another address.",
            "Destination is not the SLO URL",
        )
    sent_by = response._text(root.find(A + "Issuer"))
    if not sent_by or (issuer is not None and sent_by != issuer):
        raise _refused(
            "The logout message comes from another identity provider.",
            "Issuer is not the IdP's entity id",
        )


def answered(config: SamlConfig, query: Mapping[str, Any], browser_secret: str | None) -> bool:
    """Check the IdP's LogoutResponse (see the module) and take the request it answers:
    True when the IdP says the person is signed out there too."""
    root = decode(_one(query, "SAMLResponse"))
    check_signature(
        config, query, "SAMLResponse", bool(config.values.get("want-assertions-signed"))
    )
    hashed = authn.browser_hash(browser_secret) or ""
    in_response_to = root.get("InResponseTo") or ""
    known = hashed and _ID.fullmatch(in_response_to)
    request = store.outstanding_request(in_response_to, hashed, "logout") if known else None
    if request is None:
        raise _refused(
            "This logout response answers no sign-out of this browser, or one already "
            "answered or expired.",
            "unknown InResponseTo",
        )
    _check_common(config, root, "LogoutResponse", request.issuer or None)
    if store.take_request(in_response_to, hashed, "logout") is None:
        raise _refused("This logout response was used already.", "replayed LogoutResponse")
    status = root.find(f"{P}Status/{P}StatusCode")
    return status is not None and status.get("Value") == SUCCESS


def _check_times(root: Any, moment: datetime) -> datetime:
    """IssueInstant not in the future nor older than ``MESSAGE_SECONDS``; NotOnOrAfter
    (when present) not passed. Answers until when the request could pass."""
    skew = timedelta(seconds=CLOCK_SKEW_SECONDS)
    issued = _moment(root.get("IssueInstant"), "IssueInstant")
    until = _moment(root.get("NotOnOrAfter"), "NotOnOrAfter")
    if issued is None or issued - skew > moment:
        raise _refused("The logout request is not valid yet.", "IssueInstant")
    latest = issued + timedelta(seconds=MESSAGE_SECONDS)
    if until is not None:
        latest = min(latest, until)
    if moment - skew >= latest:
        raise _refused("The logout request has expired.", "expired LogoutRequest")
    return latest + skew


def _name_id(root: Any) -> str:
    found = root.findall(A + "NameID")
    if root.find(A + "EncryptedID") is not None or len(found) != 1:
        raise _refused("The logout request names nobody this registry can read.", "no NameID")
    if any(True for _ in found[0].iter(etree.Comment, etree.ProcessingInstruction)):
        raise _refused("The logout request has a comment inside a name.", "comment in NameID")
    name_id = response._text(found[0])
    if not name_id:
        raise _refused("The logout request names nobody.", "empty NameID")
    return name_id


def idp_logout(config: SamlConfig, query: Mapping[str, Any]) -> IdpLogout:
    """Check the IdP's LogoutRequest (see the module) and take the SAML records of the
    sessions it ends."""
    root = decode(_one(query, "SAMLRequest"))
    relay = _one(query, "RelayState")
    if relay is not None and len(relay) > MAX_RELAY:
        raise _refused("The logout message is malformed.", "RelayState too long", 400)
    check_signature(config, query, "SAMLRequest", True)
    name_id = _name_id(root) if root.tag == P + "LogoutRequest" else ""
    _check_common(config, root, "LogoutRequest", store.person_issuer(name_id))
    if root.get("Destination") is None:
        raise _refused("The logout request names no destination.", "no Destination")
    until = _check_times(root, now())
    if not store.first_use(root.get("ID"), until, kind="idp-logout"):
        raise _refused("This logout request was used already.", "replayed LogoutRequest")
    ended = store.take_sessions_of(name_id)
    try:
        location = authn.logout_response(config, root.get("ID"), relay)
    except SamlRefused as refusal:  # e.g. signing on but no private key: the sessions end
        log.warning("saml logout response not sent: %s", refusal.log_detail)
        location = None
    return IdpLogout(ended, location)
