"""HTTP routes of the private provider registry (``/api/v2``): providers, their versions
and platforms, as TFE serves them. One handler per method; the rules are the service's."""

from __future__ import annotations

from types import ModuleType
from typing import TYPE_CHECKING, Annotated

from chalice import Blueprint, Response

from chalicelib.core import tagbindings
from chalicelib.core.api.access import Bearer
from chalicelib.core.api.errors import NotFound, Unprocessable
from chalicelib.core.api.http import Ctx, route
from chalicelib.core.api.jsonapi import document, no_content
from chalicelib.core.api.openapi import PAGE, JsonApi, Param, Reply
from chalicelib.providers import provenance, render, service, store
from chalicelib.providers.service import ProviderRef
from chalicelib.trust import provenance as trust_provenance

if TYPE_CHECKING:
    from chalicelib.providers.schemas import (
        CreatePlatform,
        CreateProvider,
        CreateVersion,
        UpdateProvider,
    )

bp = Blueprint(__name__)


def body_models() -> ModuleType:
    """This file's body models, loaded on first use (``core.api.http.typed_body``)."""
    from chalicelib.providers import schemas

    return schemas


ORG_PROVIDERS = "/api/v2/organizations/{organization_name}/registry-providers"
PROVIDER = ORG_PROVIDERS + "/{registry_name}/{namespace}/{name}"
VERSIONS = PROVIDER + "/versions"
VERSION = VERSIONS + "/{version}"
PLATFORMS = VERSION + "/platforms"
PLATFORM = PLATFORMS + "/{os}/{arch}"
INCLUDES = (render.VERSIONS,)
# A platform's data.type as TFE's docs send it, as TFE answers it, or none (go-tfe).
PLATFORM_TYPES = (render.PLATFORMS_IN_REQUESTS, render.PLATFORMS, None, "")


def check_type(body: object, accepted: tuple[str | None, ...]) -> None:
    data = body.get("data") if isinstance(body, dict) else None
    given = data.get("type") if isinstance(data, dict) else None
    if given not in accepted:
        names = " or ".join(repr(a) for a in accepted if a)
        raise Unprocessable(f"data.type must be {names}, not {given!r}", pointer="/data/type")


def _ref(organization_name: str, registry_name: str, namespace: str, name: str) -> ProviderRef:
    return ProviderRef(organization_name, registry_name, namespace, name)


# ----- providers ----------------------------------------------------------------------------


@route(
    bp,
    ORG_PROVIDERS,
    auth=Bearer,
    methods=("POST",),
)
def create_provider(
    ctx: Ctx,
    organization_name: str,
    attrs: Annotated[CreateProvider, JsonApi(render.PROVIDERS)],
):
    provider, rights = service.create_provider(
        ctx.user, organization_name, attrs.registry_name, attrs.namespace, attrs.name
    )
    return document(render.render_provider(provider, rights), status=201)


@route(
    bp,
    ORG_PROVIDERS,
    auth=Bearer,
    includes=INCLUDES,
    query=(
        *PAGE,
        Param("q", "a part of the provider's name or namespace"),
        Param("filter[registry_name]", "only providers of this registry (private, public)"),
        Param("filter[organization_name]", "only providers of this organization"),
    ),
)
def list_providers(ctx: Ctx, organization_name: str):
    query = ctx.query
    found, rights = service.list_providers(
        ctx.user, organization_name, query.get("filter[registry_name]") or None, query.get("q")
    )
    wanted = query.get("filter[organization_name]")
    if wanted and wanted != organization_name:
        found = []
    page = ctx.paginate(found)
    return document(
        [_provider(ctx, p, rights) for p in page.items], links=page.links, meta=page.meta
    )


def _provider(ctx: Ctx, provider: store.ProviderModel, rights: service.Rights) -> dict:
    """A provider, with its versions' ids when ``include=registry-provider-versions``."""
    versions = store.versions_of(provider.id) if ctx.include else None
    return render.render_provider(provider, rights, versions)


def _show(ctx: Ctx, provider: store.ProviderModel, rights: service.Rights):
    included = None
    if ctx.include:
        versions = store.versions_of(provider.id)
        included = [render.render_version(provider, v, rights) for v in versions]
        return document(render.render_provider(provider, rights, versions), included=included)
    return document(render.render_provider(provider, rights))


