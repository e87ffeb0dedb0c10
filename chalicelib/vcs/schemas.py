"""Request bodies of VCS connections, in a module of their own: the routes name them by path
(``Body("chalicelib.vcs.schemas:...")``), so pydantic loads with the first request that sends
one, and the functions that only read connections (publishing, webhooks) never load it."""

from __future__ import annotations

from chalicelib.core.api.attributes import Attributes


class ClientAttributes(Attributes):
    name: str | None = None
    service_provider: str | None = None
    http_url: str | None = None
    api_url: str | None = None
    oauth_token_string: str | None = None
    private_key: str | None = None
    key: str | None = None
    secret: str | None = None
    rsa_public_key: str | None = None
    organization_scoped: bool | None = None


class TokenAttributes(Attributes):
    ssh_key: str | None = None
