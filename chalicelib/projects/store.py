"""PynamoDB models of projects, and every conditional write on them.

A project item is keyed by its id (``prj-...``). Its name is claimed, case-insensitively, by a
second item keyed by (organization, lower-cased name), written in the same transaction as the
project, so names are unique per organization without reading an index. The claims are
also the list's lean index (``chalicelib.core.data.lists``): in the list's order, about 70 bytes
each, with a count per organization kept by the transactions that create and delete projects.

``workspace_count`` is exact: it changes only in the transactions that create, move or delete
a workspace (chalicelib/workspaces/store.py adds the project's side through
``tx_add_workspace`` / ``tx_remove_workspace``), and a project is deleted only on the
condition that it is 0, so a project never disappears under its workspaces.

The organization's default project has an id derived from the organization's ``org-`` id
(``default_id``), so it is found with one consistent GetItem and created lazily, at most once.

A person's change (create, update, rename, delete) carries its audit event (``core.audit``)
in its own transaction, added last: the change and its event are written together or not at
all, and the change's items keep their places in a cancellation's reasons.
"""

from __future__ import annotations

from typing import Any

from pynamodb.attributes import (
    BooleanAttribute,
    NumberAttribute,
    UnicodeAttribute,
    UTCDateTimeAttribute,
)
from pynamodb.exceptions import DeleteError, TransactWriteError
from pynamodb.expressions.condition import Condition
from pynamodb.expressions.update import Action
from pynamodb.indexes import AllProjection, GlobalSecondaryIndex
from pynamodb.transactions import TransactWrite

from chalicelib.core.audit import trail
from chalicelib.core.audit.events import Event
from chalicelib.core.data import db, lists
from chalicelib.core.tagbindings import TagBindingsAttribute


class ProjectsByOrganization(GlobalSecondaryIndex):
    class Meta:
        index_name = "by-organization"
        projection = AllProjection()

    organization = UnicodeAttribute(hash_key=True)
    name = UnicodeAttribute(range_key=True)


@db.register
class ProjectModel(db.Model):
    Meta = db.table("projects")

    id = UnicodeAttribute(hash_key=True)
    organization = UnicodeAttribute()
    name = UnicodeAttribute()
    description = UnicodeAttribute(null=True)
    default_execution_mode = UnicodeAttribute(default="remote")
    auto_destroy_activity_duration = UnicodeAttribute(null=True)
    is_default = BooleanAttribute(default=False)
    workspace_count = NumberAttribute(default=0)
    tag_bindings = TagBindingsAttribute()
    created_at = UTCDateTimeAttribute()
    updated_at = UTCDateTimeAttribute()
    by_organization = ProjectsByOrganization()


@db.register
class ProjectNameModel(db.Model):
    """The claim of a project name in an organization: (organization, lower-cased name) -> id."""

    Meta = db.table("project-names")

    organization = UnicodeAttribute(hash_key=True)
    name = UnicodeAttribute(range_key=True)
    project_id = UnicodeAttribute()


class NameTaken(Exception):
    """Another project of the organization holds the name."""


class Refused(Exception):
    """The project still has workspaces, or is the organization's default project."""


def claim_key(name: str) -> str:
    return name.casefold()


def count_scope(organization: str) -> str:
    """The kept count of an organization's projects (``chalicelib.core.data.lists``), part
    ``all``: changed in the transactions that create and delete a project."""
    return f"projects#{organization}"


def project_count(organization: str) -> int | None:
    """None when no count is kept yet (before the backfill)."""
    return lists.counts(count_scope(organization)).get(lists.ALL)


def backfill_counts() -> dict[str, int]:
    """Every organization's kept count of projects from a Scan, written where it differs (a
    second run writes nothing)."""
    counted: dict[str, int] = {}
    for item in lists.CountModel.scan():
        if item.scope.startswith("projects#"):
            counted.setdefault(item.scope.removeprefix("projects#"), 0)
    for project in ProjectModel.scan():
        counted[project.organization] = counted.get(project.organization, 0) + 1
    report = {"organizations": len(counted), "counts written": 0}
    for organization, count in counted.items():
        if project_count(organization) != count:
            lists.set_counts(count_scope(organization), {lists.ALL: count})
            report["counts written"] += 1
    return report


def get(project_id: str) -> ProjectModel | None:
    try:
        return ProjectModel.get(project_id, consistent_read=True)
    except ProjectModel.DoesNotExist:
        return None


def get_many(project_ids: list[str]) -> dict[str, ProjectModel]:
    wanted = list(dict.fromkeys(project_ids))
    if not wanted:
        return {}
    return {p.id: p for p in ProjectModel.batch_get(wanted, consistent_read=True)}


def in_organization(organization: str) -> list[ProjectModel]:
    return list(ProjectModel.by_organization.query(organization))


def _set(values: dict[str, Any]) -> list[Action]:
    return [getattr(ProjectModel, key).set(value) for key, value in values.items()]


