"""HTTP routes of workspaces: by id (``/workspaces/:id``) and by organization and name; their
key/value tag bindings; moving workspaces into a project."""

from __future__ import annotations

from collections.abc import Sequence
from types import ModuleType
from typing import TYPE_CHECKING, Annotated, Any

from chalice import Blueprint, Response

from chalicelib.accounts.authorization import OrgAccess
from chalicelib.accounts.organizations.service import get_organization
from chalicelib.accounts.render import render_organization
from chalicelib.core import tagbindings
from chalicelib.core.api.access import Bearer
from chalicelib.core.api.errors import Unprocessable
from chalicelib.core.api.http import Ctx, route
from chalicelib.core.api.jsonapi import Includer, document, no_content
from chalicelib.core.api.openapi import PAGE, JsonApi, Param, Relationships
from chalicelib.projects import service as projects
from chalicelib.projects.render import render_project
from chalicelib.workspaces import service
from chalicelib.workspaces.render import render_workspace
from chalicelib.workspaces.service import WorkspaceRef
from chalicelib.workspaces.store import WorkspaceModel

if TYPE_CHECKING:
    from chalicelib.workspaces.schemas import WorkspaceBody

bp = Blueprint(__name__)


def body_models() -> ModuleType:
    """This file's body models, loaded on first use (``core.api.http.typed_body``)."""
    from chalicelib.workspaces import schemas

    return schemas


ORG_WORKSPACES = "/api/v2/organizations/{organization_name}/workspaces"
BY_NAME = ORG_WORKSPACES + "/{workspace_name}"
BY_ID = "/api/v2/workspaces/{workspace_id}"
EFFECTIVE = "effective-tag-bindings"
# Of go-tfe's WSIncludeOpt (and pytfe's), those with a resource here: the organization, the
# project, the effective tag bindings, and the README of a VCS-backed workspace (terrasnek
# asks for it; workspaces here have no repository, so it is always empty, as TFE answers for
# a workspace without one).
INCLUDES = ("organization", "project", EFFECTIVE, "readme")


Create = Annotated["WorkspaceBody", JsonApi("workspaces", type_check="lenient")]
Update = Annotated["WorkspaceBody", JsonApi("workspaces", type_check="lenient", required=False)]


def settings_of(body: WorkspaceBody) -> dict[str, Any]:
    return body.model_dump(exclude={"name", "tag_names"})


def project_ref(body: Any) -> str | None:
    """``data.relationships.project.data.id`` of a create/PATCH document; None when the
    document does not name a project."""
    data = body.get("data") if isinstance(body, dict) else None
    relationships = data.get("relationships") if isinstance(data, dict) else None
    if not isinstance(relationships, dict) or "project" not in relationships:
        return None
    relation = relationships["project"]
    target = relation.get("data") if isinstance(relation, dict) else None
    project_id = target.get("id") if isinstance(target, dict) else None
    if not isinstance(project_id, str) or not project_id:
        raise Unprocessable(
            "project must be {data: {type: projects, id}}: a workspace belongs to a project",
            pointer=service.PROJECT_POINTER,
        )
    if target.get("type") not in ("projects", None, ""):  # type: ignore[union-attr]
        raise Unprocessable(
            "type must be 'projects'", pointer="/data/relationships/project/data/type"
        )
    return project_id


def _document(
    ctx: Ctx, workspaces: Sequence[WorkspaceModel], rights: OrgAccess
) -> tuple[list[dict[str, Any]], list[dict[str, Any]] | None]:
    """The rendered workspaces and the ``included`` array their request asks for.

    ``organization``: the workspaces' organization (``rights`` are the caller's there);
    ``project``: their projects; ``effective-tag-bindings``: their own and inherited bindings
    (the relationships then carry the identifiers)."""
    of = service.projects_of(workspaces)
    effective: dict[str, list[dict[str, Any]]] = {}
    if EFFECTIVE in (ctx.include or ()):
        found = service.effective_bindings(workspaces, of)
        effective = {wid: tagbindings.render_effective(*parts) for wid, parts in found.items()}

    def organizations(items: Sequence[WorkspaceModel]) -> list[dict[str, Any]]:
        names = dict.fromkeys(w.organization for w in items)
        found = [get_organization(name) for name in names]
        return [render_organization(org, rights) for org in found if org is not None]

    def project(items: Sequence[WorkspaceModel]) -> list[dict[str, Any]]:
        found = projects.get_many(pid for w in items if (pid := of.get(w.id)))
        return [render_project(p, rights) for p in found.values()]

    includers: dict[str, Includer] = {
        "organization": organizations,
        "project": project,
        EFFECTIVE: lambda items: [i for w in items for i in effective[w.id]],
        "readme": lambda items: [],
    }
    data = [render_workspace(w, rights, of.get(w.id), effective.get(w.id)) for w in workspaces]
    return data, ctx.included(workspaces, includers)


def reply(ctx: Ctx, workspace: WorkspaceModel, rights: OrgAccess, status: int = 200) -> Response:
    data, included = _document(ctx, [workspace], rights)
    return document(data[0], status, included=included)


# ----- routes -------------------------------------------------------------------------------


