"""Workspaces: validation, permissions, create/update/delete, and the workspace side of the
tag transactions (``tx_attach_tag`` / ``tx_detach_tag``, used by chalicelib/tags).

Reading a workspace needs read access to its organization; creating, changing, deleting and
tagging one needs ``manage-workspaces`` (owners and site admins have it). Otherwise 404.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass
from typing import Any

from pynamodb.exceptions import TransactWriteError, UpdateError
from pynamodb.transactions import TransactWrite

from chalicelib.accounts import service as accounts
from chalicelib.core import db
from chalicelib.core.auth import Principal
from chalicelib.core.errors import Conflict, NotFound, Unprocessable
from chalicelib.core.ids import new_id, now
from chalicelib.workspaces.store import WorkspaceModel, WorkspaceNameModel, tag_entries

NAME = re.compile(r"^[A-Za-z0-9_-]{1,90}$")
EXECUTION_MODES = ("remote", "local")
MAX_TEXT = 255

# Attributes that map one-to-one onto the model (name handled separately).
SETTINGS = (
    "description",
    "auto_apply",
    "allow_destroy_plan",
    "assessments_enabled",
    "execution_mode",
    "file_triggers_enabled",
    "global_remote_state",
    "queue_all_runs",
    "speculative_enabled",
    "structured_run_output_enabled",
    "terraform_version",
    "working_directory",
    "source_name",
    "source_url",
    "trigger_prefixes",
    "trigger_patterns",
)


@dataclass(frozen=True)
class WorkspaceRef:
    """A workspace addressed by id, or by organization and name."""

    id: str | None = None
    organization: str | None = None
    name: str | None = None

    def describe(self) -> str:
        return self.id or f"{self.organization}/{self.name}"


# ----- validation ---------------------------------------------------------------------------


def validate_name(name: Any) -> str:
    if not isinstance(name, str) or not name:
        raise Unprocessable("name is required", pointer="/data/attributes/name")
    if not NAME.match(name):
        raise Unprocessable(
            "name may contain only letters, numbers, - and _, at most 90 characters",
            pointer="/data/attributes/name",
        )
    return name


def clean_settings(values: dict[str, Any]) -> dict[str, Any]:
    """Validate the settings present in ``values`` (``None`` = not given)."""
    out: dict[str, Any] = {}
    operations = values.get("operations")
    if operations is not None and values.get("execution_mode") is None:
        values = {**values, "execution_mode": "remote" if operations else "local"}
    for key in SETTINGS:
        value = values.get(key)
        if value is None:
            continue
        pointer = "/data/attributes/" + key.replace("_", "-")
        if key == "execution_mode" and value not in EXECUTION_MODES:
            raise Unprocessable(
                f"execution-mode must be one of {', '.join(EXECUTION_MODES)}"
                + (" (agent pools are not supported)" if value == "agent" else ""),
                pointer=pointer,
            )
        if key == "terraform_version" and not (0 < len(value) <= 64):
            raise Unprocessable("terraform-version must be 1 to 64 characters", pointer=pointer)
        if isinstance(value, str) and key != "description" and len(value) > MAX_TEXT:
            raise Unprocessable(f"{pointer.rsplit('/', 1)[1]} is too long", pointer=pointer)
        out[key] = value
    return out


# ----- reading ------------------------------------------------------------------------------


def _get(workspace_id: str) -> WorkspaceModel | None:
    try:
        return WorkspaceModel.get(workspace_id, consistent_read=True)
    except WorkspaceModel.DoesNotExist:
        return None


def _by_name(organization: str, name: str) -> WorkspaceModel | None:
    try:
        claim = WorkspaceNameModel.get(organization, name, consistent_read=True)
    except WorkspaceNameModel.DoesNotExist:
        return None
    return _get(claim.workspace_id)


def find(ref: WorkspaceRef) -> WorkspaceModel | None:
    """The workspace (not being deleted) or None; no permission check."""
    if ref.id:
        workspace = _get(ref.id)
    else:
        assert ref.organization and ref.name
        workspace = _by_name(ref.organization, ref.name)
    if workspace is None or workspace.deleting:
        return None
    return workspace


def readable(principal: Principal, ref: WorkspaceRef) -> tuple[WorkspaceModel, accounts.OrgAccess]:
    if ref.organization:
        rights = accounts.organization_access(principal, ref.organization)
        workspace = find(ref)
    else:
        workspace = find(ref)
        rights = accounts.access(principal, workspace.organization) if workspace else None
    if workspace is None or rights is None or not rights.can_read:
        raise NotFound(f"workspace {ref.describe()} not found")
    return workspace, rights


def manageable(
    principal: Principal, ref: WorkspaceRef
) -> tuple[WorkspaceModel, accounts.OrgAccess]:
    workspace, rights = readable(principal, ref)
    if not rights.manage_workspaces:
        raise NotFound(
            f"workspace {ref.describe()} not found, or your token lacks manage-workspaces"
        )
    return workspace, rights


def require_manage(principal: Principal, organization: str) -> accounts.OrgAccess:
    rights = accounts.organization_access(principal, organization)
    if not rights.manage_workspaces:
        raise NotFound(
            f"organization {organization!r} not found, or your token lacks manage-workspaces"
        )
    return rights


def list_workspaces(
    principal: Principal, organization: str, query: dict[str, str]
) -> tuple[list[WorkspaceModel], accounts.OrgAccess]:
    rights = accounts.organization_access(principal, organization)
    items = [w for w in WorkspaceModel.by_organization.query(organization) if not w.deleting]
    if needle := (query.get("search[name]") or "").lower():
        items = [w for w in items if needle in w.name.lower()]
    wanted = _names(query.get("search[tags]"))
    unwanted = _names(query.get("search[exclude-tags]"))
    if wanted or unwanted:

        def names(w: WorkspaceModel) -> set[str]:
            return {name for _, name in tag_entries(w)}

        items = [w for w in items if wanted <= names(w) and not (unwanted & names(w))]
    return items, rights


def _names(raw: str | None) -> set[str]:
    return {part.strip() for part in (raw or "").split(",") if part.strip()}


def workspaces_by_ids(ids: list[str]) -> dict[str, WorkspaceModel]:
    found = WorkspaceModel.batch_get(list(dict.fromkeys(ids)), consistent_read=True)
    return {w.id: w for w in found if not w.deleting}


# ----- writing ------------------------------------------------------------------------------


def create_workspace(
    principal: Principal, organization: str, name: Any, settings: dict[str, Any]
) -> WorkspaceModel:
    require_manage(principal, organization)
    name = validate_name(name)
    values = clean_settings(settings)
    moment = now()
    workspace = WorkspaceModel(
        new_id("ws"), organization=organization, name=name, created_at=moment, updated_at=moment
    )
    for key, value in values.items():
        setattr(workspace, key, value)
    try:
        with TransactWrite(connection=db.connection()) as tx:
            tx.save(
                WorkspaceNameModel(organization, name, workspace_id=workspace.id),
                condition=WorkspaceNameModel.name.does_not_exist(),
            )
            tx.save(workspace, condition=WorkspaceModel.id.does_not_exist())
    except TransactWriteError as exc:  # sent as: put claim, put workspace
        if db.cancellation_codes(exc)[:1] == [db.TRANSACTION_CONDITION_FAILED]:
            raise Unprocessable(
                "name has already been taken", pointer="/data/attributes/name"
            ) from None
        raise
    return workspace


def update_workspace(
    principal: Principal, ref: WorkspaceRef, new_name: Any, settings: dict[str, Any]
) -> WorkspaceModel:
    workspace, _ = manageable(principal, ref)
    values = clean_settings(settings)
    if new_name is not None:
        new_name = validate_name(new_name)
    actions = [getattr(WorkspaceModel, key).set(value) for key, value in values.items()]
    actions.append(WorkspaceModel.updated_at.set(now()))
    alive = WorkspaceModel.id.exists() & WorkspaceModel.deleting.does_not_exist()
    if new_name is None or new_name == workspace.name:
        try:
            workspace.update(actions=actions, condition=alive)
        except UpdateError as exc:
            if db.conditional_failure(exc):
                raise NotFound(f"workspace {ref.describe()} not found") from None
            raise
        return workspace
    old = workspace.name
    actions.append(WorkspaceModel.name.set(new_name))
    try:
        with TransactWrite(connection=db.connection()) as tx:
            tx.save(
                WorkspaceNameModel(workspace.organization, new_name, workspace_id=workspace.id),
                condition=WorkspaceNameModel.name.does_not_exist(),
            )
            tx.delete(
                WorkspaceNameModel(workspace.organization, old),
                condition=WorkspaceNameModel.workspace_id == workspace.id,
            )
            tx.update(workspace, actions=actions, condition=alive & (WorkspaceModel.name == old))
    except TransactWriteError as exc:
        codes = db.cancellation_codes(exc)  # sent as: delete old claim, put new claim, update
        if codes[1:2] == [db.TRANSACTION_CONDITION_FAILED]:
            raise Unprocessable(
                "name has already been taken", pointer="/data/attributes/name"
            ) from None
        if db.TRANSACTION_CONDITION_FAILED in codes:
            raise Conflict("the workspace changed concurrently; try again") from None
        raise
    return _get(workspace.id) or workspace


def all_in_organization(organization: str) -> list[WorkspaceModel]:
    """Every workspace of the organization, those being deleted included."""
    return list(WorkspaceModel.by_organization.query(organization))


def fence(workspace: WorkspaceModel) -> bool:
    """Mark the workspace as being deleted, so no new tag lands on it; False when it is
    already gone. The first step of deleting it (``lifecycle.destroy_workspace``)."""
    try:
        workspace.update(
            actions=[WorkspaceModel.deleting.set(True)], condition=WorkspaceModel.id.exists()
        )
    except UpdateError as exc:
        if db.conditional_failure(exc):
            return False
        raise
    return True


def remove(workspace: WorkspaceModel) -> None:
    """Delete a fenced workspace (its tags detached) and its name."""
    with TransactWrite(connection=db.connection()) as tx:
        tx.delete(workspace)
        tx.delete(
            WorkspaceNameModel(workspace.organization, workspace.name),
            condition=WorkspaceNameModel.workspace_id == workspace.id,
        )


# ----- the workspace side of tag transactions -----------------------------------------------


def tx_attach_tag(tx: TransactWrite, workspace_id: str, tag_id: str, tag_name: str) -> None:
    """Record the tag on the workspace; fails the transaction if the workspace is gone or
    being deleted."""
    tx.update(
        WorkspaceModel(workspace_id),
        actions=[WorkspaceModel.tags[tag_id].set({"name": tag_name, "seq": time.time_ns()})],
        condition=WorkspaceModel.id.exists() & WorkspaceModel.deleting.does_not_exist(),
    )


def tx_detach_tag(tx: TransactWrite, workspace_id: str, tag_id: str) -> None:
    tx.update(
        WorkspaceModel(workspace_id),
        actions=[WorkspaceModel.tags[tag_id].remove()],
        condition=WorkspaceModel.id.exists(),
    )
