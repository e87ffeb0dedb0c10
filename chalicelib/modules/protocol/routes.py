"""Routes of the module registry protocol (``modules.v1``) and the public-registry proxy.

Private: ``/api/registry/v1/modules/...`` with the organization name as namespace and the
same bearer tokens as the API. Public proxy (hosted edition only; 404 elsewhere):
``/api/registry/public/v1/modules/...``. Errors use the protocol's ``{"errors": [...]}``.
"""

from __future__ import annotations

import itertools
import json
import sys
from collections.abc import Callable, Iterator
from typing import Any
from urllib.parse import urlencode

from chalice import Blueprint, Response

from chalicelib.core.api.access import Bearer
from chalicelib.core.api.errors import NotFound, Unprocessable, registry_error_response
from chalicelib.core.api.http import Ctx, HandlerT, route
from chalicelib.core.api.openapi import Param, Reply
from chalicelib.core.api.pagination import int_param
from chalicelib.core.settings import get_settings
from chalicelib.modules.cache import detail as cache_detail
from chalicelib.modules.cache import service as cache
from chalicelib.modules.downloads import counter as downloads
from chalicelib.modules.protocol import service as protocol

bp = Blueprint(__name__)

BASE = "/api/registry/v1/modules"
PUBLIC = "/api/registry/public/v1/modules"
MODULE = BASE + "/{namespace}/{name}/{provider}"


# ----- the protocol's documents, for the OpenAPI document --------------------------------------

STRING = {"type": "string"}
MODULE_SUMMARY: dict[str, Any] = {
    "type": "object",
    "required": ["id", "namespace", "name", "provider", "version"],
    "properties": {
        name: STRING for name in ("id", "owner", "namespace", "name", "provider", "version")
    },
}
MODULE_LIST = {
    "type": "object",
    "required": ["meta", "modules"],
    "properties": {
        "meta": {
            "type": "object",
            "required": ["limit", "current_offset"],
            "properties": {
                "limit": {"type": "integer"},
                "current_offset": {"type": "integer"},
                "next_offset": {"type": "integer"},
                "prev_offset": {"type": "integer"},
                "next_url": STRING,
                "prev_url": STRING,
            },
        },
        "modules": {"type": "array", "items": MODULE_SUMMARY},
    },
}
MODULE_DETAIL = {
    **MODULE_SUMMARY,
    "required": [*MODULE_SUMMARY["required"], "root", "submodules", "versions"],
    "properties": {
        **MODULE_SUMMARY["properties"],
        "root": {"type": "object"},
        "submodules": {"type": "array", "items": {"type": "object"}},
        "examples": {"type": "array", "items": {"type": "object"}},
        "providers": {"type": "array", "items": STRING},
        "versions": {"type": "array", "items": STRING},
        "downloads": {"type": "integer", "description": "the module's downloads, every version"},
        "version_downloads": {"type": "integer", "description": "this version's downloads"},
    },
}
VERSIONS = {
    "type": "object",
    "required": ["modules"],
    "properties": {
        "modules": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["versions"],
                "properties": {
                    "source": STRING,
                    "versions": {
                        "type": "array",
                        "items": {
                            "type": "object",
                            "required": ["version"],
                            "properties": {"version": STRING},
                        },
                    },
                },
            },
        }
    },
}
PAGING = (
    Param("offset", "modules to skip", {"type": "integer", "minimum": 0}),
    Param(
        "limit",
        f"modules per page (at most {protocol.MAX_LIMIT})",
        {"type": "integer", "minimum": 0},
    ),
    Param("verified", "only modules verified by a registry operator (none here)"),
)
PROVIDER = Param("provider", "only modules for this provider")
NAMESPACE = Param("namespace", "only modules of this namespace (organization)")
PUBLIC_ERRORS = {502: "the public registry could not be reached or failed"}


def protocol_route(path: str, success: Reply, **kw: Any) -> Callable[[HandlerT], HandlerT]:
    return route(bp, path, auth=Bearer, render_error=registry_error_response, success=success, **kw)


def reply(body: dict[str, Any], status: int = 200) -> Response:
    return Response(
        body=json.dumps(body), status_code=status, headers={"Content-Type": "application/json"}
    )


def _count_param(ctx: Ctx, name: str, default: int) -> int:
    value = int_param(ctx.query, name, default)
    if value < 0:
        raise Unprocessable(f"{name} must not be negative", parameter=name)
    return value


def _filter(ctx: Ctx, name: str) -> str | None:
    """A filter query parameter; empty (``?namespace=``) is the same as not sent."""
    return ctx.query.get(name) or None


