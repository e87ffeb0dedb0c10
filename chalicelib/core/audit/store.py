"""The ``audit-events`` table: events are added, read a page at a time, and never changed.

One partition per organization (its name) and one for the site-wide events (``SITE``, a
name no organization can have); the sort key is the event's time (microseconds) and id, so
events sort by time and two events never share a key (the Put's condition refuses an
overwrite besides). Each item expires ``retention_days()`` after its event (DynamoDB's TTL
deletes it within days of that): the site's ``audit-retention-days`` (its general settings,
given by the entry apps: ``keep_events_for``), else ``REGISTRY_AUDIT_RETENTION_DAYS``, and
never fewer than 400. There is no update or delete here:
nothing in the registry can change or remove an event.

Reading a page (``read_page``) is one Query for the page's events plus ``Select=COUNT``
Queries for the events before it (to find where the page starts) and after it (the total):
the counting Queries read keys only and return no items, but DynamoDB charges them the read
units of the events they pass over (about one unit per 4 KB of events, eventually consistent
halved). A caller polling with ``since`` (as HCP's integrations do) counts only the events
after it.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

from pynamodb.attributes import TTLAttribute, UnicodeAttribute
from pynamodb.transactions import TransactWrite

from chalicelib.core.audit.events import Auth, Event, Request, Resource
from chalicelib.core.data import db
from chalicelib.core.settings import get_settings

# The site-wide events' partition (users, site settings, sign-ins): "#" is in no
# organization's name.
SITE = "#site"
# The highest character a sort key's id part holds after the time: "since" excludes its
# whole moment.
_AFTER_IDS = "~"
_MAX_LIMIT = 1_000_000


TABLE = "audit-events"
# No event is kept for less (the floor: HCP Terraform keeps 14 days).
MIN_RETENTION_DAYS = 400

log = logging.getLogger("registry.audit")


def _deployment_retention() -> int:
    return get_settings().audit_retention_days


# The site's retention (admin's general settings sit above core: the entry apps give it).
_retention: Callable[[], int] = _deployment_retention


def keep_events_for(days: Callable[[], int]) -> None:
    """Read the retention from ``days`` (``entry.wiring``: the site's general settings)."""
    global _retention
    _retention = days


def retention_days() -> int:
    """How many days an event written now is kept: never fewer than 400. A retention that
    cannot be read (a settings read failing) leaves the deployment's: the change it records
    goes on."""
    try:
        days = int(_retention())
    except Exception:  # noqa: BLE001 - the change must not fail for its event's TTL
        log.warning("could not read the site's audit retention; using the deployment's")
        days = _deployment_retention()
    return max(MIN_RETENTION_DAYS, days)


@db.register
class AuditEventModel(db.Model):
    # Its stream hands each new event to the exporter (chalicelib.audit.export).
    Meta = db.table(TABLE, stream="NEW_IMAGE")

    partition = UnicodeAttribute(hash_key=True)
    # ``<time, microseconds>#<event id>``: time-ordered and unique.
    key = UnicodeAttribute(range_key=True)
    # The event in HCP's shape (``Event.to_json``), as it is answered.
    document = UnicodeAttribute()
    expires = TTLAttribute()


def _moment_key(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def partition_of(organization: str | None) -> str:
    return organization if organization else SITE


def _item(event: Event) -> AuditEventModel:
    days = retention_days()
    return AuditEventModel(
        partition_of(event.organization),
        f"{_moment_key(event.timestamp)}#{event.id}",
        document=json.dumps(event.to_json(), separators=(",", ":")),
        expires=event.timestamp + timedelta(days=days),
    )


def put_in(tx: TransactWrite, event: Event) -> None:
    """Add the event to ``tx`` (never over another item). An UpdateItem that creates it, not
    a Put: PynamoDB sends a transaction's condition checks, deletes and puts before its
    updates (and those in the order added), so the event added last is the transaction's
    last item and the change's own items keep their places in a cancellation's reasons."""
    item = _item(event)
    tx.update(
        item,
        actions=[
            AuditEventModel.document.set(item.document),
            AuditEventModel.expires.set(item.expires),
        ],
        condition=AuditEventModel.key.does_not_exist(),
    )


def put(event: Event) -> None:
    """Write the event alone (one conditional PutItem)."""
    _item(event).save(condition=AuditEventModel.key.does_not_exist())


def event_of(document: dict[str, Any]) -> Event:
    """An event read back (for tests and exports; the API answers the stored document)."""
    auth, request, resource = document["auth"], document["request"], document["resource"]
    return Event(
        id=document["id"],
        timestamp=datetime.fromisoformat(document["timestamp"].replace("Z", "+00:00")),
        auth=Auth(**auth),
        request=Request(**request),
        resource=Resource(**resource),
        organization=auth.get("organization_id") or None,
        version=document["version"],
        type=document["type"],
    )


def _count(partition: str, after: str, limit: int | None) -> tuple[int, str | None]:
    """How many events sort after ``after`` (at most ``limit``), and the key of the last one
    counted when the count stopped at ``limit`` (None when it reached the end)."""
    connection = AuditEventModel._get_connection()
    counted, start = 0, None
    condition = AuditEventModel.key > after if after else None
    while limit is None or counted < limit:
        answer = connection.query(
            partition,
            range_key_condition=condition,
            select="COUNT",
            # DynamoDB's Limit is an int32: a huge page number counts in bounded steps.
            limit=None if limit is None else min(limit - counted, _MAX_LIMIT),
            exclusive_start_key=start,
        )
        counted += answer["Count"]
        start = answer.get("LastEvaluatedKey")
        if start is None:
            return counted, None
    assert start is not None
    return counted, start["key"]["S"]


def read_page(
    organization: str | None, since: datetime | None, number: int, size: int
) -> tuple[list[dict[str, Any]], int]:
    """Page ``number`` (from 1) of ``size`` events of the partition after ``since``, oldest
    first, and how many events there are after ``since`` in all."""
    partition = partition_of(organization)
    after = _moment_key(since) + _AFTER_IDS if since else ""
    skipped, start = _count(partition, after, (number - 1) * size) if number > 1 else (0, after)
    if number > 1 and start is None:
        return [], skipped  # the page is past the end
    assert start is not None
    condition = AuditEventModel.key > start if start else None
    items = list(AuditEventModel.query(partition, condition, limit=size, page_size=size))
    documents = [json.loads(item.document) for item in items]
    rest = 0
    if len(items) == size:
        rest, _ = _count(partition, items[-1].key, None)
    return documents, skipped + len(items) + rest
