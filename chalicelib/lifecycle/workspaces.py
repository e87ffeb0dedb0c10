"""Creating and deleting a workspace across the workspaces and tags rooms, in order.

* A workspace created with ``tag-names`` is tagged after it exists (every name is checked
  first).
* Deleting one fences it off first (no new tag can land on it), detaches every tag (exact
  counts), then deletes it. Repeating an interrupted delete is safe.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from chalicelib.core.audit.events import Event
from chalicelib.core.auth import Principal
from chalicelib.core.tagbindings import Binding
from chalicelib.tags import service as tags
from chalicelib.workspaces import service as workspaces
from chalicelib.workspaces.service import WorkspaceRef

if TYPE_CHECKING:
    from chalicelib.workspaces.store import WorkspaceModel


def create_workspace(
    principal: Principal,
    organization: str,
    name: Any,
    settings: dict[str, Any],
    tag_names: list[Any],
    *,
    project_id: str | None = None,
    bindings: list[Binding] | None = None,
) -> WorkspaceModel:
    """Every tag name is checked before the workspace is created (in ``project_id``, with
    its key/value ``bindings``: see ``workspaces.create_workspace``)."""
    names = [
        tags.validate_tag_name(n, f"/data/attributes/tag-names/{i}")
        for i, n in enumerate(tag_names)
    ]
    workspace = workspaces.create_workspace(
        principal, organization, name, settings, project_id, bindings, names
    )
    if names:
        tags.tag_workspace_names(workspace, names)
    return workspace


def delete_workspace(principal: Principal, ref: WorkspaceRef) -> None:
    workspace, _ = workspaces.manageable(principal, ref)
    destroy_workspace(workspace, workspaces.event_of(principal, workspace, "deleted"))


def destroy_workspace(workspace: WorkspaceModel, event: Event | None = None) -> None:
    """Fence, untag and delete the workspace; ``event`` is written with the delete (None:
    part of its organization's delete, which records its own)."""
    if not workspaces.fence(workspace):
        return  # already gone
    for tag_id, tag_name in workspaces.tag_entries(workspace):
        tags.detach(workspace.organization, workspace.id, tag_id, tag_name)
    workspaces.remove(workspace, event)
