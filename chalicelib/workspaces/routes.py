"""HTTP routes of workspaces: by id (``/workspaces/:id``) and by organization and name."""

from __future__ import annotations

from typing import Any

from chalice import Blueprint, Response

from chalicelib import lifecycle
from chalicelib.accounts.service import OrgAccess
from chalicelib.core.http import Ctx, route
from chalicelib.core.ids import iso
from chalicelib.core.jsonapi import (
    Attributes,
    document,
    no_content,
    parse_attributes,
    resource,
    to_one,
)
from chalicelib.workspaces import service
from chalicelib.workspaces.service import WorkspaceRef
from chalicelib.workspaces.store import WorkspaceModel, tag_entries

bp = Blueprint(__name__)

ORG_WORKSPACES = "/api/v2/organizations/{organization_name}/workspaces"
BY_NAME = ORG_WORKSPACES + "/{workspace_name}"
BY_ID = "/api/v2/workspaces/{workspace_id}"


# ----- rendering ----------------------------------------------------------------------------


def render_workspace(workspace: WorkspaceModel, rights: OrgAccess) -> dict[str, Any]:
    manage = rights.manage_workspaces
    attributes: dict[str, Any] = {
        "name": workspace.name,
        "description": workspace.description,
        "actions": {"is-destroyable": True},
        "allow-destroy-plan": workspace.allow_destroy_plan,
        "apply-duration-average": None,
        "assessments-enabled": workspace.assessments_enabled,
        "auto-apply": workspace.auto_apply,
        "auto-apply-run-trigger": False,
        "auto-destroy-at": None,
        "auto-destroy-activity-duration": None,
        "can-queue-destroy-plan": False,
        "created-at": iso(workspace.created_at),
        "updated-at": iso(workspace.updated_at),
        "environment": "default",
        "execution-mode": workspace.execution_mode,
        "file-triggers-enabled": workspace.file_triggers_enabled,
        "global-remote-state": workspace.global_remote_state,
        "latest-change-at": iso(workspace.updated_at),
        "locked": workspace.locked,
        "migration-environment": "",
        "operations": workspace.execution_mode == "remote",
        "permissions": {
            "can-update": manage,
            "can-destroy": manage,
            "can-force-delete": manage,
            "can-queue-destroy": manage,
            "can-queue-run": manage,
            "can-queue-apply": manage,
            "can-read-settings": rights.can_read,
            "can-read-variable": rights.can_read,
            "can-update-variable": manage,
            "can-read-state-versions": rights.can_read,
            "can-read-state-outputs": rights.can_read,
            "can-create-state-versions": manage,
            "can-lock": manage,
            "can-unlock": manage,
            "can-force-unlock": manage,
            "can-manage-tags": manage,
            "can-manage-run-tasks": manage,
            "can-manage-assessments": manage,
            "can-read-assessment-results": rights.can_read,
        },
        "plan-duration-average": None,
        "policy-check-failures": None,
        "queue-all-runs": workspace.queue_all_runs,
        "resource-count": 0,
        "run-failures": None,
        "setting-overwrites": {"execution-mode": False, "agent-pool": False},
        "source": "tfe-api",
        "source-name": workspace.source_name,
        "source-url": workspace.source_url,
        "speculative-enabled": workspace.speculative_enabled,
        "structured-run-output-enabled": workspace.structured_run_output_enabled,
        "tag-names": [name for _, name in tag_entries(workspace)],
        "terraform-version": workspace.terraform_version,
        "trigger-prefixes": list(workspace.trigger_prefixes or []),
        "trigger-patterns": list(workspace.trigger_patterns or []),
        "vcs-repo-identifier": None,
        "working-directory": workspace.working_directory,
        "workspace-kpis-runs-count": None,
    }
    return resource(
        "workspaces",
        workspace.id,
        attributes,
        relationships={
            "organization": to_one("organizations", workspace.organization),
            "tags": {"data": [{"id": i, "type": "tags"} for i, _ in tag_entries(workspace)]},
        },
        links={
            "self": f"/api/v2/organizations/{workspace.organization}/workspaces/{workspace.name}",
            "self-html": f"/app/{workspace.organization}/workspaces/{workspace.name}",
        },
    )


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


