"""JSON:API resources of VCS connections: ``oauth-clients`` and ``oauth-tokens``.

Secret values (token strings, SSH keys, client secrets, private keys) are write-only: these
functions never read them, only whether an SSH key is set.
"""

from __future__ import annotations

from typing import Any

from chalicelib.core.api.http import Ctx
from chalicelib.core.api.jsonapi import resource, to_many, to_one
from chalicelib.core.data.ids import iso
from chalicelib.vcs import providers
from chalicelib.vcs.store import OAuthClientModel, OAuthTokenModel

V2 = "/api/v2"


def render_client(
    ctx: Ctx, client: OAuthClientModel, tokens: list[OAuthTokenModel]
) -> dict[str, Any]:
    """An ``oauth-clients`` resource, its tokens as a relationship. The display name comes
    from the provider table (a name the table does not know is shown as it is)."""
    provider = providers.find(client.service_provider)
    display = provider.display_name if provider else client.service_provider
    return resource(
        "oauth-clients",
        client.id,
        {
            "created-at": iso(client.created_at),
            "callback-url": ctx.url(f"/auth/{client.callback_id}/callback"),
            "connect-path": f"/auth/{client.callback_id}?organization_id={client.organization_id}",
            "service-provider": client.service_provider,
            "service-provider-display-name": display,
            "name": client.name,
            "http-url": client.http_url,
            "api-url": client.api_url,
            "key": client.key,
            # Write-only: present for client libraries, never filled in.
            "secret": None,
            "rsa-public-key": client.rsa_public_key,
            "organization-scoped": bool(client.organization_scoped),
        },
        relationships={
            "organization": to_one("organizations", client.organization),
            "oauth-tokens": to_many(
                "oauth-tokens",
                (t.id for t in tokens),
                links={"related": f"{V2}/oauth-clients/{client.id}/oauth-tokens"},
            ),
        },
        links={"self": f"{V2}/oauth-clients/{client.id}"},
    )


def render_token(token: OAuthTokenModel) -> dict[str, Any]:
    """An ``oauth-tokens`` resource: whether an SSH key is set, never the key or the token."""
    return resource(
        "oauth-tokens",
        token.id,
        {
            "uid": token.id,
            "created-at": iso(token.created_at),
            "has-ssh-key": token.ssh_key is not None,
            "service-provider-user": token.service_provider_user,
        },
        relationships={
            "oauth-client": {
                **to_one("oauth-clients", token.client_id),
                "links": {"related": f"{V2}/oauth-clients/{token.client_id}"},
            }
        },
        links={"self": f"{V2}/oauth-tokens/{token.id}"},
    )