@route(
    bp,
    ORG_WORKSPACES,
    auth=Bearer,
    methods=("GET",),
    includes=INCLUDES,
    query=(
        *PAGE,
        Param("search[name]", "a part of the workspace's name"),
        Param("search[tags]", "tag names the workspace has (all of them), comma-separated"),
        Param("search[exclude-tags]", "tag names the workspace has none of, comma-separated"),
        Param("filter[project][id]", "only the workspaces of this project"),
        Param(
            "filter[tagged][0][key]",
            "only those whose effective tag bindings (their own and their project's) have "
            "this key (index 0, 1, … ANDed)",
        ),
        Param("filter[tagged][0][value]", "… with this value (left out or empty: any value)"),
    ),
)
def list_workspaces(ctx: Ctx, organization_name: str) -> Response:
    items, total, rights = service.page_workspaces(
        ctx.user, organization_name, ctx.query, ctx.page()
    )
    page = ctx.paginate_read(items, total)
    data, included = _document(ctx, page.items, rights)
    return document(data, links=page.links, meta=page.meta, included=included)


def _show(ctx: Ctx, ref: WorkspaceRef) -> Response:
    workspace, rights = service.readable(ctx.user, ref)
    return reply(ctx, workspace, rights)


def _update(ctx: Ctx, ref: WorkspaceRef, body: WorkspaceBody) -> Response:
    project_id = project_ref(ctx.json())
    bindings = tagbindings.from_relationship(ctx.json())
    workspace = service.update_workspace(
        ctx.user, ref, body.name, settings_of(body), project_id, bindings
    )
    workspace, rights = service.readable(ctx.user, WorkspaceRef(id=workspace.id))
    return reply(ctx, workspace, rights)


@route(bp, BY_ID, auth=Bearer, methods=("GET",), includes=INCLUDES)
def show_workspace(ctx: Ctx, workspace_id: str) -> Response:
    return _show(ctx, WorkspaceRef(id=workspace_id))


@route(bp, BY_NAME, auth=Bearer, methods=("GET",), includes=INCLUDES)
def show_workspace_by_name(ctx: Ctx, organization_name: str, workspace_name: str) -> Response:
    return _show(ctx, WorkspaceRef(organization=organization_name, name=workspace_name))


@route(bp, BY_ID, auth=Bearer, methods=("PATCH",), includes=INCLUDES)
def update_workspace(ctx: Ctx, workspace_id: str, body: Update) -> Response:
    return _update(ctx, WorkspaceRef(id=workspace_id), body)


@route(bp, BY_NAME, auth=Bearer, methods=("PATCH",), includes=INCLUDES)
def update_workspace_by_name(
    ctx: Ctx, organization_name: str, workspace_name: str, body: Update
) -> Response:
    ref = WorkspaceRef(organization=organization_name, name=workspace_name)
    return _update(ctx, ref, body)


# ----- key/value tag bindings ---------------------------------------------------------------


@route(bp, BY_ID + "/tag-bindings", auth=Bearer, methods=("GET",))
def list_workspace_tag_bindings(ctx: Ctx, workspace_id: str) -> Response:
    """List the tag bindings of the workspace itself (not those of its project)."""
    workspace, _ = service.readable(ctx.user, WorkspaceRef(id=workspace_id))
    return document(tagbindings.render(workspace.tag_bindings or []))


@route(
    bp,
    BY_ID + "/tag-bindings",
    auth=Bearer,
    methods=("PATCH",),
    body=tagbindings.DOCUMENT,
    success=200,
)
def add_workspace_tag_bindings(ctx: Ctx, workspace_id: str) -> Response:
    """Add or update tag bindings on a workspace (never removes one); answers the whole set."""
    added = tagbindings.from_document(ctx.json())
    bindings = service.add_bindings(ctx.user, WorkspaceRef(id=workspace_id), added)
    return document(tagbindings.render(bindings))


@route(bp, BY_ID + "/effective-tag-bindings", auth=Bearer, methods=("GET",))
def list_workspace_effective_tag_bindings(ctx: Ctx, workspace_id: str) -> Response:
    """List the effective tag bindings of a workspace: its own, and its project's that it
    does not override (each with ``links.inherited-from``)."""
    workspace, _ = service.readable(ctx.user, WorkspaceRef(id=workspace_id))
    parts = service.effective_bindings([workspace], service.projects_of([workspace]))
    return document(tagbindings.render_effective(*parts[workspace.id]))


@route(
    bp,
    "/api/v2/projects/{project_id}/relationships/workspaces",
    auth=Bearer,
    methods=("POST",),
    body=Relationships(
        "workspaces",
        max_items=service.MAX_MOVED_WORKSPACES,
        description="the workspaces to move into the project",
    ),
    success=204,
)
def move_workspaces_to_project(ctx: Ctx, project_id: str) -> Response:
    """Move workspaces into a project (all of them are checked before any moves)."""
    items = ctx.relationships()
    ids = []
    for index, item in enumerate(items):
        workspace_id = item.get("id")
        if not isinstance(workspace_id, str) or not workspace_id:
            raise Unprocessable("each workspace needs its id", pointer=f"/data/{index}/id")
        ids.append(workspace_id)
    service.move_to_project(ctx.user, project_id, ids)
    return no_content()
