"""PynamoDB models of workspaces.

A workspace item is keyed by its id (``ws-...``): every read and every tag transaction
addresses it directly. Its name is claimed by a second item keyed by (organization, name),
written in the same transaction as the workspace, so names are unique per organization
without reading an index. Listing an organization's workspaces is one Query on the
``by-organization`` index, name-ordered.

``tags`` maps tag id -> ``{"name": ..., "seq": ...}`` (``seq`` = insertion order). It is
changed only in the transactions that also write the tag relationship item and the tag's
``instance-count`` (see chalicelib/tags/store.py), so it never disagrees with them.
"""

from __future__ import annotations

import time
from typing import Any

from pynamodb.attributes import (
    BooleanAttribute,
    ListAttribute,
    MapAttribute,
    UnicodeAttribute,
    UTCDateTimeAttribute,
)
from pynamodb.exceptions import TransactWriteError, UpdateError
from pynamodb.expressions.condition import Condition
from pynamodb.expressions.update import Action
from pynamodb.indexes import AllProjection, GlobalSecondaryIndex
from pynamodb.transactions import TransactWrite

from chalicelib.core import db


class WorkspacesByOrganization(GlobalSecondaryIndex):
    class Meta:
        index_name = "by-organization"
        projection = AllProjection()

    organization = UnicodeAttribute(hash_key=True)
    name = UnicodeAttribute(range_key=True)


@db.register
class WorkspaceModel(db.Model):
    Meta = db.table("workspaces")

    id = UnicodeAttribute(hash_key=True)
    organization = UnicodeAttribute()
    name = UnicodeAttribute()
    description = UnicodeAttribute(null=True)
    auto_apply = BooleanAttribute(default=False)
    allow_destroy_plan = BooleanAttribute(default=True)
    assessments_enabled = BooleanAttribute(default=False)
    execution_mode = UnicodeAttribute(default="remote")
    file_triggers_enabled = BooleanAttribute(default=True)
    global_remote_state = BooleanAttribute(default=False)
    queue_all_runs = BooleanAttribute(default=False)
    speculative_enabled = BooleanAttribute(default=True)
    structured_run_output_enabled = BooleanAttribute(default=True)
    terraform_version = UnicodeAttribute(default="latest")
    working_directory = UnicodeAttribute(default="")
    source_name = UnicodeAttribute(null=True)
    source_url = UnicodeAttribute(null=True)
    trigger_prefixes = ListAttribute(of=UnicodeAttribute, default=list)
    trigger_patterns = ListAttribute(of=UnicodeAttribute, default=list)
    locked = BooleanAttribute(default=False)
    tags = MapAttribute(default=dict)
    # Set while the workspace is being deleted: no tag can be added from then on.
    deleting = BooleanAttribute(null=True)
    created_at = UTCDateTimeAttribute()
    updated_at = UTCDateTimeAttribute()
    by_organization = WorkspacesByOrganization()


@db.register
class WorkspaceNameModel(db.Model):
    """The claim of a workspace name in an organization: (organization, name) -> id."""

    Meta = db.table("workspace-names")

    organization = UnicodeAttribute(hash_key=True)
    name = UnicodeAttribute(range_key=True)
    workspace_id = UnicodeAttribute()


def tag_entries(workspace: WorkspaceModel) -> list[tuple[str, str]]:
    """(tag id, tag name) of the workspace's tags in insertion order."""
    raw = workspace.tags.as_dict() if workspace.tags else {}
    ordered = sorted(raw.items(), key=lambda kv: (int(kv[1].get("seq", 0)), kv[0]))
    return [(tag_id, str(entry["name"])) for tag_id, entry in ordered]


# ----- writes -------------------------------------------------------------------------------


class NameTaken(Exception):
    """Another workspace of the organization holds the name."""


def _alive() -> Condition:
    """The condition of every change to a workspace but deleting it: exists, not fenced."""
    return WorkspaceModel.id.exists() & WorkspaceModel.deleting.does_not_exist()


