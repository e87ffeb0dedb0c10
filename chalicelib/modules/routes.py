"""HTTP routes of the registry-modules API (``/api/v2``), both path families.

Path parameters at the same depth share one name across routes (API Gateway requires it),
hence ``module_ref`` for "organization name or module id" under ``/registry-modules``.
Empty path segments (``//``, a trailing ``/``) are dropped before dispatching deletes.
"""

from __future__ import annotations

from collections.abc import Sequence
from types import ModuleType
from typing import TYPE_CHECKING, Annotated, Any
from urllib.parse import urlencode

from chalice import Blueprint

from chalicelib.accounts.authorization import OrgAccess
from chalicelib.core import tagbindings
from chalicelib.core.api.access import Bearer
from chalicelib.core.api.errors import NotFound, Unprocessable
from chalicelib.core.api.http import Ctx, route
from chalicelib.core.api.jsonapi import document, no_content
from chalicelib.core.api.openapi import PAGE, JsonApi, Param, cursor_paging
from chalicelib.core.api.pagination import int_param
from chalicelib.modules import composed, service, versions
from chalicelib.modules.composed import version_from_vcs
from chalicelib.modules.downloads import bounds, campaign
from chalicelib.modules.downloads import service as downloads
from chalicelib.modules.downloads.render import (
    render_consumer,
    render_module_campaign,
    render_report,
)
from chalicelib.modules.nocode import service as nocode
from chalicelib.modules.nocode.render import render_no_code_module
from chalicelib.modules.paths import MODULE, ORG_MODULES
from chalicelib.modules.render import (
    MODULE_INCLUDES,
    module_includers,
    render_deprecation_included,
    render_module,
    render_version,
)
from chalicelib.modules.service import ModuleRef
from chalicelib.modules.store import ModuleModel

if TYPE_CHECKING:
    from chalicelib.modules.schemas import (
        CreateModule,
        CreateVersion,
        ReleaseVersion,
        UpdateModule,
        UpdateVersion,
    )

bp = Blueprint(__name__)


def body_models() -> ModuleType:
    """This file's body models, loaded on first use (``core.api.http.typed_body``)."""
    from chalicelib.modules import schemas

    return schemas


def _no_code_modules(modules: Sequence[ModuleModel]) -> list[dict[str, Any]]:
    """``include=no-code-modules``: the modules' no-code modules (the sub-room's loader)."""
    return [render_no_code_module(item) for item in nocode.of_modules(modules)]


INCLUDERS = module_includers(_no_code_modules)


# ----- modules ------------------------------------------------------------------------------


@route(
    bp,
    ORG_MODULES,
    auth=Bearer,
    methods=("POST",),
)
def create_module(
    ctx: Ctx,
    organization_name: str,
    attrs: Annotated[CreateModule, JsonApi("registry-modules")],
):
    module, rights = service.create_module(
        ctx.user,
        organization_name,
        name=attrs.name,
        provider=attrs.provider,
        registry=attrs.registry_name,
        namespace=attrs.namespace,
        no_code=attrs.no_code,
        no_code_module=nocode.for_new_module,
    )
    return document(render_module(module, rights, ctx.base_url), status=201)


@route(
    bp,
    ORG_MODULES,
    auth=Bearer,
    methods=("GET",),
    includes=MODULE_INCLUDES,
    query=(
        *PAGE,
        Param("q", "a part of the module's name"),
        *(
            Param(f"filter[{field}]", f"only modules with this {field.replace('_', ' ')}")
            for field in ("registry_name", "provider", "organization_name")
        ),
    ),
)
def list_modules(ctx: Ctx, organization_name: str):
    query = ctx.query
    filters = {
        field: query[f"filter[{field}]"]
        for field in ("registry_name", "provider", "organization_name")
        if query.get(f"filter[{field}]")
    }
    found, total, rights = service.page_modules(
        ctx.user, organization_name, query.get("q"), filters, ctx.page()
    )
    page = ctx.paginate_read(found, total)
    return document(
        [render_module(m, rights, ctx.base_url) for m in page.items],
        links=page.links,
        meta=page.meta,
        included=ctx.included(page.items, INCLUDERS),
    )


def _show_module(ctx: Ctx, found: ModuleModel, rights: OrgAccess):
    included = ctx.included([found], INCLUDERS)
    return document(render_module(found, rights, ctx.base_url), included=included)


@route(bp, MODULE, auth=Bearer, methods=("GET",), includes=MODULE_INCLUDES)
def show_module(
    ctx: Ctx, organization_name: str, registry_name: str, namespace: str, name: str, provider: str
):
    ref = ModuleRef(organization_name, registry_name, namespace, name, provider)
    found, rights = service.get_module(ctx.user, ref)
    return _show_module(ctx, found, rights)


