"""A refused sign-in: what went wrong (for the person) and what to tell the administrator.

Raised anywhere in the room; the ACS answers it with a 4xx page and logs ``log_detail``
(never the Response, a key or a certificate)."""

from __future__ import annotations

ADMIN_SETUP = "Ask your administrator to check the SAML settings of this registry and of the identity provider."  # noqa: E501


class SamlRefused(Exception):
    """A Response or request this site will not sign anyone in with."""

    def __init__(
        self, message: str, advice: str = ADMIN_SETUP, status: int = 403, log_detail: str = ""
    ) -> None:
        super().__init__(message)
        self.message = message
        self.advice = advice
        self.status = status
        self.log_detail = log_detail or message
