"""HTTP routes of VCS connections: ``oauth-clients`` and ``oauth-tokens``."""

from __future__ import annotations

from typing import Any

from chalice import Blueprint, Response

from chalicelib.core.http import Ctx, route
from chalicelib.core.ids import iso
from chalicelib.core.jsonapi import document, no_content, parse_attributes, resource, to_one
from chalicelib.vcs import service
from chalicelib.vcs.store import OAuthClientModel, OAuthTokenModel

bp = Blueprint(__name__)

V2 = "/api/v2"
ORG_CLIENTS = V2 + "/organizations/{organization_name}/oauth-clients"
CLIENT = V2 + "/oauth-clients/{client_id}"
CLIENT_TOKENS = V2 + "/oauth-clients/{client_id}/oauth-tokens"
TOKEN = V2 + "/oauth-tokens/{token_id}"


def render_client(
    ctx: Ctx, client: OAuthClientModel, tokens: list[OAuthTokenModel]
) -> dict[str, Any]:
    display, _, _ = service.PROVIDERS.get(client.service_provider, (client.service_provider,) * 3)
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
            "oauth-tokens": {
                "data": [{"id": t.id, "type": "oauth-tokens"} for t in tokens],
                "links": {"related": f"{V2}/oauth-clients/{client.id}/oauth-tokens"},
            },
        },
        links={"self": f"{V2}/oauth-clients/{client.id}"},
    )


def render_token(token: OAuthTokenModel) -> dict[str, Any]:
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


@route(bp, ORG_CLIENTS, methods=("GET",))
def list_clients(ctx: Ctx, organization_name: str) -> Response:
    page = ctx.paginate(service.list_clients(ctx.user, organization_name))
    data = [render_client(ctx, c, service.client_tokens(c)) for c in page.items]
    return document(data, links=page.links, meta=page.meta)


@route(bp, ORG_CLIENTS, methods=("POST",))
def create_client(ctx: Ctx, organization_name: str) -> Response:
    attrs = parse_attributes(ctx.json(), service.ClientAttributes, type_="oauth-clients")
    client, tokens = service.create_client(ctx.user, organization_name, attrs)
    return document(render_client(ctx, client, tokens), status=201)


@route(bp, CLIENT, methods=("GET",))
def get_client(ctx: Ctx, client_id: str) -> Response:
    client = service.get_client(ctx.user, client_id)
    return document(render_client(ctx, client, service.client_tokens(client)))


@route(bp, CLIENT, methods=("PATCH",))
def update_client(ctx: Ctx, client_id: str) -> Response:
    attrs = parse_attributes(ctx.json(), service.ClientAttributes, type_="oauth-clients")
    client = service.update_client(ctx.user, client_id, attrs)
    return document(render_client(ctx, client, service.client_tokens(client)))


@route(bp, CLIENT, methods=("DELETE",))
def delete_client(ctx: Ctx, client_id: str) -> Response:
    service.delete_client(ctx.user, client_id)
    return no_content()


@route(bp, CLIENT_TOKENS, methods=("GET",))
def list_tokens(ctx: Ctx, client_id: str) -> Response:
    page = ctx.paginate(service.list_client_tokens(ctx.user, client_id))
    return document([render_token(t) for t in page.items], links=page.links, meta=page.meta)


@route(bp, TOKEN, methods=("GET",))
def get_token(ctx: Ctx, token_id: str) -> Response:
    return document(render_token(service.get_token(ctx.user, token_id)))


@route(bp, TOKEN, methods=("PATCH",))
def update_token(ctx: Ctx, token_id: str) -> Response:
    attrs = parse_attributes(ctx.json(), service.TokenAttributes, type_="oauth-tokens")
    return document(render_token(service.update_token(ctx.user, token_id, attrs)))


@route(bp, TOKEN, methods=("DELETE",))
def delete_token(ctx: Ctx, token_id: str) -> Response:
    service.delete_token(ctx.user, token_id)
    return no_content()