@route(
    bp,
    MODULE,
    auth=Bearer,
    methods=("PATCH",),
)
def update_module(
    ctx: Ctx,
    organization_name: str,
    registry_name: str,
    namespace: str,
    name: str,
    provider: str,
    attrs: Annotated[UpdateModule, JsonApi("registry-modules", type_check="lenient")],
):
    """Update a module (private, or a curated public one on the hosted edition).

    ``relationships.tag-bindings`` replaces its tag bindings (``[]`` clears them, leaving it
    out keeps them)."""
    ref = ModuleRef(organization_name, registry_name, namespace, name, provider)
    bindings = tagbindings.from_relationship(ctx.json())
    tests = attrs.test_config.tests_enabled if attrs.test_config else None
    plan = None
    repo = attrs.vcs_repo
    if repo is not None:
        from chalicelib.modules.publishing import service as publishing  # VCS changes only

        def plan(module: ModuleModel) -> service.ModuleChange:
            return publishing.plan_update(module, repo)

    found, rights = service.update_module(
        ctx.user, ref, no_code=attrs.no_code, tests_enabled=tests, plan=plan, tag_bindings=bindings
    )
    return document(render_module(found, rights, ctx.base_url))


@route(bp, MODULE, auth=Bearer, methods=("DELETE",))
def delete_module(
    ctx: Ctx, organization_name: str, registry_name: str, namespace: str, name: str, provider: str
):
    return _delete(ctx, organization_name, [registry_name, namespace, name, provider])


@route(
    bp,
    "/api/v2/registry-modules/show/{organization_name}/{name}/{provider}",
    auth=Bearer,
    includes=MODULE_INCLUDES,
)
def show_module_deprecated(ctx: Ctx, organization_name: str, name: str, provider: str):
    ref = ModuleRef(organization_name, "private", organization_name, name, provider)
    found, rights = service.get_module(ctx.user, ref)
    return _show_module(ctx, found, rights)


@route(bp, "/api/v2/registry-modules/{module_ref}", auth=Bearer, includes=MODULE_INCLUDES)
def module_by_id(ctx: Ctx, module_ref: str):
    found, rights = service.get_module_by_id(ctx.user, module_ref)
    return _show_module(ctx, found, rights)


@route(bp, "/api/v2/registry-modules/{module_ref}/tag-bindings", auth=Bearer)
def module_tag_bindings(ctx: Ctx, module_ref: str):
    """List the tag bindings of a registry module (by its id)."""
    found, _ = service.get_module_by_id(ctx.user, module_ref)
    return document(tagbindings.render(found.tag_bindings or []))


@route(
    bp,
    MODULE + "/downloads",
    auth=Bearer,
    query=(
        Param(
            "days",
            f"daily counts for the last N days (1 to {downloads.MAX_DAYS}, default "
            f"{downloads.DEFAULT_DAYS})",
            {"type": "integer", "minimum": 1, "maximum": downloads.MAX_DAYS},
        ),
    ),
)
def module_downloads(
    ctx: Ctx, organization_name: str, registry_name: str, namespace: str, name: str, provider: str
):
    """Downloads per version and who made them (owners and manage-modules teams; 404 else)."""
    days = int_param(ctx.query, "days", downloads.DEFAULT_DAYS)
    if not 1 <= days <= downloads.MAX_DAYS:
        raise Unprocessable(f"days must be between 1 and {downloads.MAX_DAYS}", parameter="days")
    ref = ModuleRef(organization_name, registry_name, namespace, name, provider)
    data, meta = render_report(downloads.report(ctx.user, ref, days))
    return document(data, meta=meta)


@route(
    bp,
    MODULE + "/consumers",
    auth=Bearer,
    query=(
        *PAGE,
        Param(
            "filter[status]",
            "only consumers on a version of these kinds, comma-separated: "
            + ", ".join(campaign.Standing),
            {"type": "string", "maxLength": 64},
        ),
    ),
)
def module_consumers(
    ctx: Ctx, organization_name: str, registry_name: str, namespace: str, name: str, provider: str
):
    """Each consumer and the version it downloaded last: deprecated, revoked, behind the
    latest servable version, or current (owners and manage-modules teams; 404 else)."""
    wanted = campaign.parse_statuses(ctx.query.get("filter[status]"))
    ref = ModuleRef(organization_name, registry_name, namespace, name, provider)
    found = campaign.module_campaign(ctx.user, ref)
    page = ctx.paginate(found.matching(wanted))
    names = downloads.consumer_names((c.kind, c.id) for c in page.items)
    meta = {**page.meta, "status-counts": found.counts(), "latest-version": found.latest}
    data = [render_consumer(found, consumer, names) for consumer in page.items]
    return document(data, links=page.links, meta=meta)