@route(bp, PROVIDER, auth=Bearer, includes=INCLUDES)
def show_provider(ctx: Ctx, organization_name: str, registry_name: str, namespace: str, name: str):
    ref = _ref(organization_name, registry_name, namespace, name)
    provider, rights = service.get_provider(ctx.user, ref)
    return _show(ctx, provider, rights)


@route(
    bp,
    PROVIDER,
    auth=Bearer,
    methods=("PATCH",),
)
def update_provider(
    ctx: Ctx,
    organization_name: str,
    registry_name: str,
    namespace: str,
    name: str,
    attrs: Annotated[UpdateProvider, JsonApi(render.PROVIDERS, type_check="lenient")],
):
    """Update a provider: ``relationships.tag-bindings`` replaces its tag bindings (``[]``
    clears them, leaving it out keeps them)."""
    # ``attrs`` change nothing: the wrapper checked the document's shape and type.
    bindings = tagbindings.from_relationship(ctx.json())
    ref = _ref(organization_name, registry_name, namespace, name)
    provider, rights = service.update_provider(ctx.user, ref, bindings)
    return document(render.render_provider(provider, rights))


@route(bp, PROVIDER, auth=Bearer, methods=("DELETE",))
def delete_provider(
    ctx: Ctx, organization_name: str, registry_name: str, namespace: str, name: str
):
    """Delete a provider with its versions, platforms and uploaded files."""
    service.delete_provider(ctx.user, _ref(organization_name, registry_name, namespace, name))
    return no_content()


@route(bp, "/api/v2/registry-providers/{provider_id}", auth=Bearer, includes=INCLUDES)
def provider_by_id(ctx: Ctx, provider_id: str):
    provider, rights = service.get_provider_by_id(ctx.user, provider_id)
    return _show(ctx, provider, rights)


@route(bp, "/api/v2/registry-providers/{provider_id}/tag-bindings", auth=Bearer)
def provider_tag_bindings(ctx: Ctx, provider_id: str):
    """List the tag bindings of a registry provider (by its id)."""
    provider, _ = service.get_provider_by_id(ctx.user, provider_id)
    return document(tagbindings.render(provider.tag_bindings or []))


# ----- versions -----------------------------------------------------------------------------


@route(
    bp,
    VERSIONS,
    auth=Bearer,
    methods=("POST",),
)
def create_version(
    ctx: Ctx,
    organization_name: str,
    registry_name: str,
    namespace: str,
    name: str,
    attrs: Annotated[CreateVersion, JsonApi(render.VERSIONS, type_check="lenient")],
):
    """Create a version; its links are the presigned uploads of SHA256SUMS and its
    signature."""
    ref = _ref(organization_name, registry_name, namespace, name)
    provider, version = service.create_version(
        ctx.user, ref, attrs.version, attrs.key_id, attrs.protocols
    )
    return document(render.render_version(provider, version, service.PUBLISHER, []), status=201)


@route(bp, VERSIONS, auth=Bearer, query=PAGE)
def list_versions(ctx: Ctx, organization_name: str, registry_name: str, namespace: str, name: str):
    ref = _ref(organization_name, registry_name, namespace, name)
    provider, versions, rights = service.list_versions(ctx.user, ref)
    page = ctx.paginate(versions)
    data = [render.render_version(provider, v, rights) for v in page.items]
    return document(data, links=page.links, meta=page.meta)


@route(bp, VERSION, auth=Bearer)
def show_version(
    ctx: Ctx, organization_name: str, registry_name: str, namespace: str, name: str, version: str
):
    ref = _ref(organization_name, registry_name, namespace, name)
    provider, found, rights = service.get_version(ctx.user, ref, version)
    platforms = store.platforms_of(found.id)
    return document(render.render_version(provider, found, rights, platforms))


