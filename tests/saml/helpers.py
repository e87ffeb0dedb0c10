"""The test as a SAML identity provider: a throwaway key pair, the registry configured to trust
it, signed Responses and LogoutRequests, posted through the in-process browser."""

from __future__ import annotations

import base64
import html
import re
import zlib
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any
from urllib.parse import parse_qs, urlsplit

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from cryptography.x509.oid import NameOID
from lxml import etree
from signxml import XMLSigner

from tests.conftest import Api
from tests.support.web_browser import HOST, Browser

ADMIN = "/api/v2/admin/saml-settings"


ENTITY_ID = f"http://{HOST}/users/saml/metadata"


ACS = f"http://{HOST}/users/saml/auth"


IDP_SSO = "https://idp.example.com/sso"


P = "urn:oasis:names:tc:SAML:2.0:protocol"


A = "urn:oasis:names:tc:SAML:2.0:assertion"


EXC_C14N = "http://www.w3.org/2001/10/xml-exc-c14n#"


@dataclass(frozen=True)
class KeyPair:
    key: bytes
    cert: str


def key_pair(name: str = "idp.example.com") -> KeyPair:
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
    moment = datetime.now(UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(moment - timedelta(days=1))
        .not_valid_after(moment + timedelta(days=365))
        .sign(key, hashes.SHA256())
    )
    pem = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    return KeyPair(pem, cert.public_bytes(serialization.Encoding.PEM).decode())


IDP = key_pair()


OTHER = key_pair("evil.example.com")


def stamp(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass
class Claims:
    """What the test IdP asserts, and how it builds and signs the Response."""

    username: str = "jane"
    name_id: str = "jane@example.com"
    groups: list[str] = field(default_factory=list)
    extra: dict[str, list[str]] = field(default_factory=dict)
    audience: str = ENTITY_ID
    destination: str | None = ACS
    recipient: str = ACS
    in_response_to: str | None = None
    not_before: timedelta = timedelta(minutes=-1)
    not_on_or_after: timedelta = timedelta(minutes=5)
    status: str = "urn:oasis:names:tc:SAML:2.0:status:Success"
    assertion_id: str = field(default_factory=lambda: "_a" + base64.b16encode(rand()).decode())
    sign: str = "assertion"  # "assertion", "response", "both", "none"
    keys: KeyPair = IDP

    def assertion(self, moment: datetime) -> Any:
        reply = f' InResponseTo="{self.in_response_to}"' if self.in_response_to else ""
        attributes = {"Username": [self.username], "MemberOf": self.groups, **self.extra}
        statement = "".join(
            f'<saml:Attribute Name="{name}">'
            + "".join(f"<saml:AttributeValue>{v}</saml:AttributeValue>" for v in values)
            + "</saml:Attribute>"
            for name, values in attributes.items()
        )
        xml = (
            f'<saml:Assertion xmlns:saml="{A}" ID="{self.assertion_id}" Version="2.0" '
            f'IssueInstant="{stamp(moment)}"><saml:Issuer>https://idp.example.com</saml:Issuer>'
            "<saml:Subject><saml:NameID Format="
            f'"urn:oasis:names:tc:SAML:1.1:nameid-format:emailAddress">{self.name_id}'
            '</saml:NameID><saml:SubjectConfirmation Method="urn:oasis:names:tc:SAML:2.0:cm:'
            f'bearer"><saml:SubjectConfirmationData Recipient="{self.recipient}" '
            f'NotOnOrAfter="{stamp(moment + self.not_on_or_after)}"{reply}/>'
            "</saml:SubjectConfirmation></saml:Subject>"
            f'<saml:Conditions NotBefore="{stamp(moment + self.not_before)}" '
            f'NotOnOrAfter="{stamp(moment + self.not_on_or_after)}"><saml:AudienceRestriction>'
            f"<saml:Audience>{self.audience}</saml:Audience></saml:AudienceRestriction>"
            f"</saml:Conditions><saml:AttributeStatement>{statement}</saml:AttributeStatement>"
            "</saml:Assertion>"
        )
        element = etree.fromstring(xml)
        if self.sign in ("assertion", "both"):
            element = signed(element, self.assertion_id, self.keys)
        return element

    def response(self, moment: datetime | None = None, assertions: int = 1) -> Any:
        moment = moment or datetime.now(UTC)
        reply = f' InResponseTo="{self.in_response_to}"' if self.in_response_to else ""
        destination = f' Destination="{self.destination}"' if self.destination else ""
        root = etree.fromstring(
            f'<samlp:Response xmlns:samlp="{P}" xmlns:saml="{A}" ID="_r{self.assertion_id}" '
            f'Version="2.0" IssueInstant="{stamp(moment)}"{destination}{reply}>'
            "<saml:Issuer>https://idp.example.com</saml:Issuer>"
            f'<samlp:Status><samlp:StatusCode Value="{self.status}"/></samlp:Status>'
            "</samlp:Response>"
        )
        for _ in range(assertions):
            root.append(self.assertion(moment))
        if self.sign in ("response", "both"):
            root = signed(root, f"_r{self.assertion_id}", self.keys)
        return root

    def posted(self, **kw: Any) -> str:
        return encode(self.response(**kw))


def rand() -> bytes:
    import os

    return os.urandom(10)


def signed(element: Any, reference: str, keys: KeyPair) -> Any:
    signer = XMLSigner(c14n_algorithm=EXC_C14N)
    return signer.sign(element, key=keys.key, cert=keys.cert, reference_uri=reference)


def encode(root: Any) -> str:
    return base64.b64encode(etree.tostring(root)).decode()


def configure(api: Api, **changes: Any) -> None:
    attributes = {
        "enabled": True,
        "idp-cert": IDP.cert,
        "sso-endpoint-url": IDP_SSO,
        "slo-endpoint-url": "https://idp.example.com/slo",
        "sso-api-token-session-timeout": 3600,
        **changes,
    }
    reply = api.patch(ADMIN, {"data": {"type": "saml-settings", "attributes": attributes}})
    assert reply.status == 200, reply.json


def post(browser: Browser, posted: str, relay: str = "") -> Any:
    form = {"SAMLResponse": posted}
    if relay:
        form["RelayState"] = relay
    # The IdP's page posts it: a cross-site form POST without the UI's CSRF token.
    return browser.post("/users/saml/auth", form, headers={"Sec-Fetch-Site": "cross-site"})


def single_logout_link(reply: Any) -> str:
    """The IdP single logout URL the sign-out page goes on to (a refresh and a link)."""
    assert reply.status_code == 200, reply.text
    links = re.findall(r'id="single-logout" href="([^"]+)"', reply.text)
    refresh = re.findall(r'http-equiv="refresh" content="0; url=([^"]+)"', reply.text)
    assert len(links) == 1 and refresh == links
    return html.unescape(links[0])


def logout_request(location: str) -> Any:
    assert location.startswith("https://idp.example.com/slo?"), location
    query = parse_qs(urlsplit(location).query)
    return etree.fromstring(zlib.decompress(base64.b64decode(query["SAMLRequest"][0]), -15))