@route(
    bp,
    "/api/v2/organizations/{organization_name}/registry-module-campaigns",
    auth=Bearer,
    query=cursor_paging("modules", bounds.MAX_CURSOR),
)
def module_campaigns(ctx: Ctx, organization_name: str):
    """The organization's modules with consumers on deprecated or revoked versions, most
    urgent first (revoked, then the soonest revoke-at); owners and manage-modules teams."""
    size = ctx.page().size
    found, after = campaign.organization_campaigns(
        ctx.user, organization_name, size, ctx.query.get("page[after]")
    )
    url = ctx.url(ctx.path)

    def link(cursor: str | None) -> str:
        query: dict[str, Any] = {"page[size]": size}
        if cursor:
            query["page[after]"] = cursor
        return f"{url}?{urlencode(query)}"

    links = {"self": link(ctx.query.get("page[after]")), "next": link(after) if after else None}
    data = [render_module_campaign(entry, ctx.base_url) for entry in found]
    return document(data, links=links)


# ----- versions -----------------------------------------------------------------------------


VersionBody = Annotated["CreateVersion", JsonApi("registry-module-versions")]


def _create_version(ctx: Ctx, ref: ModuleRef, attrs: CreateVersion):
    version, upload = versions.create_version(
        ctx.user, ref, attrs.version, attrs.commit_sha, from_vcs=version_from_vcs
    )
    return document(render_version(version, upload), status=201)


def _list_versions(ctx: Ctx, found: ModuleModel, rights: OrgAccess):
    items, total = versions.page_versions(found, ctx.page())
    page = ctx.paginate_read(items, total)
    data = [render_version(v, versions.upload_url(v, rights)) for v in page.items]
    return document(data, links=page.links, meta=page.meta)


@route(bp, MODULE + "/versions", auth=Bearer, methods=("POST",))
def create_version(
    ctx: Ctx,
    organization_name: str,
    registry_name: str,
    namespace: str,
    name: str,
    provider: str,
    attrs: VersionBody,
):
    return _create_version(
        ctx, ModuleRef(organization_name, registry_name, namespace, name, provider), attrs
    )


@route(bp, MODULE + "/versions", auth=Bearer, methods=("GET",), query=PAGE)
def list_versions(
    ctx: Ctx, organization_name: str, registry_name: str, namespace: str, name: str, provider: str
):
    ref = ModuleRef(organization_name, registry_name, namespace, name, provider)
    found, rights = service.get_module(ctx.user, ref)
    return _list_versions(ctx, found, rights)


@route(
    bp,
    "/api/v2/registry-modules/{module_ref}/{name}/{provider}/versions",
    auth=Bearer,
    methods=("POST",),
)
def create_version_deprecated(
    ctx: Ctx, module_ref: str, name: str, provider: str, attrs: VersionBody
):
    ref = ModuleRef(module_ref, "private", module_ref, name, provider)
    return _create_version(ctx, ref, attrs)


@route(bp, "/api/v2/registry-modules/{module_ref}/versions", auth=Bearer, query=PAGE)
def versions_by_module_id(ctx: Ctx, module_ref: str):
    found, rights = service.get_module_by_id(ctx.user, module_ref)
    return _list_versions(ctx, found, rights)


@route(
    bp,
    MODULE + "/version",
    auth=Bearer,
    query=(Param("module_version", "the version, e.g. 1.2.0", required=True),),
)
def version_lookup(
    ctx: Ctx, organization_name: str, registry_name: str, namespace: str, name: str, provider: str
):
    wanted = ctx.query.get("module_version")
    if not wanted:
        raise Unprocessable(
            "the module_version query parameter is required", parameter="module_version"
        )
    ref = ModuleRef(organization_name, registry_name, namespace, name, provider)
    version, rights = versions.find_version(ctx.user, ref, wanted)
    return document(render_version(version, versions.upload_url(version, rights)))


# TFE documents ``module-versions``; its responses (and some clients) say
# ``registry-module-versions``: both are accepted.
VERSION_UPDATE_TYPES = ("module-versions", "registry-module-versions")


@route(
    bp,
    MODULE + "/{version}",
    auth=Bearer,
    methods=("PATCH",),
    summary="Deprecate, revoke, un-revoke or undeprecate a version",
)
def update_version(
    ctx: Ctx,
    organization_name: str,
    registry_name: str,
    namespace: str,
    name: str,
    provider: str,
    version: str,
    attrs: Annotated[UpdateVersion, JsonApi("module-versions", type_check="off")],
):
    given = ctx.json()["data"].get("type")
    if given not in VERSION_UPDATE_TYPES:
        raise Unprocessable(
            "data.type must be 'module-versions' (or 'registry-module-versions'), "
            f"not {repr(given)[:64]}",
            pointer="/data/type",
        )
    ref = ModuleRef(organization_name, registry_name, namespace, name, provider)
    deprecation = revocation = None
    if attrs.deprecation is not None:
        d = attrs.deprecation
        deprecation = versions.LifecycleChange(d.deprecated_status, d.reason, d.link, d.revoke_at)
    if attrs.revocation is not None:
        r = attrs.revocation
        revocation = versions.LifecycleChange(r.status, r.message, r.link)
    item, rights = versions.change_version_lifecycle(
        ctx.user, ref, version, deprecation=deprecation, revocation=revocation
    )
    return document(
        render_version(item, versions.upload_url(item, rights)),
        included=render_deprecation_included(item) or None,
    )


