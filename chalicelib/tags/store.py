"""PynamoDB models of organization tags and of the workspace-tag relationships.

* ``tags``: (organization, name) -> id, created-at, ``instance_count``. The key makes a name
  unique per organization (creates are conditional) and listing an organization's tags one
  Query on its partition, name-ordered.
* ``tag-ids``: id -> (organization, name), for the routes addressed by tag id.
* ``tag-workspaces``: one item per (tag id, workspace id) pair: the workspaces of a tag are
  one Query on the tag's partition (strongly consistent, so a bulk delete sees every pair).

``instance_count`` is exact because it only changes inside a transaction that also puts or
deletes the pair item under a condition (the pair must not exist / must exist), and updates
the workspace's ``tags`` map. A tag whose count would reach 0 is deleted in that same
transaction (TFE drops tags no longer on any workspace), so a listed tag always has
``instance-count >= 1``.

The writes below report the outcome of their conditions (False, or ``Cancelled`` naming the
items whose condition failed); what to make of it (retry, 404, no-op) is the service's call.
"""

from __future__ import annotations

from collections.abc import Callable

from pynamodb.attributes import (
    BooleanAttribute,
    NumberAttribute,
    UnicodeAttribute,
    UTCDateTimeAttribute,
)
from pynamodb.exceptions import TransactWriteError, UpdateError
from pynamodb.transactions import TransactWrite

from chalicelib.core.audit import trail
from chalicelib.core.audit.events import Event
from chalicelib.core.data import db, lists
from chalicelib.core.data.ids import new_id, now
from chalicelib.workspaces import service as workspaces

RETRYABLE = ("TransactionConflict", "ThrottlingError", "ProvisionedThroughputExceeded")


def count_scope(organization: str) -> str:
    """The kept count of an organization's tags (``chalicelib.core.data.lists``), part ``all``:
    one more in the transaction that creates a tag, one less in each that deletes one."""
    return f"tags#{organization}"


def count_tags() -> dict[str, int]:
    """Every organization's tags counted by a Scan (the backfill; never a request), with
    the organizations whose kept count is set."""
    counted: dict[str, int] = {}
    for item in lists.CountModel.scan():
        if item.scope.startswith("tags#"):
            counted.setdefault(item.scope.removeprefix("tags#"), 0)
    for tag in TagModel.scan():
        counted[tag.organization] = counted.get(tag.organization, 0) + 1
    return counted


def backfill_counts() -> dict[str, int]:
    """Set every organization's kept count of tags from a Scan where it differs (a second
    run writes nothing); a tag created or deleted meanwhile can leave it off by one, which
    the next run corrects."""
    report = {"organizations": 0, "counts written": 0}
    for organization, count in count_tags().items():
        report["organizations"] += 1
        if tag_count(organization) != count:  # None (not kept) differs from any count
            set_count(organization, count)
            report["counts written"] += 1
    return report


def set_count(organization: str, count: int) -> None:
    lists.set_counts(count_scope(organization), {lists.ALL: count})


def tag_count(organization: str) -> int | None:
    """The organization's kept count of tags; None when none is kept (no tag was created
    since counts were kept, and the backfill has not run)."""
    return lists.counts(count_scope(organization)).get(lists.ALL)


@db.register
class TagModel(db.Model):
    Meta = db.table("tags")

    organization = UnicodeAttribute(hash_key=True)
    name = UnicodeAttribute(range_key=True)
    id = UnicodeAttribute()
    instance_count = NumberAttribute(default=0)
    # Set by a bulk delete before it detaches the tag: no workspace can be added from then on.
    deleting = BooleanAttribute(null=True)
    created_at = UTCDateTimeAttribute()


@db.register
class TagIdModel(db.Model):
    Meta = db.table("tag-ids")

    id = UnicodeAttribute(hash_key=True)
    organization = UnicodeAttribute()
    name = UnicodeAttribute()


@db.register
class TagWorkspaceModel(db.Model):
    Meta = db.table("tag-workspaces")

    tag_id = UnicodeAttribute(hash_key=True)
    workspace_id = UnicodeAttribute(range_key=True)
    organization = UnicodeAttribute()
    created_at = UTCDateTimeAttribute()


