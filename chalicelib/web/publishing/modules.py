"""A module's publishing pages: ``/app/<org>/registry/publish`` (a new module: name,
provider, no-code) and ``…/publish/<registry>/<namespace>/<name>/<provider>`` (its versions
with the actions the caller may take, a new version, retry, delete the provider).

The same services as the API: ``service.create_module`` (with the no-code maker, as
``POST /organizations/:org/registry-modules``), ``versions.create_version`` (a VCS branch
module's version comes from its repository, as the API's), ``publishing.retry`` (``POST
/registry-modules/:id/actions/retry``) and the API's delete with its cascade
(``modules.composed.delete``).
"""

from __future__ import annotations

from typing import Any

from chalice import Response

from chalicelib.artifacts.statuses import VersionStatus
from chalicelib.core.api.errors import Unprocessable
from chalicelib.core.api.openapi import Param, Reply
from chalicelib.modules import service, versions
from chalicelib.modules.service import ModuleRef
from chalicelib.modules.statuses import is_deprecated, is_revoked
from chalicelib.web.labels import status_label
from chalicelib.web.publishing.common import (
    MODULE,
    PUBLISH,
    bp,
    connections,
    module_url,
    publishable,
    publisher,
)
from chalicelib.web.view import SignedIn, WebCtx, page, posted, redirect

REFUSED = (Reply(303), Reply(422))


# ----- a new module -----------------------------------------------------------------------


def new_module_page(ctx: WebCtx, organization: str, status: int = 200, **extra: Any) -> Response:
    """The new-module page: the upload form, and the VCS form when the organization has a
    connection (``vcs.new_module_from_vcs`` takes it)."""
    principal, _ = publisher(ctx, organization)
    return ctx.render(
        "publishing/new_module.html",
        status,
        organization=organization,
        connections=connections(principal, organization),
        **extra,
    )


@page(bp, PUBLISH, auth=SignedIn)
def new_module(ctx: WebCtx, organization: str) -> Response:
    """The form that creates a module (owners and manage-modules teams; 404 for others)."""
    return new_module_page(ctx, organization)


@page(bp, PUBLISH, ("POST",), auth=SignedIn, form=True, success=REFUSED)
def create_module(ctx: WebCtx, organization: str) -> Response:
    """Create a private module; the browser goes on to its publishing page."""
    from chalicelib.modules.nocode import service as nocode  # this page's, not the cold start's

    form = posted(ctx)
    if isinstance(form, Response):
        return form
    principal, _ = publisher(ctx, organization)
    name, provider = form.get("name"), form.get("provider")
    no_code = form.get("no_code") == "on"
    try:
        module, _ = service.create_module(
            principal,
            organization,
            name=name,
            provider=provider,
            registry="private",
            namespace=None,
            no_code=no_code,
            no_code_module=nocode.for_new_module,
        )
    except Unprocessable as refused:
        wanted = {"name": name, "provider": provider, "no_code": no_code}
        return new_module_page(ctx, organization, 422, module_error=refused.detail, wanted=wanted)
    ref = ModuleRef(organization, "private", module.namespace, module.name, module.provider)
    return redirect(module_url(ref) + "?created=1")


# ----- a module's versions ----------------------------------------------------------------


def _ref(organization: str, registry_: str, namespace: str, name: str, provider: str) -> ModuleRef:
    return ModuleRef(organization, registry_, namespace, name, provider)


def _module_page(ctx: WebCtx, ref: ModuleRef, status: int = 200, **extra: Any) -> Response:
    module, rights = publishable(ctx, ref)
    stored = sorted(versions.list_versions(module), key=lambda v: v.order_key, reverse=True)
    rows = [
        {
            "version": v.version,
            "status": v.status,
            "label": status_label(v.status),
            "error": v.error,
            "deprecated": is_deprecated(v.deprecation),
            "revoked": is_revoked(v.revocation),
            "actions": versions.offered_actions(v, owner=rights.is_owner),
            "url": module_url(ref, v.version),
        }
        for v in stored
    ]
    repo = module.vcs_repo or {}
    return ctx.render(
        "publishing/module.html",
        status,
        module=module,
        ref=ref,
        url=module_url(ref),
        rows=rows,
        is_owner=rights.is_owner,
        # A tag-based VCS module's versions come from its tags: no version form.
        takes_versions=module.registry_name == "private" and (not repo or bool(repo.get("branch"))),
        vcs=bool(repo),
        retryable=any(v.status != VersionStatus.OK for v in stored),
        **extra,
    )


