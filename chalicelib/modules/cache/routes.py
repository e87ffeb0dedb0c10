"""The site admins' view of the module cache: what is cached (``GET /api/v2/admin/module-cache``)
and seeding a module's versions (``POST /api/v2/admin/module-cache/actions/seed``). Served by
the protocol's function, which holds the cache's table, objects and outbound fetches.
Site admins only (``SiteAdmin``: 404 for anyone else)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any
from urllib.parse import urlencode

from chalice import Blueprint, Response

from chalicelib.accounts.authorization import SiteAdmin
from chalicelib.core.api import pagination
from chalicelib.core.api.http import Ctx, route
from chalicelib.core.api.jsonapi import document, resource
from chalicelib.core.api.openapi import JsonApi, cursor_paging
from chalicelib.modules.cache import service

if TYPE_CHECKING:
    from types import ModuleType

    from chalicelib.modules.cache.schemas import Seed
    from chalicelib.modules.cache.store import CachedModel

bp = Blueprint(__name__)


def body_models() -> ModuleType:
    """This file's body models, loaded on first use (``core.api.http.typed_body``)."""
    from chalicelib.modules.cache import schemas

    return schemas


BASE = "/api/v2/admin/module-cache"
MAX_CURSOR = 2048


def _iso(value: Any) -> str | None:
    return value.isoformat().replace("+00:00", "Z") if value is not None else None


def render(item: CachedModel) -> dict[str, Any]:
    namespace, name, provider = item.address.split("/")
    attributes = {
        "namespace": namespace,
        "name": name,
        "provider": provider,
        "version": item.version,
        "sha256": item.sha256,
        "size": int(item.size or 0),
        "source-host": item.source_host,
        "fetched-at": _iso(item.fetched_at),
        "last-used-at": _iso(item.last_used),
        "conflict": item.conflict,
    }
    return resource("cached-module-versions", f"{item.address}/{item.version}", attributes)


def _cursor(key: Any) -> str | None:
    return pagination.cursor([key["address"]["S"], key["item"]["S"]]) if key else None


def _start(after: str | None) -> dict[str, Any] | None:
    if not after:
        return None
    address, item = pagination.cursor_parts(after, 2, MAX_CURSOR)
    return {"address": {"S": address}, "item": {"S": item}}


@route(
    bp,
    BASE,
    auth=SiteAdmin,
    tag="admin",
    query=cursor_paging("cached versions read", MAX_CURSOR),
)
def list_cached(ctx: Ctx) -> Response:
    """Every cached version: its module, digest, size, source host, when it was fetched,
    its last use and any conflict (the upstream changed it in place)."""
    size = ctx.page().size
    found, after = service.cached_page(size, _start(ctx.query.get("page[after]")))
    url = ctx.url(ctx.path)

    def link(cursor: str | None) -> str:
        query: dict[str, Any] = {"page[size]": size}
        if cursor:
            query["page[after]"] = cursor
        return f"{url}?{urlencode(query)}"

    next_cursor = _cursor(after)
    links = {
        "self": link(ctx.query.get("page[after]")),
        "next": link(next_cursor) if next_cursor else None,
    }
    return document([render(item) for item in found], links=links)


@route(bp, BASE + "/actions/seed", methods=("POST",), auth=SiteAdmin, tag="admin", success=200)
def seed(ctx: Ctx, attrs: Annotated[Seed, JsonApi("module-cache-seeds")]) -> Response:
    """Fetch now the versions of a module that a constraint allows (at most 10), into the
    cache: each version's outcome (cached, unchanged, conflict, failed, pending)."""
    outcomes = service.seed(
        ctx.user, attrs.namespace, attrs.name, attrs.provider, attrs.version_constraint
    )
    address = f"{attrs.namespace}/{attrs.name}/{attrs.provider}".lower()
    attributes = {
        "namespace": attrs.namespace.lower(),
        "name": attrs.name.lower(),
        "provider": attrs.provider.lower(),
        "version-constraint": attrs.version_constraint,
        "versions": [
            {"version": o.version, "outcome": o.outcome, "detail": o.detail} for o in outcomes
        ],
    }
    return document(resource("module-cache-seeds", address, attributes))