def _want(ctx: Ctx) -> int:
    """How many entries a page consumes (offset, limit and one more), to size the first
    read; bad values are ``paged_modules``'s to refuse, after the list's own checks."""
    try:
        offset = max(0, int(ctx.query.get("offset") or 0))
        limit = int(ctx.query.get("limit") or protocol.DEFAULT_LIMIT)
    except ValueError:
        return protocol.DEFAULT_LIMIT + 1
    return offset + min(protocol.MAX_LIMIT, max(1, limit)) + 1


def paged_modules(
    ctx: Ctx, modules: Iterator[dict[str, Any]], *, missing: str | None = None
) -> Response:
    """offset/limit paging with the protocol's meta (next_* / prev_* only when they exist).
    ``modules`` is consumed only as far as the page and one more (whether there is a next
    page); ``missing``: the 404 message when the list is empty."""
    offset = _count_param(ctx, "offset", 0)
    limit = min(protocol.MAX_LIMIT, max(1, _count_param(ctx, "limit", protocol.DEFAULT_LIMIT)))
    # Nothing here is verified by a registry operator: ``verified=true`` lists nothing (a
    # name's list still answers 404 when the name does not exist).
    verified = ctx.query.get("verified") == "true"
    if verified and missing is None:
        modules = iter(())
    # islice refuses a stop past sys.maxsize; no list is that long, so the cap changes nothing.
    consumed = 1 if verified else min(sys.maxsize, offset + limit + 1)
    window = list(itertools.islice(modules, consumed))
    if missing is not None and not window:
        raise NotFound(missing)
    if verified:
        window = []
    meta: dict[str, Any] = {"limit": limit, "current_offset": offset}

    def url(at: int) -> str:
        params = {k: v for k, v in ctx.query.items() if k != "offset"}
        params["limit"] = str(limit)
        if at:
            params["offset"] = str(at)
        return f"{ctx.path}?{urlencode(params)}"

    if offset + limit < len(window):
        meta["next_offset"] = offset + limit
        meta["next_url"] = url(offset + limit)
    if offset > 0:
        meta["prev_offset"] = max(0, offset - limit)
        meta["prev_url"] = url(max(0, offset - limit))
    return reply({"meta": meta, "modules": window[offset : offset + limit]})


# ----- private registry ---------------------------------------------------------------------


@protocol_route(BASE, Reply(200, MODULE_LIST), query=(*PAGING, PROVIDER, NAMESPACE))
def list_all(ctx: Ctx):
    return paged_modules(
        ctx,
        protocol.listing(
            ctx.user,
            provider=_filter(ctx, "provider"),
            namespace=_filter(ctx, "namespace"),
            want=_want(ctx),
        ),
    )


@protocol_route(
    BASE + "/search",
    Reply(200, MODULE_LIST),
    query=(Param("q", "words of the name", required=True), *PAGING, PROVIDER, NAMESPACE),
)
def search(ctx: Ctx):
    query = ctx.query.get("q", "").strip()
    if not query:
        raise Unprocessable("q is required", parameter="q")
    found = protocol.listing(
        ctx.user,
        query=query,
        provider=_filter(ctx, "provider"),
        namespace=_filter(ctx, "namespace"),
        want=_want(ctx),
    )
    return paged_modules(ctx, found)


@protocol_route(BASE + "/{namespace}", Reply(200, MODULE_LIST), query=(*PAGING, PROVIDER))
def list_namespace(ctx: Ctx, namespace: str):
    found = protocol.listing(
        ctx.user, namespace=namespace, provider=_filter(ctx, "provider"), want=_want(ctx)
    )
    return paged_modules(ctx, found)


@protocol_route(BASE + "/{namespace}/{name}", Reply(200, MODULE_LIST), query=PAGING)
def latest_all_providers(ctx: Ctx, namespace: str, name: str):
    found = protocol.listing(ctx.user, namespace=namespace, name=name, want=_want(ctx))
    return paged_modules(ctx, found, missing=f"module {namespace}/{name} not found")


CACHE_ERRORS = {
    502: "a cached namespace's upstream registry or source host failed, or was refused",
    504: "a cached namespace's upstream did not answer in time (the fetch runs on: try again)",
}


@protocol_route(MODULE, Reply(200, MODULE_DETAIL), errors=CACHE_ERRORS)
def latest_for_provider(ctx: Ctx, namespace: str, name: str, provider: str):
    if cache.allows(namespace):
        return _cached_detail(namespace, name, provider, None)
    found = protocol.find_module(ctx.user, namespace, name, provider)
    return reply(protocol.detail(found, protocol.find_version(found, None)))


@protocol_route(MODULE + "/versions", Reply(200, VERSIONS), errors=CACHE_ERRORS)
def versions(ctx: Ctx, namespace: str, name: str, provider: str):
    if cache.allows(namespace):
        return _cached_versions(namespace, name, provider)
    found = protocol.find_module(ctx.user, namespace, name, provider)
    return reply(protocol.versions_document(found))