def insert(project: ProjectModel, event: Event | None) -> None:
    """Claim the name and put the project, with its event (None: the default project, no
    one's change), in one transaction. Raises NameTaken; a project that exists already (the
    default one, created concurrently) raises ``Refused``."""
    claim = ProjectNameModel(project.organization, claim_key(project.name), project_id=project.id)
    try:
        with TransactWrite(connection=db.connection()) as tx:
            tx.save(claim, condition=ProjectNameModel.name.does_not_exist())
            tx.save(project, condition=ProjectModel.id.does_not_exist())
            lists.count_update(tx, count_scope(project.organization), lists.ALL, 1)
            if event is not None:
                trail.record_in(tx, event)
    except TransactWriteError as exc:  # sent as: put claim, put project, update count
        codes = db.cancellation_codes(exc)
        if codes[1:2] == [db.TRANSACTION_CONDITION_FAILED]:
            raise Refused(project.id) from None
        if codes[:1] == [db.TRANSACTION_CONDITION_FAILED]:
            raise NameTaken(project.name) from None
        raise


def update(
    project: ProjectModel, values: dict[str, Any], event: Event, *, expected: Any = None
) -> bool:
    """Set ``values`` on the project (and on ``project``) with the change's event, in one
    transaction. ``expected``: the ``updated_at`` the caller read (an optimistic lock for
    read-modify-write changes). False, and nothing written, when the project is gone, or
    changed since."""
    condition: Condition = ProjectModel.id.exists()
    if expected is not None:
        condition &= ProjectModel.updated_at == expected
    try:
        with TransactWrite(connection=db.connection()) as tx:
            tx.update(project, actions=_set(values), condition=condition)
            trail.record_in(tx, event)
    except TransactWriteError as exc:
        if db.cancellation_codes(exc)[:1] == [db.TRANSACTION_CONDITION_FAILED]:
            return False
        raise
    for key, value in values.items():
        setattr(project, key, value)
    return True


def rename(project: ProjectModel, new_name: str, values: dict[str, Any], event: Event) -> bool:
    """Claim ``new_name``, release the old claim and set ``values`` (with the name), with
    the change's event, in one transaction. Raises NameTaken; False when the project changed
    meanwhile."""
    old = project.name
    actions = [*_set(values), ProjectModel.name.set(new_name)]
    try:
        with TransactWrite(connection=db.connection()) as tx:
            tx.save(
                ProjectNameModel(project.organization, claim_key(new_name), project_id=project.id),
                condition=ProjectNameModel.name.does_not_exist(),
            )
            tx.delete(
                ProjectNameModel(project.organization, claim_key(old)),
                condition=ProjectNameModel.project_id == project.id,
            )
            tx.update(
                project,
                actions=actions,
                condition=ProjectModel.id.exists() & (ProjectModel.name == old),
            )
            trail.record_in(tx, event)
    except TransactWriteError as exc:
        codes = db.cancellation_codes(exc)  # sent as: delete old claim, put new claim, update
        if codes[1:2] == [db.TRANSACTION_CONDITION_FAILED]:
            raise NameTaken(new_name) from None
        if db.TRANSACTION_CONDITION_FAILED in codes:
            return False
        raise
    return True


def delete(project: ProjectModel, event: Event) -> bool:
    """Delete the project and its name claim, with the change's event, on the condition
    that it holds no workspace and is not the default project. Raises Refused then; False
    when it is gone already."""
    try:
        with TransactWrite(connection=db.connection()) as tx:
            tx.delete(
                project,
                condition=ProjectModel.id.exists()
                & (ProjectModel.workspace_count == 0)
                & (ProjectModel.is_default == False),  # noqa: E712 - a condition, not a test
            )
            tx.delete(
                ProjectNameModel(project.organization, claim_key(project.name)),
                condition=ProjectNameModel.project_id == project.id,
            )
            lists.count_update(tx, count_scope(project.organization), lists.ALL, -1)
            trail.record_in(tx, event)
    except TransactWriteError as exc:  # sent as: delete project, delete claim, update count
        if db.TRANSACTION_CONDITION_FAILED in db.cancellation_codes(exc)[:1]:
            if get(project.id) is None:
                return False
            raise Refused(project.id) from None
        raise
    return True


def purge(project: ProjectModel) -> None:
    """Delete the project and its claim whatever they hold (deleting the organization),
    counting one less if it was there."""
    try:
        with TransactWrite(connection=db.connection()) as tx:
            tx.delete(project, condition=ProjectModel.id.exists())
            lists.count_update(tx, count_scope(project.organization), lists.ALL, -1)
    except TransactWriteError as exc:
        if db.cancellation_codes(exc)[:1] != [db.TRANSACTION_CONDITION_FAILED]:
            raise
    try:
        ProjectNameModel(project.organization, claim_key(project.name)).delete(
            condition=ProjectNameModel.project_id == project.id
        )
    except DeleteError as exc:
        if not db.conditional_failure(exc):
            raise


# ----- the project side of workspace transactions (built by chalicelib/workspaces/store.py) --


def tx_add_workspace(tx: TransactWrite, project_id: str, organization: str) -> None:
    """Count one more workspace in the project; fails the transaction unless the project
    exists in ``organization``."""
    tx.update(
        ProjectModel(project_id),
        actions=[ProjectModel.workspace_count.add(1)],
        condition=ProjectModel.id.exists() & (ProjectModel.organization == organization),
    )


def tx_remove_workspace(tx: TransactWrite, project_id: str) -> None:
    """Count one workspace less; fails the transaction if the project is gone."""
    tx.update(
        ProjectModel(project_id),
        actions=[ProjectModel.workspace_count.add(-1)],
        condition=ProjectModel.id.exists(),
    )