@route(
    bp,
    VERSION + "/provenance",
    auth=Bearer,
    success=Reply(
        200,
        {"type": "object"},
        media_type=trust_provenance.MEDIA_TYPE,
        description="a DSSE envelope (in-toto)",
    ),
)
def version_provenance(
    ctx: Ctx, organization_name: str, registry_name: str, namespace: str, name: str, version: str
) -> Response:
    """A provider version's signed provenance (made when its SHA256SUMS signature verified)."""
    ref = _ref(organization_name, registry_name, namespace, name)
    provider, found, _ = service.get_version(ctx.user, ref, version)
    envelope = provenance.read(provider, found)
    if envelope is None:
        raise NotFound(
            f"the provenance of version {found.version} has not been made yet: it is made "
            "when its SHA256SUMS signature verifies"
        )
    return Response(
        body=envelope.decode(),
        status_code=200,
        headers={"Content-Type": trust_provenance.MEDIA_TYPE},
    )


@route(bp, VERSION, auth=Bearer, methods=("DELETE",))
def delete_version(
    ctx: Ctx, organization_name: str, registry_name: str, namespace: str, name: str, version: str
):
    """Delete a version with its platforms and uploaded files."""
    ref = _ref(organization_name, registry_name, namespace, name)
    service.delete_version(ctx.user, ref, version)
    return no_content()


# ----- platforms ----------------------------------------------------------------------------


@route(
    bp,
    PLATFORMS,
    auth=Bearer,
    methods=("POST",),
)
def create_platform(
    ctx: Ctx,
    organization_name: str,
    registry_name: str,
    namespace: str,
    name: str,
    version: str,
    attrs: Annotated[CreatePlatform, JsonApi(render.PLATFORMS_IN_REQUESTS, type_check="off")],
):
    """Create a platform of a version (``data.type``: ``registry-provider-version-platforms``
    as TFE's docs send it, or ``registry-provider-platforms``); its link is the presigned
    upload of the binary archive."""
    check_type(ctx.json(), PLATFORM_TYPES)
    ref = _ref(organization_name, registry_name, namespace, name)
    provider, found, platform = service.create_platform(
        ctx.user, ref, version, attrs.os, attrs.arch, attrs.shasum, attrs.filename
    )
    document_ = render.render_platform(provider, found, platform, service.PUBLISHER)
    return document(document_, status=201)


@route(bp, PLATFORMS, auth=Bearer, query=PAGE)
def list_platforms(
    ctx: Ctx, organization_name: str, registry_name: str, namespace: str, name: str, version: str
):
    ref = _ref(organization_name, registry_name, namespace, name)
    provider, found, platforms, rights = service.list_platforms(ctx.user, ref, version)
    page = ctx.paginate(platforms)
    data = [render.render_platform(provider, found, p, rights) for p in page.items]
    return document(data, links=page.links, meta=page.meta)


@route(bp, PLATFORM, auth=Bearer)
def show_platform(
    ctx: Ctx,
    organization_name: str,
    registry_name: str,
    namespace: str,
    name: str,
    version: str,
    os: str,
    arch: str,
):
    ref = _ref(organization_name, registry_name, namespace, name)
    provider, found, platform, rights = service.get_platform(ctx.user, ref, version, os, arch)
    return document(render.render_platform(provider, found, platform, rights))


RETRY_ERRORS = {
    409: "the platform is verified: nothing to retry",
    422: "no archive uploaded to check, or its version lacks SHA256SUMS or its signature",
}


@route(
    bp,
    PLATFORM + "/actions/retry",
    auth=Bearer,
    methods=("POST",),
    success=200,
    errors=RETRY_ERRORS,
)
def retry_platform(
    ctx: Ctx,
    organization_name: str,
    registry_name: str,
    namespace: str,
    name: str,
    version: str,
    os: str,
    arch: str,
):
    """Check the platform's uploaded archive again (publishers): its upload's S3 event is
    queued again, with its version's while that is not verified. 409 when the platform is
    verified, 422 when there is no upload to check."""
    ref = _ref(organization_name, registry_name, namespace, name)
    provider, found, platform, rights = service.retry_platform(ctx.user, ref, version, os, arch)
    return document(render.render_platform(provider, found, platform, rights))


@route(bp, PLATFORM, auth=Bearer, methods=("DELETE",))
def delete_platform(
    ctx: Ctx,
    organization_name: str,
    registry_name: str,
    namespace: str,
    name: str,
    version: str,
    os: str,
    arch: str,
):
    """Delete a platform and its uploaded binary."""
    ref = _ref(organization_name, registry_name, namespace, name)
    service.delete_platform(ctx.user, ref, version, os, arch)
    return no_content()