def _cached_versions(namespace: str, name: str, provider: str) -> Response:
    """An allowed upstream namespace's versions (``modules.cache``); a stale list says so
    (a ``Warning`` header and ``meta.stale``)."""
    found = cache.versions(namespace, name, provider)
    body: dict[str, Any] = {
        "modules": [
            {
                "source": f"{namespace}/{name}/{provider}",
                "versions": [{"version": v} for v in found.versions],
            }
        ]
    }
    return _maybe_stale(body, found.stale)


def _cached_detail(namespace: str, name: str, provider: str, version: str | None) -> Response:
    """A version's detail (``None``: the latest) of an allowed upstream namespace's module;
    stale as the versions list is."""
    found = cache_detail.detail(namespace, name, provider, version)
    body = protocol.cached_detail(
        namespace, name, provider, found.version, found.versions, found.metadata
    )
    return _maybe_stale(body, found.stale)


def _maybe_stale(body: dict[str, Any], stale: bool) -> Response:
    """``body``, said to be stale when it is (a ``Warning`` header and ``meta.stale``)."""
    if not stale:
        return reply(body)
    response = reply({**body, "meta": {"stale": True}})
    response.headers["Warning"] = '110 - "the upstream registry could not be reached"'
    return response


@protocol_route(
    MODULE + "/download",
    Reply(302, headers={"Location": "the latest version's download URL"}),
    errors=CACHE_ERRORS,
)
def download_latest(ctx: Ctx, namespace: str, name: str, provider: str):
    if cache.allows(namespace):
        latest = cache_detail.latest(namespace, name, provider)
    else:
        found = protocol.find_module(ctx.user, namespace, name, provider)
        latest = protocol.find_version(found, None).version
    location = ctx.url(f"{BASE}/{namespace}/{name}/{provider}/{latest}/download")
    return Response(body="", status_code=302, headers={"Location": location})


@protocol_route(MODULE + "/{version}", Reply(200, MODULE_DETAIL), errors=CACHE_ERRORS)
def one_version(ctx: Ctx, namespace: str, name: str, provider: str, version: str):
    if cache.allows(namespace):
        return _cached_detail(namespace, name, provider, version)
    found = protocol.find_module(ctx.user, namespace, name, provider)
    return reply(protocol.detail(found, protocol.find_version(found, version)))


@protocol_route(
    MODULE + "/{version}/download",
    Reply(204, headers={"X-Terraform-Get": "a short-lived presigned URL of the archive"}),
    errors=CACHE_ERRORS,
)
def download(ctx: Ctx, namespace: str, name: str, provider: str, version: str):
    if cache.allows(namespace):
        location = cache.download_url(namespace, name, provider, version)
        return Response(body="", status_code=204, headers={"X-Terraform-Get": location})
    found = protocol.find_module(ctx.user, namespace, name, provider)
    location = protocol.download_url(found, version)
    # Counted here only: the latest's /download redirects to this route.
    downloads.count(found.module.id, version, ctx.user)
    return Response(body="", status_code=204, headers={"X-Terraform-Get": location})


# ----- public registry proxy (hosted edition) -----------------------------------------------


def _proxied(answer: Any) -> Response:
    from chalicelib.modules.protocol import public

    public.decode(answer)  # 404 / 502 as protocol errors
    return Response(
        body=answer.body,
        status_code=200,
        headers={"Content-Type": "application/json", "X-Cache": "hit" if answer.cached else "miss"},
    )


def _require_hosted() -> None:
    if not get_settings().hosted:
        raise NotFound("the public registry proxy is only available on the hosted edition")


@protocol_route(
    PUBLIC + "/{namespace}/{name}/{provider}/versions", Reply(200, VERSIONS), errors=PUBLIC_ERRORS
)
def public_versions(ctx: Ctx, namespace: str, name: str, provider: str):
    _require_hosted()
    from chalicelib.modules.protocol import public

    return _proxied(public.versions(namespace, name, provider))


@protocol_route(
    PUBLIC + "/{namespace}/{name}/{provider}", Reply(200, MODULE_DETAIL), errors=PUBLIC_ERRORS
)
def public_latest(ctx: Ctx, namespace: str, name: str, provider: str):
    _require_hosted()
    from chalicelib.modules.protocol import public

    return _proxied(public.latest(namespace, name, provider))


@protocol_route(
    PUBLIC + "/{namespace}/{name}/{provider}/{version}",
    Reply(200, MODULE_DETAIL),
    errors=PUBLIC_ERRORS,
)
def public_version(ctx: Ctx, namespace: str, name: str, provider: str, version: str):
    _require_hosted()
    from chalicelib.modules.protocol import public

    return _proxied(public.version(namespace, name, provider, version))