# ----- reading ------------------------------------------------------------------------------


def get_tag(organization: str, name: str) -> TagModel | None:
    try:
        return TagModel.get(organization, name, consistent_read=True)
    except TagModel.DoesNotExist:
        return None


def tag_ids(ids: list[str]) -> dict[str, TagIdModel]:
    """The id items of these tag ids (strongly consistent), by id; unknown ids are left out."""
    unique = list(dict.fromkeys(ids))
    return {t.id: t for t in TagIdModel.batch_get(unique, consistent_read=True)} if unique else {}


def tags_named(organization: str, names: list[str]) -> dict[str, TagModel]:
    """The organization's tags of these names, by tag id (one BatchGet)."""
    keys = [(organization, name) for name in names]
    return {t.id: t for t in TagModel.batch_get(keys)} if keys else {}


def organization_tags(organization: str) -> list[TagModel]:
    """Every tag of the organization, name-ordered (strongly consistent)."""
    return list(TagModel.query(organization, consistent_read=True))


def tag_pairs(tag_id: str) -> list[TagWorkspaceModel]:
    """The (tag, workspace) pairs of a tag (strongly consistent: a bulk delete sees every pair)."""
    return list(TagWorkspaceModel.query(tag_id, consistent_read=True))


# ----- the pair transactions ----------------------------------------------------------------


class Cancelled(Exception):
    """A pair transaction was cancelled: by a failed condition on the items named in
    ``failed`` ("tag", "tag-id", "pair", "workspace"), or by a transient conflict or
    throttling (``retryable``)."""

    def __init__(self, failed: set[str], retryable: bool) -> None:
        super().__init__(f"failed: {sorted(failed)}, retryable: {retryable}")
        self.failed = failed
        self.retryable = retryable


def attach_pair(
    organization: str,
    name: str,
    tag_id: str | None,
    workspace_id: str,
    event: Callable[[str], Event] | None = None,
) -> None:
    """Attach the tag ``name`` to the workspace in one transaction: add 1 to the count of the
    tag ``tag_id`` (condition: same id, not being deleted) or, without ``tag_id``, create the
    tag with count 1 (condition: name unused); put the pair item (condition: absent); record
    the tag on the workspace (condition: alive); and, when given, the audit event ``event``
    makes of the tag's id (last: the labelled items keep their places). Raises Cancelled."""
    labels: list[tuple[str, str]] = []
    try:
        with TransactWrite(connection=db.connection()) as tx:
            if tag_id is None:
                tag_id = new_id("tag")
                tx.save(
                    TagModel(organization, name, id=tag_id, instance_count=1, created_at=now()),
                    condition=TagModel.name.does_not_exist(),
                )
                tx.save(
                    TagIdModel(tag_id, organization=organization, name=name),
                    condition=TagIdModel.id.does_not_exist(),
                )
                lists.count_update(tx, count_scope(organization), lists.ALL, 1)
                labels += [("put", "tag"), ("put", "tag-id"), ("update", "count")]
            else:
                tx.update(
                    TagModel(organization, name),
                    actions=[TagModel.instance_count.add(1)],
                    condition=(TagModel.id == tag_id) & TagModel.deleting.does_not_exist(),
                )
                labels.append(("update", "tag"))
            tx.save(
                TagWorkspaceModel(
                    tag_id, workspace_id, organization=organization, created_at=now()
                ),
                condition=TagWorkspaceModel.workspace_id.does_not_exist(),
            )
            labels.append(("put", "pair"))
            workspaces.tx_attach_tag(tx, workspace_id, tag_id, name)
            labels.append(("update", "workspace"))
            if event is not None:
                trail.record_in(tx, event(tag_id))
    except TransactWriteError as exc:
        _raise_cancelled(exc, labels)
        raise


