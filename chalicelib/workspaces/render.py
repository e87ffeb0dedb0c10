"""JSON:API rendering of workspaces (what go-tfe decodes: list items equal the read
response). The permissions block reflects the caller's rights on the organization.

``project``, ``tag-bindings`` and ``effective-tag-bindings`` are relationships, as in TFE: the
bindings are links to their lists (with identifiers when ``?include=`` asks for them)."""

from __future__ import annotations

from typing import Any

from chalicelib.accounts.authorization import OrgAccess
from chalicelib.core import tagbindings
from chalicelib.core.api.jsonapi import resource, to_many, to_one
from chalicelib.core.data.ids import iso
from chalicelib.workspaces.store import WorkspaceModel, tag_entries


def render_workspace(
    workspace: WorkspaceModel,
    rights: OrgAccess,
    project_id: str | None = None,
    effective: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """``project_id``: its project's (see ``service.projects_of``); ``effective``: its
    effective bindings when they are included."""
    manage = rights.manage_workspaces
    path = f"/api/v2/workspaces/{workspace.id}"
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
            "tags": to_many("tags", (i for i, _ in tag_entries(workspace))),
            "project": to_one("projects", project_id),
            "tag-bindings": tagbindings.relationship(path + "/tag-bindings"),
            "effective-tag-bindings": tagbindings.effective_relationship(
                path + "/effective-tag-bindings", effective
            ),
        },
        links={
            "self": f"/api/v2/organizations/{workspace.organization}/workspaces/{workspace.name}",
            "self-html": f"/app/{workspace.organization}/workspaces/{workspace.name}",
        },
    )
