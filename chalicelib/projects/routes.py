"""HTTP routes of projects: by organization (list, create) and by id, with tag bindings."""

from __future__ import annotations

from collections.abc import Sequence
from types import ModuleType
from typing import TYPE_CHECKING, Annotated, Any

from chalice import Blueprint, Response

from chalicelib.accounts.authorization import OrgAccess
from chalicelib.core import tagbindings
from chalicelib.core.api.access import Bearer
from chalicelib.core.api.http import Ctx, route
from chalicelib.core.api.jsonapi import Includer, document, no_content
from chalicelib.core.api.openapi import PAGE, JsonApi, Param
from chalicelib.projects import service
from chalicelib.projects.render import render_effective, render_project
from chalicelib.projects.store import ProjectModel

if TYPE_CHECKING:
    from chalicelib.projects.schemas import ProjectBody

bp = Blueprint(__name__)


def body_models() -> ModuleType:
    """This file's body models, loaded on first use (``core.api.http.typed_body``)."""
    from chalicelib.projects import schemas

    return schemas


ORG_PROJECTS = "/api/v2/organizations/{organization_name}/projects"
BY_ID = "/api/v2/projects/{project_id}"
EFFECTIVE = "effective-tag-bindings"
# go-tfe and the tfe provider read a project with include=effective_tag_bindings.
INCLUDES = (EFFECTIVE,)
TAGGED = (
    Param("filter[tagged][0][key]", "only those bound to this tag key (index 0, 1, … ANDed)"),
    Param("filter[tagged][0][value]", "… with this value (left out or empty: any value)"),
)
CONFLICT = {409: "the project is the default one, or still holds workspaces"}


Create = Annotated["ProjectBody", JsonApi("projects", type_check="lenient")]
Update = Annotated["ProjectBody", JsonApi("projects", type_check="lenient", required=False)]


def _settings(body: ProjectBody) -> tuple[dict[str, Any], set[str]]:
    return body.model_dump(exclude={"name"}), set(body.model_fields_set) - {"name"}


def _includers() -> dict[str, Includer]:
    def effective(projects: Sequence[ProjectModel]) -> list[dict[str, Any]]:
        return [item for p in projects for item in render_effective(p)]

    return {EFFECTIVE: effective}


def _render(ctx: Ctx, project: ProjectModel, rights: OrgAccess) -> dict[str, Any]:
    return render_project(project, rights, effective=EFFECTIVE in (ctx.include or ()))


def _reply(ctx: Ctx, project: ProjectModel, rights: OrgAccess, status: int = 200) -> Response:
    included = ctx.included([project], _includers())
    return document(_render(ctx, project, rights), status, included=included)


# ----- projects -----------------------------------------------------------------------------


@route(
    bp,
    ORG_PROJECTS,
    auth=Bearer,
    methods=("GET",),
    includes=INCLUDES,
    query=(
        *PAGE,
        Param("q", "a part of the project's name (case-insensitive)"),
        Param("filter[names]", "exact project names, comma-separated (case-insensitive)"),
        *TAGGED,
        Param("sort", "name (the default) or -name"),
    ),
)
def list_projects(ctx: Ctx, organization_name: str) -> Response:
    """List the organization's projects (its default project included)."""
    items, total, rights = service.page_projects(ctx.user, organization_name, ctx.query, ctx.page())
    page = ctx.paginate_read(items, total)
    return document(
        [_render(ctx, p, rights) for p in page.items],
        links=page.links,
        meta=page.meta,
        included=ctx.included(page.items, _includers()),
    )


@route(bp, ORG_PROJECTS, auth=Bearer, methods=("POST",), includes=INCLUDES)
def create_project(ctx: Ctx, organization_name: str, body: Create) -> Response:
    """Create a project, with its tag bindings (``relationships.tag-bindings``)."""
    bindings = tagbindings.from_relationship(ctx.json())
    settings, given = _settings(body)
    project = service.create_project(
        ctx.user, organization_name, body.name, settings, given, bindings
    )
    project, rights = service.readable(ctx.user, project.id)
    return _reply(ctx, project, rights, 201)


@route(bp, BY_ID, auth=Bearer, methods=("GET",), includes=INCLUDES)
def show_project(ctx: Ctx, project_id: str) -> Response:
    project, rights = service.readable(ctx.user, project_id)
    return _reply(ctx, project, rights)


@route(bp, BY_ID, auth=Bearer, methods=("PATCH",), includes=INCLUDES)
def update_project(ctx: Ctx, project_id: str, body: Update) -> Response:
    """Update a project; ``relationships.tag-bindings`` replaces its bindings (``[]`` clears
    them, leaving it out keeps them)."""
    bindings = tagbindings.from_relationship(ctx.json())
    settings, given = _settings(body)
    service.update_project(ctx.user, project_id, body.name, settings, given, bindings)
    project, rights = service.readable(ctx.user, project_id)
    return _reply(ctx, project, rights)


@route(bp, BY_ID, auth=Bearer, methods=("DELETE",), errors=CONFLICT)
def delete_project(ctx: Ctx, project_id: str) -> Response:
    """Delete a project that holds no workspace (the default project stays)."""
    service.delete_project(ctx.user, project_id)
    return no_content()


# ----- tag bindings -------------------------------------------------------------------------


@route(bp, BY_ID + "/tag-bindings", auth=Bearer, methods=("GET",))
def list_project_tag_bindings(ctx: Ctx, project_id: str) -> Response:
    """List the tag bindings of a project (its workspaces inherit them)."""
    project, _ = service.readable(ctx.user, project_id)
    return document(tagbindings.render(project.tag_bindings or []))


@route(
    bp,
    BY_ID + "/tag-bindings",
    auth=Bearer,
    methods=("PATCH",),
    body=tagbindings.DOCUMENT,
    success=200,
)
def add_project_tag_bindings(ctx: Ctx, project_id: str) -> Response:
    """Add or update tag bindings on a project (never removes one); answers the whole set."""
    added = tagbindings.from_document(ctx.json())
    bindings = service.add_bindings(ctx.user, project_id, added)
    return document(tagbindings.render(bindings))


@route(bp, BY_ID + "/effective-tag-bindings", auth=Bearer, methods=("GET",))
def list_project_effective_tag_bindings(ctx: Ctx, project_id: str) -> Response:
    """List the effective tag bindings of a project (for a project, its own)."""
    project, _ = service.readable(ctx.user, project_id)
    return document(render_effective(project))