def detach_pair(
    organization: str,
    workspace_id: str,
    tag_id: str,
    name: str,
    *,
    last: bool,
    event: Event | None = None,
) -> None:
    """Detach the tag from the workspace in one transaction: delete the pair item
    (condition: present); subtract 1 from the count (condition: count > 1) or, when ``last``,
    delete the tag and its id item (condition: count = 1); drop the tag from the workspace's
    map (condition: the workspace exists); and, when given, the audit event. Raises
    Cancelled."""
    labels: list[tuple[str, str]] = []
    try:
        with TransactWrite(connection=db.connection()) as tx:
            tx.delete(
                TagWorkspaceModel(tag_id, workspace_id),
                condition=TagWorkspaceModel.workspace_id.exists(),
            )
            labels.append(("delete", "pair"))
            if last:
                tx.delete(
                    TagModel(organization, name),
                    condition=(TagModel.id == tag_id) & (TagModel.instance_count == 1),
                )
                tx.delete(TagIdModel(tag_id))
                lists.count_update(tx, count_scope(organization), lists.ALL, -1)
                labels += [("delete", "tag"), ("delete", "tag-id"), ("update", "count")]
            else:
                tx.update(
                    TagModel(organization, name),
                    actions=[TagModel.instance_count.add(-1)],
                    condition=(TagModel.id == tag_id) & (TagModel.instance_count > 1),
                )
                labels.append(("update", "tag"))
            workspaces.tx_detach_tag(tx, workspace_id, tag_id)
            labels.append(("update", "workspace"))
            if event is not None:
                trail.record_in(tx, event)
    except TransactWriteError as exc:
        _raise_cancelled(exc, labels)
        raise


# PynamoDB sends a transaction's items grouped: condition checks, deletes, puts, updates.
_SENT_ORDER = {"check": 0, "delete": 1, "put": 2, "update": 3}


def _raise_cancelled(exc: TransactWriteError, labels: list[tuple[str, str]]) -> None:
    """Raise Cancelled if a labelled item failed its condition or the cancellation is
    transient; return (for the caller to re-raise ``exc``) otherwise."""
    failed, retryable = _failed(exc, labels), _retryable(exc)
    if failed or retryable:
        raise Cancelled(failed, retryable) from exc


def _failed(exc: TransactWriteError, labels: list[tuple[str, str]]) -> set[str]:
    """Which of our labelled items failed their condition (reasons come in sent order)."""
    sent = sorted(labels, key=lambda kind_label: _SENT_ORDER[kind_label[0]])
    codes = db.cancellation_codes(exc)
    return {
        label
        for (_, label), code in zip(sent, codes, strict=False)
        if code == db.TRANSACTION_CONDITION_FAILED
    }


def _retryable(exc: TransactWriteError) -> bool:
    codes = db.cancellation_codes(exc)
    return any(code in RETRYABLE for code in codes) or exc.cause_response_code in (
        "TransactionConflictException",
        "TransactionInProgressException",
        "ThrottlingException",
    )


# ----- deleting a tag -----------------------------------------------------------------------


def fence_tag(organization: str, tag_id: str, name: str) -> bool:
    """Mark the tag as being deleted, so no workspace can be added to it; False when the
    tag is gone (``name`` no longer names ``tag_id``)."""
    try:
        TagModel(organization, name).update(
            actions=[TagModel.deleting.set(True)], condition=TagModel.id == tag_id
        )
    except UpdateError as exc:
        if db.conditional_failure(exc):
            return False
        raise
    return True


def delete_tag(organization: str, tag_id: str, name: str) -> None:
    """Delete the tag (unless ``name`` names another tag by now) and count one less, in one
    transaction, then its id item."""
    try:
        with TransactWrite(connection=db.connection()) as tx:
            tx.delete(TagModel(organization, name), condition=TagModel.id == tag_id)
            lists.count_update(tx, count_scope(organization), lists.ALL, -1)
    except TransactWriteError as exc:
        if db.cancellation_codes(exc)[:1] != [db.TRANSACTION_CONDITION_FAILED]:
            raise
    delete_tag_id(tag_id)


def delete_tag_id(tag_id: str) -> None:
    TagIdModel(tag_id).delete()
