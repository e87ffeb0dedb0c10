"""The SAML settings as the sign-in needs them, and this site's SP URLs.

The entity id (the AuthnRequest's Issuer, the Audience accepted) is the metadata URL, the
ACS the Destination/Recipient accepted and the SLO URL the Destination of logout messages,
all built from the request's base URL as ``admin.render.render_saml`` reports them (or
``REGISTRY_PUBLIC_URL``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

METADATA_PATH = "/users/saml/metadata"
ACS_PATH = "/users/saml/auth"
SLO_PATH = "/users/saml/slo"  # single logout (HTTP-Redirect): LogoutRequests and Responses
CLOCK_SKEW_SECONDS = 120
# The single logout query's bounds (``saml.logout`` checks them, with its own page; here so
# the route can declare them without loading the checks).
MAX_ENCODED = 16 * 1024  # characters of base64: a logout message is well under 4 KB
MAX_SIGNATURE = 2048  # characters of base64 (an RSA-8192 signature is 1368)
MAX_RELAY = 1024  # characters of RelayState echoed back (the binding says 80 bytes)


@dataclass(frozen=True)
class SamlConfig:
    values: dict[str, Any]
    entity_id: str
    acs_url: str

    @property
    def slo_url(self) -> str:
        """This site's single logout URL (the Destination an IdP's logout message names)."""
        return self.acs_url.removesuffix(ACS_PATH) + SLO_PATH

    @property
    def enabled(self) -> bool:
        return bool(self.values.get("enabled"))

    def text(self, name: str) -> str:
        value = self.values.get(name)
        return value.strip() if isinstance(value, str) else ""

    @property
    def idp_certificates(self) -> list[str]:
        """The certificates a Response may be signed by: ``idp-cert``, and ``old-idp-cert``
        while it is set (rotation)."""
        return [c for c in (self.text("idp-cert"), self.text("old-idp-cert")) if c]

    @property
    def session_seconds(self) -> int:
        return int(self.values.get("sso-api-token-session-timeout") or 1209600)


def _values() -> dict[str, Any]:
    """The stored settings over their defaults. ``admin.service`` is imported here, not at
    the top: the web function's cold start (every page) need not load it."""
    from chalicelib.admin import service as admin

    return admin.with_defaults(admin.saml(), admin.SAML_DEFAULTS)


def load(base_url: str) -> SamlConfig:
    values = _values()
    return SamlConfig(values, base_url + METADATA_PATH, base_url + ACS_PATH)


def enabled() -> bool:
    """Whether SAML sign-in is on (the sign-in page offers it)."""
    return bool(_values().get("enabled"))


def private_key() -> str | None:
    """The SP's private key (unsealed: one KMS Decrypt), for signing AuthnRequests."""
    from chalicelib.admin import service as admin

    return admin.saml_private_key()
