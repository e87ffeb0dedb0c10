"""Creating and deleting what other domains hang things on: organizations and workspaces.

Each function states the cross-domain order in one place; the domains' services never
import each other upward to cascade. The order matters:

* deleting an organization queues the removal of its modules' webhooks at the VCS hosts
  while its VCS connections still exist (each job carries the host and the sealed token it
  needs), then deletes the connections, the workspaces (a tag goes with its last
  workspace), leftover tags, and last the organization's own teams, tokens and record;
* deleting a workspace fences it off first (no new tag can land on it), detaches every tag
  (exact counts), then deletes it;
* an organization is created under the site's policy (``limit-user-organization-creation``);
  a workspace created with ``tag-names`` is tagged after it exists.

Every step is idempotent, so a delete interrupted half-way can be repeated.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from chalicelib.accounts import service as accounts
from chalicelib.admin import service as admin
from chalicelib.core.auth import Principal
from chalicelib.registry import service as registry
from chalicelib.tags import service as tags
from chalicelib.vcs import service as vcs
from chalicelib.workspaces import service as workspaces
from chalicelib.workspaces.service import WorkspaceRef

if TYPE_CHECKING:
    from chalicelib.workspaces.store import WorkspaceModel

# ----- organizations ------------------------------------------------------------------------


def create_organization(principal: Principal, name: str | None, email: str | None):
    return accounts.create_organization(
        principal, name, email, limited=admin.organization_creation_limited()
    )


def delete_organization(principal: Principal, name: str) -> None:
    """Delete the organization and everything in it (owners only)."""
    accounts.owned_organization(principal, name)
    modules = registry.delete_all_for_organization(name)
    if any(module.webhook_registration for module in modules):
        from chalicelib.registry.publishing import hooks  # loads the VCS clients: only if needed

        hooks.queue_removals(modules)  # reads the connections: before they are deleted
    vcs.delete_all_for_organization(name)
    for workspace in workspaces.all_in_organization(name):
        destroy_workspace(workspace)
    tags.delete_all_for_organization(name)  # leftovers of an interrupted delete
    accounts.delete_organization_records(name)


# ----- workspaces ---------------------------------------------------------------------------


def create_workspace(
    principal: Principal,
    organization: str,
    name: Any,
    settings: dict[str, Any],
    tag_names: list[Any],
) -> WorkspaceModel:
    """Every tag name is checked before the workspace is created."""
    names = [
        tags.validate_tag_name(n, f"/data/attributes/tag-names/{i}")
        for i, n in enumerate(tag_names)
    ]
    workspace = workspaces.create_workspace(principal, organization, name, settings)
    if names:
        tags.tag_workspace_names(workspace, names)
    return workspace


def delete_workspace(principal: Principal, ref: WorkspaceRef) -> None:
    workspace, _ = workspaces.manageable(principal, ref)
    destroy_workspace(workspace)


def destroy_workspace(workspace: WorkspaceModel) -> None:
    if not workspaces.fence(workspace):
        return  # already gone
    for tag_id, tag_name in workspaces.tag_entries(workspace):
        tags.detach(workspace.organization, workspace.id, tag_id, tag_name)
    workspaces.remove(workspace)