def _set(values: dict[str, Any]) -> list[Action]:
    return [getattr(WorkspaceModel, key).set(value) for key, value in values.items()]


def insert(workspace: WorkspaceModel) -> None:
    """Claim the workspace's name and put the workspace, in one transaction.

    Raises NameTaken when the name is claimed already."""
    organization, name = workspace.organization, workspace.name
    try:
        with TransactWrite(connection=db.connection()) as tx:
            tx.save(
                WorkspaceNameModel(organization, name, workspace_id=workspace.id),
                condition=WorkspaceNameModel.name.does_not_exist(),
            )
            tx.save(workspace, condition=WorkspaceModel.id.does_not_exist())
    except TransactWriteError as exc:  # sent as: put claim, put workspace
        if db.cancellation_codes(exc)[:1] == [db.TRANSACTION_CONDITION_FAILED]:
            raise NameTaken(name) from None
        raise


def update(workspace: WorkspaceModel, values: dict[str, Any]) -> bool:
    """Set ``values`` (attribute name -> value) on the workspace, refreshed in place. False
    when it is gone or being deleted."""
    try:
        workspace.update(actions=_set(values), condition=_alive())
    except UpdateError as exc:
        if db.conditional_failure(exc):
            return False
        raise
    return True


def rename(workspace: WorkspaceModel, new_name: str, values: dict[str, Any]) -> bool:
    """Move the workspace to ``new_name`` (claim it, release the old claim) and set
    ``values``, in one transaction; ``workspace`` itself is not refreshed.

    Raises NameTaken when the new name is claimed already; False when the workspace changed
    meanwhile (gone, being deleted, or renamed by someone else)."""
    old = workspace.name
    actions = [*_set(values), WorkspaceModel.name.set(new_name)]
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
            tx.update(workspace, actions=actions, condition=_alive() & (WorkspaceModel.name == old))
    except TransactWriteError as exc:
        codes = db.cancellation_codes(exc)  # sent as: delete old claim, put new claim, update
        if codes[1:2] == [db.TRANSACTION_CONDITION_FAILED]:
            raise NameTaken(new_name) from None
        if db.TRANSACTION_CONDITION_FAILED in codes:
            return False
        raise
    return True


def fence(workspace: WorkspaceModel) -> bool:
    """Mark the workspace as being deleted; False when it is already gone."""
    try:
        workspace.update(
            actions=[WorkspaceModel.deleting.set(True)], condition=WorkspaceModel.id.exists()
        )
    except UpdateError as exc:
        if db.conditional_failure(exc):
            return False
        raise
    return True


def delete(workspace: WorkspaceModel) -> None:
    """Delete the workspace and release its name (if the claim is still its own)."""
    with TransactWrite(connection=db.connection()) as tx:
        tx.delete(workspace)
        tx.delete(
            WorkspaceNameModel(workspace.organization, workspace.name),
            condition=WorkspaceNameModel.workspace_id == workspace.id,
        )


# ----- the workspace side of tag transactions (built by chalicelib/tags/store.py) -----------


def tx_attach_tag(tx: TransactWrite, workspace_id: str, tag_id: str, tag_name: str) -> None:
    """Record the tag on the workspace; fails the transaction if the workspace is gone or
    being deleted."""
    tx.update(
        WorkspaceModel(workspace_id),
        actions=[WorkspaceModel.tags[tag_id].set({"name": tag_name, "seq": time.time_ns()})],
        condition=_alive(),
    )


def tx_detach_tag(tx: TransactWrite, workspace_id: str, tag_id: str) -> None:
    """Drop the tag from the workspace's map; fails the transaction if the workspace is gone
    (a fenced one still loses its tags)."""
    tx.update(
        WorkspaceModel(workspace_id),
        actions=[WorkspaceModel.tags[tag_id].remove()],
        condition=WorkspaceModel.id.exists(),
    )
