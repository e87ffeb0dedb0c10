"""Request bodies of VCS connections, in a module of their own: the functions that only read
connections (publishing, webhooks) never load them."""

from __future__ import annotations

from chalicelib.core.api.attributes import Attributes, Identifier, Key, Name, Secret, Url


class ClientAttributes(Attributes):
    name: Name | None = None
    service_provider: Identifier | None = None
    http_url: Url | None = None
    api_url: Url | None = None
    oauth_token_string: Secret | None = None
    private_key: Key | None = None
    key: Secret | None = None
    secret: Secret | None = None
    rsa_public_key: Key | None = None
    organization_scoped: bool | None = None


class TokenAttributes(Attributes):
    ssh_key: Key | None = None