@route(
    bp,
    MODULE + "/versions/{version}/actions/release",
    auth=Bearer,
    methods=("POST",),
    success=200,
    summary="Release a quarantined version",
)
def release_version(
    ctx: Ctx,
    organization_name: str,
    registry_name: str,
    namespace: str,
    name: str,
    provider: str,
    version: str,
    attrs: Annotated[
        ReleaseVersion, JsonApi("registry-module-version-releases", type_check="lenient")
    ],
):
    """Serve a version the organization's publishing policy quarantined, with a written
    ``reason`` (owners and manage-modules teams): it becomes ``ok``, and its ``quarantine``
    records who released it, when and why. An action, not a PATCH of the version: it is no
    attribute a client sets, it is a decision with its own reason and record, and TFE's
    version PATCH (deprecation, revocation) stays as TFE's clients know it."""
    ref = ModuleRef(organization_name, registry_name, namespace, name, provider)
    item, rights = versions.release_version(ctx.user, ref, version, attrs.reason)
    return document(render_version(item, versions.upload_url(item, rights)))


# ----- deletes ------------------------------------------------------------------------------


def _delete(ctx: Ctx, organization: str, segments: list[str]):
    """Empty segments are dropped, as TFE does: terrasnek deletes a provider at
    ``.../<namespace>/<name>//<provider>`` and a name at ``.../<namespace>/<name>/``."""
    segments = [segment for segment in segments if segment]
    if len(segments) < 3:
        raise NotFound("module not found: the path needs registry, namespace and name")
    composed.delete(ctx.user, organization, segments)
    return no_content()


@route(bp, ORG_MODULES + "/{registry_name}/{namespace}/{name}", auth=Bearer, methods=("DELETE",))
def delete_name(ctx: Ctx, organization_name: str, registry_name: str, namespace: str, name: str):
    return _delete(ctx, organization_name, [registry_name, namespace, name])


@route(bp, MODULE + "/{version}", auth=Bearer, methods=("DELETE",))
def delete_version(
    ctx: Ctx,
    organization_name: str,
    registry_name: str,
    namespace: str,
    name: str,
    provider: str,
    version: str,
):
    return _delete(ctx, organization_name, [registry_name, namespace, name, provider, version])


@route(
    bp,
    MODULE + "/{version}/{after}",
    auth=Bearer,
    methods=("DELETE",),
    summary="Delete version (a path with an empty segment)",
)
def delete_version_after_an_empty_segment(
    ctx: Ctx,
    organization_name: str,
    registry_name: str,
    namespace: str,
    name: str,
    provider: str,
    version: str,
    after: str,
):
    """``.../<name>//<provider>/<version>`` (terrasnek) is one segment longer than any other
    registry path; with the empty one dropped it is the version delete."""
    segments = [registry_name, namespace, name, provider, version, after]
    if all(segments):
        raise NotFound("module not found: the path has one segment too many")
    return _delete(ctx, organization_name, segments)


DEPRECATED_DELETE = "/api/v2/registry-modules/actions/delete/{organization_name}/{name}"


@route(
    bp,
    DEPRECATED_DELETE,
    auth=Bearer,
    methods=("POST",),
    success=204,
    summary="Delete name deprecated",
)
def delete_name_deprecated(ctx: Ctx, organization_name: str, name: str):
    """Every module of that name in the organization: the private one and, on the hosted
    edition, curated public ones (go-tfe cleans public modules up this way)."""
    composed.delete_named(ctx.user, organization_name, name)
    return no_content()


@route(bp, DEPRECATED_DELETE + "/{provider}", auth=Bearer, methods=("POST",), success=204)
def delete_provider_deprecated(ctx: Ctx, organization_name: str, name: str, provider: str):
    return _delete(ctx, organization_name, ["private", organization_name, name, provider])


@route(bp, DEPRECATED_DELETE + "/{provider}/{version}", auth=Bearer, methods=("POST",), success=204)
def delete_version_deprecated(
    ctx: Ctx, organization_name: str, name: str, provider: str, version: str
):
    return _delete(ctx, organization_name, ["private", organization_name, name, provider, version])
