"""GPG keys of the private registry at ``/api/registry/private/v2/gpg-keys``: under
``/api/registry/`` but JSON:API, as TFE serves them (go-tfe's ``gpg_key.go``)."""

from __future__ import annotations

from types import ModuleType
from typing import TYPE_CHECKING, Annotated, Any

from chalice import Blueprint

from chalicelib.core.api.access import Bearer
from chalicelib.core.api.http import Ctx, route
from chalicelib.core.api.jsonapi import document, no_content
from chalicelib.core.api.openapi import PAGE, JsonApi, Param
from chalicelib.providers import gpgkeys, render

if TYPE_CHECKING:
    from chalicelib.providers.schemas import CreateGpgKey, UpdateGpgKey

bp = Blueprint(__name__)


def body_models() -> ModuleType:
    """This file's body models, loaded on first use (``core.api.http.typed_body``)."""
    from chalicelib.providers import schemas

    return schemas


KEYS = "/api/registry/private/v2/gpg-keys"
KEY = KEYS + "/{namespace}/{key_id}"


def _namespaces(ctx: Ctx) -> list[str]:
    """``filter[namespace]``: repeated (go-tfe) or comma-separated, empty names dropped."""
    params: Any = ctx.request.query_params or {}
    getlist = getattr(params, "getlist", None)
    if "filter[namespace]" not in params:
        return []
    values = getlist("filter[namespace]") if getlist else [params["filter[namespace]"]]
    return [name.strip() for value in values for name in value.split(",") if name.strip()]


@route(
    bp,
    KEYS,
    auth=Bearer,
    query=(*PAGE, Param("filter[namespace]", "organization names (required)", required=True)),
    tag="providers",
)
def list_gpg_keys(ctx: Ctx):
    page = ctx.paginate(gpgkeys.list_keys(ctx.user, _namespaces(ctx)))
    data = [render.render_gpg_key(k) for k in page.items]
    return document(data, links=page.links, meta=page.meta)


@route(
    bp,
    KEYS,
    auth=Bearer,
    methods=("POST",),
    tag="providers",
)
def create_gpg_key(
    ctx: Ctx, attrs: Annotated[CreateGpgKey, JsonApi(render.GPG_KEYS, type_check="lenient")]
):
    """Add a public key (RSA or DSA) to a namespace, to sign its providers' versions."""
    key = gpgkeys.create_key(ctx.user, attrs.namespace, attrs.ascii_armor)
    return document(render.render_gpg_key(key), status=201)


@route(bp, KEY, auth=Bearer, tag="providers")
def show_gpg_key(ctx: Ctx, namespace: str, key_id: str):
    return document(render.render_gpg_key(gpgkeys.get_key(ctx.user, namespace, key_id)))


@route(
    bp,
    KEY,
    auth=Bearer,
    methods=("PATCH",),
    tag="providers",
)
def update_gpg_key(
    ctx: Ctx,
    namespace: str,
    key_id: str,
    attrs: Annotated[UpdateGpgKey, JsonApi(render.GPG_KEYS, type_check="lenient")],
):
    """Move a key to another namespace the caller publishes in."""
    key = gpgkeys.update_key(ctx.user, namespace, key_id, attrs.namespace)
    return document(render.render_gpg_key(key))


@route(bp, KEY, auth=Bearer, methods=("DELETE",), tag="providers")
def delete_gpg_key(ctx: Ctx, namespace: str, key_id: str):
    gpgkeys.delete_key(ctx.user, namespace, key_id)
    return no_content()
