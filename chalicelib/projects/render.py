"""JSON:API rendering of projects (what go-tfe and pytfe decode; list items equal the read
response). ``permissions`` reflect the caller's rights in the organization."""

from __future__ import annotations

from typing import Any

from chalicelib.accounts.authorization import OrgAccess
from chalicelib.core import tagbindings
from chalicelib.core.api.jsonapi import resource, to_one
from chalicelib.core.data.ids import iso
from chalicelib.projects.store import ProjectModel


def project_path(project_id: str) -> str:
    return f"/api/v2/projects/{project_id}"


def render_effective(project: ProjectModel) -> list[dict[str, Any]]:
    """A project's effective bindings are its own: projects inherit from nothing."""
    return tagbindings.render_effective(project.tag_bindings or [])


def render_project(
    project: ProjectModel, rights: OrgAccess, *, effective: bool = False
) -> dict[str, Any]:
    """``effective``: the effective bindings are included (``?include=``), so the
    relationship carries their identifiers."""
    manage = rights.manage_projects
    path = project_path(project.id)
    org = project.organization
    attributes: dict[str, Any] = {
        "name": project.name,
        "description": project.description,
        "created-at": iso(project.created_at),
        "updated-at": iso(project.updated_at),
        "workspace-count": int(project.workspace_count or 0),
        "default-execution-mode": project.default_execution_mode,
        "auto-destroy-activity-duration": project.auto_destroy_activity_duration,
        "permissions": {
            "can-read": True,
            "can-update": manage,
            "can-destroy": manage and not project.is_default,
            "can-create-workspace": rights.manage_workspaces,
        },
    }
    return resource(
        "projects",
        project.id,
        attributes,
        relationships={
            "organization": {
                **to_one("organizations", org),
                "links": {"related": f"/api/v2/organizations/{org}"},
            },
            "default-agent-pool": {"data": None},
            "tag-bindings": tagbindings.relationship(path + "/tag-bindings"),
            "effective-tag-bindings": tagbindings.effective_relationship(
                path + "/effective-tag-bindings", render_effective(project) if effective else None
            ),
        },
        links={"self": path},
    )
