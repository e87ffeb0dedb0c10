"""The bundles' site-admin API (404 for anyone else, as every admin route):

* ``POST /api/v2/admin/bundle-exports``: start an export (its job; 202), ``GET .../{id}``:
  its status, report and, once finished, a presigned ``download`` link;
* ``POST /api/v2/admin/bundle-imports``: a new import and its presigned ``upload`` link
  (PUT the bundle there), ``POST .../{id}/actions/start``: check and import it (202),
  ``GET .../{id}``: its status and per-entry report.
"""

from __future__ import annotations

from types import ModuleType
from typing import TYPE_CHECKING, Annotated, Any

from chalice import Blueprint, Response

from chalicelib.accounts.authorization import SiteAdmin
from chalicelib.artifacts import constraints
from chalicelib.bundles import export, jobs
from chalicelib.core.api.errors import Unprocessable
from chalicelib.core.api.http import Ctx, route
from chalicelib.core.api.jsonapi import document, resource
from chalicelib.core.api.openapi import JsonApi

if TYPE_CHECKING:
    from chalicelib.bundles.schemas import StartExport

bp = Blueprint(__name__)

ADMIN = "/api/v2/admin"
EXPORTS = f"{ADMIN}/bundle-exports"
IMPORTS = f"{ADMIN}/bundle-imports"
TAG = "admin"


def body_models() -> ModuleType:
    from chalicelib.bundles import schemas

    return schemas


def render(job: jobs.Job, status: int = 200) -> Response:
    attributes: dict[str, Any] = {
        "status": job.status,
        "created-at": job.created_at,
        "updated-at": job.updated_at,
        "report": job.report,
        "error": job.error,
    }
    if job.kind == jobs.EXPORT:
        attributes["selection"] = job.selection
        attributes["size"] = job.size
    links: dict[str, Any] = {}
    if link := jobs.download_link(job):
        links["download"] = link
    if link := jobs.upload_link(job):
        links["upload"] = link
    type_ = "bundle-exports" if job.kind == jobs.EXPORT else "bundle-imports"
    return document(resource(type_, job.id, attributes, links=links), status)


def _selection(attrs: StartExport) -> export.Selection:
    if not attrs.modules and not attrs.providers:
        raise Unprocessable("choose at least one module or provider", pointer="/data/attributes")
    versions = [m.version for m in attrs.modules] + [p.version for p in attrs.providers]
    for version in versions:
        try:
            constraints.parse(version)
        except constraints.InvalidConstraint as exc:
            raise Unprocessable(str(exc), pointer="/data/attributes") from None
    for choice, parts, what in [(m, 4, "modules") for m in attrs.modules] + [
        (p, 3, "providers") for p in attrs.providers
    ]:
        if len(choice.address.split("/")) != parts or not all(choice.address.split("/")):
            raise Unprocessable(
                f"{choice.address!r} is not a {what[:-1]} address ({parts} parts)",
                pointer=f"/data/attributes/{what}",
            )
    return export.Selection(
        modules=tuple(export.ModuleChoice(m.address, m.version or "") for m in attrs.modules),
        providers=tuple(
            export.ProviderChoice(p.address, p.version or "", tuple(p.platforms))
            for p in attrs.providers
        ),
    )


@route(bp, EXPORTS, ("POST",), auth=SiteAdmin, tag=TAG, success=202)
def start_bundle_export(
    ctx: Ctx, attrs: Annotated[StartExport, JsonApi("bundle-exports", type_check="lenient")]
) -> Response:
    """Start an export of the chosen modules and providers into one bundle (a job)."""
    job = jobs.start_export(ctx.user, _selection(attrs), ctx.base_url)
    return render(job, 202)


@route(bp, EXPORTS + "/{job_id}", auth=SiteAdmin, tag=TAG)
def show_bundle_export(ctx: Ctx, job_id: str) -> Response:
    """An export's status and report; its bundle's download link once finished."""
    return render(jobs.load(job_id, jobs.EXPORT))


@route(bp, IMPORTS, ("POST",), auth=SiteAdmin, tag=TAG)
def new_bundle_import(ctx: Ctx) -> Response:
    """A new import and the presigned link to upload its bundle to."""
    return render(jobs.new_import(ctx.user), 201)


@route(bp, IMPORTS + "/{job_id}/actions/start", ("POST",), auth=SiteAdmin, tag=TAG, success=202)
def start_bundle_import(ctx: Ctx, job_id: str) -> Response:
    """Check the uploaded bundle and import it (a job)."""
    return render(jobs.start_import(ctx.user, job_id), 202)


@route(bp, IMPORTS + "/{job_id}", auth=SiteAdmin, tag=TAG)
def show_bundle_import(ctx: Ctx, job_id: str) -> Response:
    """An import's status and per-entry report."""
    return render(jobs.load(job_id, jobs.IMPORT))
