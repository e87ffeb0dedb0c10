"""The SP metadata document an identity provider imports (``GET /users/saml/metadata``):
the entity id (the metadata URL itself), the single logout service with the HTTP-Redirect
binding, the ACS with the HTTP-POST binding, the NameID
formats accepted, whether AuthnRequests are signed and assertions wanted signed, and the SP
certificate when one is set. Built as text (no XML library on this path)."""

from __future__ import annotations

import re
from xml.sax.saxutils import escape, quoteattr

from chalicelib.saml.config import SamlConfig

POST_BINDING = "urn:oasis:names:tc:SAML:2.0:bindings:HTTP-POST"
REDIRECT_BINDING = "urn:oasis:names:tc:SAML:2.0:bindings:HTTP-Redirect"
NAMEID_FORMATS = (
    "urn:oasis:names:tc:SAML:1.1:nameid-format:emailAddress",
    "urn:oasis:names:tc:SAML:1.1:nameid-format:unspecified",
    "urn:oasis:names:tc:SAML:2.0:nameid-format:persistent",
)
_PEM_BODY = re.compile(r"-----BEGIN CERTIFICATE-----(.*?)-----END CERTIFICATE-----", re.S)


def certificate_body(pem: str) -> str:
    """The base64 of a PEM certificate (what ``ds:X509Certificate`` holds); text that is not
    PEM is taken as the base64 itself."""
    found = _PEM_BODY.search(pem)
    return "".join((found.group(1) if found else pem).split())


def sp_metadata(config: SamlConfig) -> str:
    flag = lambda name: "true" if config.values.get(name) else "false"  # noqa: E731
    key = ""
    if config.text("certificate"):
        cert = escape(certificate_body(config.text("certificate")))
        key = (
            '<md:KeyDescriptor use="signing"><ds:KeyInfo><ds:X509Data><ds:X509Certificate>'
            f"{cert}</ds:X509Certificate></ds:X509Data></ds:KeyInfo></md:KeyDescriptor>"
        )
    formats = "".join(f"<md:NameIDFormat>{f}</md:NameIDFormat>" for f in NAMEID_FORMATS)
    return (
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        '<md:EntityDescriptor xmlns:md="urn:oasis:names:tc:SAML:2.0:metadata" '
        'xmlns:ds="http://www.w3.org/2000/09/xmldsig#" '
        f"entityID={quoteattr(config.entity_id)}>"
        f'<md:SPSSODescriptor AuthnRequestsSigned="{flag("authn-requests-signed")}" '
        f'WantAssertionsSigned="{flag("want-assertions-signed")}" '
        'protocolSupportEnumeration="urn:oasis:names:tc:SAML:2.0:protocol">'
        f"{key}"
        f'<md:SingleLogoutService Binding="{REDIRECT_BINDING}" '
        f"Location={quoteattr(config.slo_url)}/>"
        f"{formats}"
        f'<md:AssertionConsumerService Binding="{POST_BINDING}" '
        f'Location={quoteattr(config.acs_url)} index="0" isDefault="true"/>'
        "</md:SPSSODescriptor></md:EntityDescriptor>\n"
    )