NOTICES = {
    "created": "The module is created: now create its first version.",
    "connected": "The module is created from its repository: its webhook is being registered "
    "at the VCS host and its versions are being fetched.",
    "retried": "The versions that are not ok are being ingested (or fetched) again.",
    "deleted": "The version is deleted.",
}


@page(bp, MODULE, auth=SignedIn, query=tuple(Param(k, "say what was just done") for k in NOTICES))
def module(
    ctx: WebCtx, organization: str, registry: str, namespace: str, name: str, provider: str
) -> Response:
    """A module's versions and what the caller may do with them."""
    notice = next((text for key, text in NOTICES.items() if ctx.query.get(key)), None)
    return _module_page(ctx, _ref(organization, registry, namespace, name, provider), notice=notice)


@page(bp, MODULE + "/versions", ("POST",), auth=SignedIn, form=True, success=REFUSED)
def create_version(
    ctx: WebCtx, organization: str, registry: str, namespace: str, name: str, provider: str
) -> Response:
    """A new version; the browser goes on to its page, where its archive is uploaded."""
    ref = _ref(organization, registry, namespace, name, provider)
    form = posted(ctx)
    if isinstance(form, Response):
        return form
    principal = ctx.principal_or_sign_in()  # the service checks the rights, as the API's
    # The composer (no-code modules' service, VCS publishing): the pages that delete or create.
    from chalicelib.modules.composed import version_from_vcs

    wanted = form.get("version")
    try:
        version, _ = versions.create_version(
            principal, ref, wanted, None, from_vcs=version_from_vcs
        )
    except Unprocessable as refused:
        return _module_page(ctx, ref, 422, version_error=refused.detail, wanted=wanted)
    return redirect(module_url(ref, version.version))


@page(bp, MODULE + "/retry", ("POST",), auth=SignedIn, form=True, success=REFUSED)
def retry(
    ctx: WebCtx, organization: str, registry: str, namespace: str, name: str, provider: str
) -> Response:
    """Ingest again the uploaded archives of the versions that are not ok (fetch them again
    for a VCS module), as ``POST /registry-modules/:id/actions/retry``."""
    from chalicelib.modules.publishing import service as publishing  # retry only

    ref = _ref(organization, registry, namespace, name, provider)
    form = posted(ctx)
    if isinstance(form, Response):
        return form
    module, _ = publishable(ctx, ref)
    try:
        publishing.retry(ctx.principal_or_sign_in(), module.id)
    except Unprocessable as refused:
        return _module_page(ctx, ref, 422, retry_error=refused.detail)
    return redirect(module_url(ref) + "?retried=1")


@page(bp, MODULE + "/delete", auth=SignedIn)
def confirm_delete(
    ctx: WebCtx, organization: str, registry: str, namespace: str, name: str, provider: str
) -> Response:
    """Delete this provider of the module? (owners; a page of its own)"""
    ref = _ref(organization, registry, namespace, name, provider)
    module, _ = publishable(ctx, ref, owner=True)
    return ctx.render(
        "publishing/confirm.html",
        title=f"Delete {module.name}/{module.provider}?",
        question=f"Delete the module {module.name}/{module.provider} and all "
        f"{len(module.statuses())} of its versions? Configurations that use it can no "
        "longer download it. This cannot be undone.",
        action=module_url(ref) + "/delete",
        button="Delete the module",
        cancel=module_url(ref),
        fields=(),
        danger=True,
    )


@page(bp, MODULE + "/delete", ("POST",), auth=SignedIn, form=True, success=REFUSED)
def delete_module(
    ctx: WebCtx, organization: str, registry: str, namespace: str, name: str, provider: str
) -> Response:
    """Delete this provider of the module, its versions and their archives."""
    ref = _ref(organization, registry, namespace, name, provider)
    form = posted(ctx)
    if isinstance(form, Response):
        return form
    publishable(ctx, ref, owner=True)
    principal = ctx.principal_or_sign_in()
    # The composer (no-code modules' service, VCS publishing): the pages that delete or create.
    from chalicelib.modules import composed

    parts = [ref.registry, ref.namespace, ref.name, ref.provider]
    composed.delete(principal, organization, parts)
    return redirect(f"/app/{organization}/registry/modules")
