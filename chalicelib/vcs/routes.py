"""HTTP routes of VCS connections: ``oauth-clients`` and ``oauth-tokens``."""

from __future__ import annotations

from types import ModuleType
from typing import TYPE_CHECKING, Annotated

from chalice import Blueprint, Response

from chalicelib.core.api.access import Bearer
from chalicelib.core.api.http import Ctx, route
from chalicelib.core.api.jsonapi import document, no_content
from chalicelib.core.api.openapi import PAGE, JsonApi
from chalicelib.vcs import service
from chalicelib.vcs.render import V2, render_client, render_token

if TYPE_CHECKING:
    from chalicelib.vcs.schemas import ClientAttributes, TokenAttributes

bp = Blueprint(__name__)


def body_models() -> ModuleType:
    """This file's body models, loaded on first use (``core.api.http.typed_body``)."""
    from chalicelib.vcs import schemas

    return schemas


ORG_CLIENTS = V2 + "/organizations/{organization_name}/oauth-clients"
CLIENT = V2 + "/oauth-clients/{client_id}"
CLIENT_TOKENS = V2 + "/oauth-clients/{client_id}/oauth-tokens"
TOKEN = V2 + "/oauth-tokens/{token_id}"
ClientBody = Annotated["ClientAttributes", JsonApi("oauth-clients")]


@route(bp, ORG_CLIENTS, auth=Bearer, methods=("GET",), query=PAGE)
def list_clients(ctx: Ctx, organization_name: str) -> Response:
    page = ctx.paginate(service.list_clients(ctx.user, organization_name))
    data = [render_client(ctx, c, service.client_tokens(c)) for c in page.items]
    return document(data, links=page.links, meta=page.meta)


@route(bp, ORG_CLIENTS, auth=Bearer, methods=("POST",))
def create_client(ctx: Ctx, organization_name: str, attrs: ClientBody) -> Response:
    client, tokens = service.create_client(ctx.user, organization_name, attrs)
    return document(render_client(ctx, client, tokens), status=201)


@route(bp, CLIENT, auth=Bearer, methods=("GET",))
def get_client(ctx: Ctx, client_id: str) -> Response:
    client = service.get_client(ctx.user, client_id)
    return document(render_client(ctx, client, service.client_tokens(client)))


@route(bp, CLIENT, auth=Bearer, methods=("PATCH",))
def update_client(ctx: Ctx, client_id: str, attrs: ClientBody) -> Response:
    client = service.update_client(ctx.user, client_id, attrs)
    return document(render_client(ctx, client, service.client_tokens(client)))


@route(bp, CLIENT, auth=Bearer, methods=("DELETE",))
def delete_client(ctx: Ctx, client_id: str) -> Response:
    service.delete_client(ctx.user, client_id)
    return no_content()


@route(bp, CLIENT_TOKENS, auth=Bearer, methods=("GET",), query=PAGE)
def list_tokens(ctx: Ctx, client_id: str) -> Response:
    page = ctx.paginate(service.list_client_tokens(ctx.user, client_id))
    return document([render_token(t) for t in page.items], links=page.links, meta=page.meta)


@route(bp, TOKEN, auth=Bearer, methods=("GET",))
def get_token(ctx: Ctx, token_id: str) -> Response:
    return document(render_token(service.get_token(ctx.user, token_id)))


@route(bp, TOKEN, auth=Bearer, methods=("PATCH",))
def update_token(
    ctx: Ctx, token_id: str, attrs: Annotated[TokenAttributes, JsonApi("oauth-tokens")]
) -> Response:
    return document(render_token(service.update_token(ctx.user, token_id, attrs)))


@route(bp, TOKEN, auth=Bearer, methods=("DELETE",))
def delete_token(ctx: Ctx, token_id: str) -> Response:
    service.delete_token(ctx.user, token_id)
    return no_content()
