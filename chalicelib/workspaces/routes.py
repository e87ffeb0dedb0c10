"""HTTP routes of workspaces: by id (``/workspaces/:id``) and by organization and name."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from chalice import Blueprint, Response

from chalicelib.accounts.render import render_organization
from chalicelib.accounts.service import OrgAccess, get_organization
from chalicelib.core.http import Ctx, route
from chalicelib.core.jsonapi import Attributes, Includer, document, no_content
from chalicelib.core.openapi import PAGE, Body, Param
from chalicelib.lifecycle import workspaces as lifecycle
from chalicelib.workspaces import service
from chalicelib.workspaces.render import render_workspace
from chalicelib.workspaces.service import WorkspaceRef
from chalicelib.workspaces.store import WorkspaceModel

bp = Blueprint(__name__)

ORG_WORKSPACES = "/api/v2/organizations/{organization_name}/workspaces"
BY_NAME = ORG_WORKSPACES + "/{workspace_name}"
BY_ID = "/api/v2/workspaces/{workspace_id}"
# Of go-tfe's WSIncludeOpt, those with a resource here: the organization, and the README of
# a VCS-backed workspace (terrasnek asks for it; workspaces here have no repository, so it
# is always empty, as TFE answers for a workspace without one).
INCLUDES = ("organization", "readme")


# ----- request bodies -----------------------------------------------------------------------


class WorkspaceBody(Attributes):
    name: str | None = None
    description: str | None = None
    auto_apply: bool | None = None
    allow_destroy_plan: bool | None = None
    assessments_enabled: bool | None = None
    execution_mode: str | None = None
    operations: bool | None = None
    file_triggers_enabled: bool | None = None
    global_remote_state: bool | None = None
    queue_all_runs: bool | None = None
    speculative_enabled: bool | None = None
    structured_run_output_enabled: bool | None = None
    terraform_version: str | None = None
    working_directory: str | None = None
    source_name: str | None = None
    source_url: str | None = None
    trigger_prefixes: list[str] | None = None
    trigger_patterns: list[str] | None = None
    tag_names: list[str] | None = None


CREATE = Body(WorkspaceBody, "workspaces", type_check="lenient")
UPDATE = Body(WorkspaceBody, "workspaces", type_check="lenient", required=False)


def _settings(body: WorkspaceBody) -> dict[str, Any]:
    return body.model_dump(exclude={"name", "tag_names"})


def _includers(rights: OrgAccess) -> dict[str, Includer]:
    """``organization``: the workspaces' organization (``rights`` are the caller's there)."""

    def organizations(workspaces: Sequence[WorkspaceModel]) -> list[dict[str, Any]]:
        names = dict.fromkeys(w.organization for w in workspaces)
        found = [get_organization(name) for name in names]
        return [render_organization(org, rights) for org in found if org is not None]

    return {"organization": organizations, "readme": lambda workspaces: []}


def _reply(ctx: Ctx, workspace: WorkspaceModel, rights: OrgAccess, status: int = 200) -> Response:
    included = ctx.included([workspace], _includers(rights))
    return document(render_workspace(workspace, rights), status, included=included)


# ----- routes -------------------------------------------------------------------------------


@route(
    bp,
    ORG_WORKSPACES,
    methods=("GET",),
    includes=INCLUDES,
    query=(
        *PAGE,
        Param("search[name]", "a part of the workspace's name"),
        Param("search[tags]", "tag names the workspace has (all of them), comma-separated"),
        Param("search[exclude-tags]", "tag names the workspace has none of, comma-separated"),
    ),
)
def list_workspaces(ctx: Ctx, organization_name: str) -> Response:
    items, rights = service.list_workspaces(ctx.user, organization_name, ctx.query)
    page = ctx.paginate(items)
    return document(
        [render_workspace(w, rights) for w in page.items],
        links=page.links,
        meta=page.meta,
        included=ctx.included(page.items, _includers(rights)),
    )


@route(bp, ORG_WORKSPACES, methods=("POST",), includes=INCLUDES, body=CREATE)
def create_workspace(ctx: Ctx, organization_name: str) -> Response:
    body = ctx.attributes(WorkspaceBody)
    workspace = lifecycle.create_workspace(
        ctx.user, organization_name, body.name, _settings(body), body.tag_names or []
    )
    workspace, rights = service.readable(ctx.user, WorkspaceRef(id=workspace.id))
    return _reply(ctx, workspace, rights, 201)


def _show(ctx: Ctx, ref: WorkspaceRef) -> Response:
    workspace, rights = service.readable(ctx.user, ref)
    return _reply(ctx, workspace, rights)


def _update(ctx: Ctx, ref: WorkspaceRef) -> Response:
    body = ctx.attributes(WorkspaceBody)
    workspace = service.update_workspace(ctx.user, ref, body.name, _settings(body))
    workspace, rights = service.readable(ctx.user, WorkspaceRef(id=workspace.id))
    return _reply(ctx, workspace, rights)


def _delete(ctx: Ctx, ref: WorkspaceRef) -> Response:
    lifecycle.delete_workspace(ctx.user, ref)
    return no_content()


@route(bp, BY_ID, methods=("GET",), includes=INCLUDES)
def show_workspace(ctx: Ctx, workspace_id: str) -> Response:
    return _show(ctx, WorkspaceRef(id=workspace_id))


@route(bp, BY_NAME, methods=("GET",), includes=INCLUDES)
def show_workspace_by_name(ctx: Ctx, organization_name: str, workspace_name: str) -> Response:
    return _show(ctx, WorkspaceRef(organization=organization_name, name=workspace_name))


@route(bp, BY_ID, methods=("PATCH",), includes=INCLUDES, body=UPDATE)
def update_workspace(ctx: Ctx, workspace_id: str) -> Response:
    return _update(ctx, WorkspaceRef(id=workspace_id))


@route(bp, BY_NAME, methods=("PATCH",), includes=INCLUDES, body=UPDATE)
def update_workspace_by_name(ctx: Ctx, organization_name: str, workspace_name: str) -> Response:
    return _update(ctx, WorkspaceRef(organization=organization_name, name=workspace_name))


@route(bp, BY_ID, methods=("DELETE",))
def delete_workspace(ctx: Ctx, workspace_id: str) -> Response:
    return _delete(ctx, WorkspaceRef(id=workspace_id))


@route(bp, BY_NAME, methods=("DELETE",))
def delete_workspace_by_name(ctx: Ctx, organization_name: str, workspace_name: str) -> Response:
    return _delete(ctx, WorkspaceRef(organization=organization_name, name=workspace_name))


@route(bp, BY_ID + "/actions/safe-delete", methods=("POST",), success=204)
def safe_delete_workspace(ctx: Ctx, workspace_id: str) -> Response:
    return _delete(ctx, WorkspaceRef(id=workspace_id))


@route(bp, BY_NAME + "/actions/safe-delete", methods=("POST",), success=204)
def safe_delete_workspace_by_name(
    ctx: Ctx, organization_name: str, workspace_name: str
) -> Response:
    return _delete(ctx, WorkspaceRef(organization=organization_name, name=workspace_name))
