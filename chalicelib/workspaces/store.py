"""PynamoDB models of workspaces.

A workspace item is keyed by its id (``ws-...``): every read and every tag transaction
addresses it directly. Its name is claimed by a second item keyed by (organization, name),
written in the same transaction as the workspace, so names are unique per organization
without reading an index. Listing an organization's workspaces is one Query on the
``by-organization`` index, name-ordered.

``tags`` maps tag id -> ``{"name": ..., "seq": ...}`` (``seq`` = insertion order). It is
changed only in the transactions that also write the tag relationship item and the tag's
``instance-count`` (see chalicelib/tags/store.py), so it never disagrees with them.

``project_id`` is the project the workspace belongs to; it is set, and changed, only in the
transactions that also count the workspace in that project (``projects.tx_add_workspace`` /
``tx_remove_workspace``). Workspaces created before projects existed have none: they belong
to the organization's default project without being counted in it. ``tag_bindings`` are the
workspace's own key/value tags (chalicelib/core/tagbindings.py).
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

from chalicelib.core.audit import trail
from chalicelib.core.audit.events import Event
from chalicelib.core.data import db, lists
from chalicelib.core.tagbindings import TagBindingsAttribute
from chalicelib.projects import service as projects


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
    tags: MapAttribute[str, Any] = MapAttribute(default=dict)
    project_id = UnicodeAttribute(null=True)
    tag_bindings = TagBindingsAttribute()
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


# ----- reads --------------------------------------------------------------------------------


def get(workspace_id: str) -> WorkspaceModel | None:
    try:
        return WorkspaceModel.get(workspace_id, consistent_read=True)
    except WorkspaceModel.DoesNotExist:
        return None


def by_name(organization: str, name: str) -> WorkspaceModel | None:
    """The workspace holding the name claim (strongly consistent)."""
    try:
        claim = WorkspaceNameModel.get(organization, name, consistent_read=True)
    except WorkspaceNameModel.DoesNotExist:
        return None
    return get(claim.workspace_id)


def by_ids(ids: list[str], *, consistent_read: bool = False) -> list[WorkspaceModel]:
    """The workspaces of these ids (one BatchGet, duplicates read once); unknown ids are
    left out."""
    unique = list(dict.fromkeys(ids))
    return list(WorkspaceModel.batch_get(unique, consistent_read=consistent_read)) if unique else []


def of_organization(organization: str) -> list[WorkspaceModel]:
    """Every workspace of the organization (those being deleted too), name-ordered."""
    return list(WorkspaceModel.by_organization.query(organization))


# ----- writes -------------------------------------------------------------------------------


class NameTaken(Exception):
    """Another workspace of the organization holds the name."""


class ProjectGone(Exception):
    """The project the workspace was to go to does not exist (any more) in its organization."""


def count_scope(organization: str) -> str:
    """The kept count of an organization's workspaces (``chalicelib.core.data.lists``), part
    ``all``: changed in the transactions that create and delete a workspace."""
    return f"workspaces#{organization}"


def workspace_count(organization: str) -> int | None:
    """None when no count is kept yet (before the backfill)."""
    return lists.counts(count_scope(organization)).get(lists.ALL)


def backfill_counts() -> dict[str, int]:
    """Every organization's kept count of workspaces from a Scan, written where it differs
    (a second run writes nothing)."""
    counted: dict[str, int] = {}
    for item in lists.CountModel.scan():
        if item.scope.startswith("workspaces#"):
            counted.setdefault(item.scope.removeprefix("workspaces#"), 0)
    for workspace in WorkspaceModel.scan():
        counted[workspace.organization] = counted.get(workspace.organization, 0) + 1
    report = {"organizations": len(counted), "counts written": 0}
    for organization, count in counted.items():
        if workspace_count(organization) != count:
            lists.set_counts(count_scope(organization), {lists.ALL: count})
            report["counts written"] += 1
    return report


def _alive() -> Condition:
    """The condition of every change to a workspace but deleting it: exists, not fenced."""
    return WorkspaceModel.id.exists() & WorkspaceModel.deleting.does_not_exist()


def _set(values: dict[str, Any]) -> list[Action]:
    return [getattr(WorkspaceModel, key).set(value) for key, value in values.items()]


def insert(workspace: WorkspaceModel, event: Event) -> None:
    """Claim the workspace's name, put the workspace and count it in its project, with the
    change's audit event (added last), in one transaction.

    Raises NameTaken when the name is claimed already, ProjectGone when the project does not
    exist in the workspace's organization."""
    organization, name = workspace.organization, workspace.name
    try:
        with TransactWrite(connection=db.connection()) as tx:
            tx.save(
                WorkspaceNameModel(organization, name, workspace_id=workspace.id),
                condition=WorkspaceNameModel.name.does_not_exist(),
            )
            tx.save(workspace, condition=WorkspaceModel.id.does_not_exist())
            if workspace.project_id:
                projects.tx_add_workspace(tx, workspace.project_id, organization)
            lists.count_update(tx, count_scope(organization), lists.ALL, 1)
            trail.record_in(tx, event)
    # sent as: put claim, put workspace, update project, update count (no condition), event
    except TransactWriteError as exc:
        codes = db.cancellation_codes(exc)
        if codes[:1] == [db.TRANSACTION_CONDITION_FAILED]:
            raise NameTaken(name) from None
        if codes[2:3] == [db.TRANSACTION_CONDITION_FAILED]:
            raise ProjectGone(workspace.project_id) from None
        raise