def _settings(body: WorkspaceBody) -> dict[str, Any]:
    return body.model_dump(exclude={"name", "tag_names"})


def _reply(workspace: WorkspaceModel, rights: OrgAccess, status: int = 200) -> Response:
    return document(render_workspace(workspace, rights), status)


# ----- routes -------------------------------------------------------------------------------


@route(bp, ORG_WORKSPACES, methods=("GET",))
def list_workspaces(ctx: Ctx, organization_name: str) -> Response:
    items, rights = service.list_workspaces(ctx.user, organization_name, ctx.query)
    page = ctx.paginate(items)
    return document(
        [render_workspace(w, rights) for w in page.items], links=page.links, meta=page.meta
    )


@route(bp, ORG_WORKSPACES, methods=("POST",))
def create_workspace(ctx: Ctx, organization_name: str) -> Response:
    body = parse_attributes(ctx.json(), WorkspaceBody, type_="workspaces", lenient_type=True)
    workspace = lifecycle.create_workspace(
        ctx.user, organization_name, body.name, _settings(body), body.tag_names or []
    )
    workspace, rights = service.readable(ctx.user, WorkspaceRef(id=workspace.id))
    return _reply(workspace, rights, 201)


def _show(ctx: Ctx, ref: WorkspaceRef) -> Response:
    workspace, rights = service.readable(ctx.user, ref)
    return _reply(workspace, rights)


def _update(ctx: Ctx, ref: WorkspaceRef) -> Response:
    body = parse_attributes(
        ctx.json(), WorkspaceBody, type_="workspaces", lenient_type=True, required=False
    )
    workspace = service.update_workspace(ctx.user, ref, body.name, _settings(body))
    workspace, rights = service.readable(ctx.user, WorkspaceRef(id=workspace.id))
    return _reply(workspace, rights)


def _delete(ctx: Ctx, ref: WorkspaceRef) -> Response:
    lifecycle.delete_workspace(ctx.user, ref)
    return no_content()


@route(bp, BY_ID, methods=("GET",))
def show_workspace(ctx: Ctx, workspace_id: str) -> Response:
    return _show(ctx, WorkspaceRef(id=workspace_id))


@route(bp, BY_NAME, methods=("GET",))
def show_workspace_by_name(ctx: Ctx, organization_name: str, workspace_name: str) -> Response:
    return _show(ctx, WorkspaceRef(organization=organization_name, name=workspace_name))


@route(bp, BY_ID, methods=("PATCH",))
def update_workspace(ctx: Ctx, workspace_id: str) -> Response:
    return _update(ctx, WorkspaceRef(id=workspace_id))


@route(bp, BY_NAME, methods=("PATCH",))
def update_workspace_by_name(ctx: Ctx, organization_name: str, workspace_name: str) -> Response:
    return _update(ctx, WorkspaceRef(organization=organization_name, name=workspace_name))


@route(bp, BY_ID, methods=("DELETE",))
def delete_workspace(ctx: Ctx, workspace_id: str) -> Response:
    return _delete(ctx, WorkspaceRef(id=workspace_id))


@route(bp, BY_NAME, methods=("DELETE",))
def delete_workspace_by_name(ctx: Ctx, organization_name: str, workspace_name: str) -> Response:
    return _delete(ctx, WorkspaceRef(organization=organization_name, name=workspace_name))


@route(bp, BY_ID + "/actions/safe-delete", methods=("POST",))
def safe_delete_workspace(ctx: Ctx, workspace_id: str) -> Response:
    return _delete(ctx, WorkspaceRef(id=workspace_id))


@route(bp, BY_NAME + "/actions/safe-delete", methods=("POST",))
def safe_delete_workspace_by_name(
    ctx: Ctx, organization_name: str, workspace_name: str
) -> Response:
    return _delete(ctx, WorkspaceRef(organization=organization_name, name=workspace_name))