def update(
    workspace: WorkspaceModel, values: dict[str, Any], event: Event, *, expected: Any = None
) -> bool:
    """Set ``values`` (attribute name -> value) on the workspace (and on ``workspace``) with
    the change's audit event, in one transaction. False, and nothing written, when it is gone
    or being deleted, or (``expected``: the ``updated_at`` the caller read, an optimistic lock
    for read-modify-write changes) changed since."""
    condition = _alive()
    if expected is not None:
        condition &= WorkspaceModel.updated_at == expected
    try:
        with TransactWrite(connection=db.connection()) as tx:
            tx.update(workspace, actions=_set(values), condition=condition)
            trail.record_in(tx, event)
    except TransactWriteError as exc:
        if db.cancellation_codes(exc)[:1] == [db.TRANSACTION_CONDITION_FAILED]:
            return False
        raise
    for key, value in values.items():
        setattr(workspace, key, value)
    return True


def change(
    workspace: WorkspaceModel,
    values: dict[str, Any],
    event: Event,
    *,
    new_name: str | None = None,
    new_project: str | None = None,
) -> bool:
    """Set ``values`` and rename the workspace (claim ``new_name``, release the old claim)
    and/or move it to ``new_project`` (count it there, no longer in its old project), all in
    one transaction with the change's audit event; ``workspace`` itself is not refreshed.

    Raises NameTaken when the new name is claimed already, ProjectGone when the new project
    does not exist in the organization; False when the workspace changed meanwhile (gone,
    being deleted, renamed or moved by someone else)."""
    organization, old_name, old_project = (
        workspace.organization,
        workspace.name,
        workspace.project_id,
    )
    actions = _set(values)
    condition = _alive() & (WorkspaceModel.name == old_name)
    if new_name is not None:
        actions.append(WorkspaceModel.name.set(new_name))
    if new_project is not None:
        actions.append(WorkspaceModel.project_id.set(new_project))
        condition &= (
            WorkspaceModel.project_id == old_project
            if old_project
            else WorkspaceModel.project_id.does_not_exist()
        )
    try:
        with TransactWrite(connection=db.connection()) as tx:
            if new_name is not None:
                tx.save(
                    WorkspaceNameModel(organization, new_name, workspace_id=workspace.id),
                    condition=WorkspaceNameModel.name.does_not_exist(),
                )
                tx.delete(
                    WorkspaceNameModel(organization, old_name),
                    condition=WorkspaceNameModel.workspace_id == workspace.id,
                )
            tx.update(workspace, actions=actions, condition=condition)
            if new_project is not None:
                if old_project:
                    projects.tx_remove_workspace(tx, old_project)
                projects.tx_add_workspace(tx, new_project, organization)
            trail.record_in(tx, event)
    except TransactWriteError as exc:
        # sent as: [delete old claim], [put new claim], update workspace, [old project],
        # [new project], the event
        codes = db.cancellation_codes(exc)
        failed = db.TRANSACTION_CONDITION_FAILED
        if new_name is not None and codes[1:2] == [failed]:
            raise NameTaken(new_name) from None
        if new_project is not None and codes[-2:-1] == [failed]:
            workspace_at = 2 if new_name is not None else 0
            if codes[workspace_at] != failed:
                raise ProjectGone(new_project) from None
        if failed in codes:
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


def delete(workspace: WorkspaceModel, event: Event | None) -> None:
    """Delete the workspace, release its name (if the claim is still its own) and count it
    out of its project, with the change's audit event (None: part of its organization's
    delete). A project already gone (an interrupted organization delete) is left out rather
    than keeping the workspace."""
    project_id = workspace.project_id
    try:
        _delete(workspace, project_id, event)
    except TransactWriteError as exc:  # sent as: delete workspace, delete claim, project
        if not project_id or db.cancellation_codes(exc)[2:3] != [db.TRANSACTION_CONDITION_FAILED]:
            raise
        _delete(workspace, None, event)


def _delete(workspace: WorkspaceModel, project_id: str | None, event: Event | None) -> None:
    with TransactWrite(connection=db.connection()) as tx:
        tx.delete(workspace)
        tx.delete(
            WorkspaceNameModel(workspace.organization, workspace.name),
            condition=WorkspaceNameModel.workspace_id == workspace.id,
        )
        if project_id:
            projects.tx_remove_workspace(tx, project_id)
        # Last (updates are sent after the deletes, this after the project's): the claim's
        # condition makes it count a workspace only once.
        lists.count_update(tx, count_scope(workspace.organization), lists.ALL, -1)
        if event is not None:
            trail.record_in(tx, event)


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
