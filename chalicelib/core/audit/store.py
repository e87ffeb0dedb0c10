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
after it; ``until`` and an organization's creation (``Window.start``) bound the key range the
same way, so a time range costs only the events in it.

A filtered page (``Filters``: actor, resource type, action, resource id) reads the events of
the time range once, with a FilterExpression on the item's plain attributes (``actor``,
``actor_name``, ``resource_type``, ``resource_id``, ``action``) and only their keys
projected: DynamoDB charges the read units of every event in the range, matching or not
(half a unit per 4 KB eventually consistent: about a dozen ~700-byte events a unit), and
returns only the matching keys; then one Query between the page's first and last match
reads its events. At most ``MAX_FILTERED`` events are examined that way (DynamoDB's
``Limit``; past it ``TooManyToFilter``, which the API answers with a 422 asking for a
narrower ``since``/``until``): a filtered page costs at most about ``MAX_FILTERED`` / 12 read
units (~ 8,500 units in ~70 calls of 1 MB, a few seconds) however large the trail.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Iterator
from dataclasses import dataclass
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
# The most events a filtered read examines (see the module's docstring).
MAX_FILTERED = 100_000


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
    # Plain copies of the document's fields the trail is filtered by (FilterExpressions):
    # the actor's id and description (a user's username), the resource and the action.
    actor = UnicodeAttribute(null=True)
    actor_name = UnicodeAttribute(null=True)
    resource_type = UnicodeAttribute(null=True)
    resource_id = UnicodeAttribute(null=True)
    action = UnicodeAttribute(null=True)


@dataclass(frozen=True)
class Filters:
    """What a read keeps: each given field must equal the event's (``actor``: its actor's id
    or description, e.g. ``user-…`` or a username). None: any."""

    actor: str | None = None
    resource_type: str | None = None
    action: str | None = None
    resource_id: str | None = None

    def __bool__(self) -> bool:
        return any((self.actor, self.resource_type, self.action, self.resource_id))

    def condition(self) -> Any:
        """The FilterExpression (None without a filter)."""
        parts = []
        if self.actor:
            parts.append(
                (AuditEventModel.actor == self.actor) | (AuditEventModel.actor_name == self.actor)
            )
        for attribute, value in (
            (AuditEventModel.resource_type, self.resource_type),
            (AuditEventModel.action, self.action),
            (AuditEventModel.resource_id, self.resource_id),
        ):
            if value:
                parts.append(attribute == value)
        condition = None
        for part in parts:
            condition = part if condition is None else condition & part
        return condition


@dataclass(frozen=True)
class Window:
    """The time range read: events after ``since`` (not at it), before ``until``, and at or
    after ``start`` (an organization's creation: its trail begins there)."""

    since: datetime | None = None
    until: datetime | None = None
    start: datetime | None = None

    def low(self) -> str:
        """The key every event of the window sorts after ("": from the first)."""
        lows = [_moment_key(self.since) + _AFTER_IDS] if self.since else []
        if self.start:  # "<moment>#<id>" sorts after "<moment>": the start is included
            lows.append(_moment_key(self.start))
        return max(lows, default="")

    def high(self) -> str | None:
        """The key every event of the window sorts before (None: to the last)."""
        return _moment_key(self.until) if self.until else None


class TooManyToFilter(Exception):
    """A filtered read would examine more than ``limit`` (``MAX_FILTERED``) events."""

    def __init__(self, limit: int) -> None:
        super().__init__(f"more than {limit} events to filter")
        self.limit = limit


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
        # DynamoDB keeps no empty string in an index-free attribute either way: None omits it.
        actor=event.auth.accessor_id or None,
        actor_name=event.auth.description or None,
        resource_type=event.resource.type or None,
        resource_id=event.resource.id or None,
        action=event.resource.action or None,
    )


_FILTERED = ("actor", "actor_name", "resource_type", "resource_id", "action")


def put_in(tx: TransactWrite, event: Event) -> None:
    """Add the event to ``tx`` (never over another item). An UpdateItem that creates it, not
    a Put: PynamoDB sends a transaction's condition checks, deletes and puts before its
    updates (and those in the order added), so the event added last is the transaction's
    last item and the change's own items keep their places in a cancellation's reasons."""
    item = _item(event)
    plain = [
        getattr(AuditEventModel, name).set(getattr(item, name))
        for name in _FILTERED
        if getattr(item, name) is not None
    ]
    tx.update(
        item,
        actions=[
            AuditEventModel.document.set(item.document),
            AuditEventModel.expires.set(item.expires),
            *plain,
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


def _range(low: str, high: str | None) -> Any:
    """The sort-key condition of the keys after ``low`` and before ``high`` (neither is an
    event's key: see ``Window``); None for the whole partition."""
    if low and high:
        return AuditEventModel.key.between(low, high)
    if low:
        return AuditEventModel.key > low
    if high:
        return AuditEventModel.key < high
    return None


def _after(partition: str, key: str | None) -> dict[str, Any] | None:
    """An ExclusiveStartKey: read on after the event of ``key`` (None: from the first)."""
    return {"partition": {"S": partition}, "key": {"S": key}} if key else None


def _count(
    partition: str, condition: Any, after: str | None, limit: int | None
) -> tuple[int, str | None]:
    """How many events of the key range ``condition`` sort after the key ``after`` (at most
    ``limit``), and the key of the last one counted when the count stopped at ``limit``
    (None when it reached the end)."""
    connection = AuditEventModel._get_connection()
    counted, start = 0, _after(partition, after)
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


def _items(
    partition: str, condition: Any, filters: Filters, limit: int | None, after: str | None = None
) -> list[AuditEventModel]:
    return list(
        AuditEventModel.query(
            partition,
            condition,
            filter_condition=filters.condition(),
            limit=limit,
            page_size=limit,
            last_evaluated_key=_after(partition, after),
        )
    )


def _documents(items: list[AuditEventModel]) -> list[dict[str, Any]]:
    return [json.loads(item.document) for item in items]


def read_page(
    organization: str | None,
    window: Window,
    number: int,
    size: int,
    filters: Filters | None = None,
) -> tuple[list[dict[str, Any]], int]:
    """Page ``number`` (from 1) of ``size`` events of the partition in ``window`` that pass
    ``filters``, oldest first, and how many there are in all (``TooManyToFilter``: a filtered
    read would examine more than ``MAX_FILTERED`` events)."""
    partition = partition_of(organization)
    filters = filters or Filters()
    if filters:
        return _filtered_page(partition, window, number, size, filters)
    condition = _range(window.low(), window.high())
    skipped, after = 0, None
    if number > 1:
        skipped, after = _count(partition, condition, None, (number - 1) * size)
        if after is None:
            return [], skipped  # the page is past the end
    items = _items(partition, condition, filters, size, after)
    rest = 0
    if len(items) == size:
        rest, _ = _count(partition, condition, items[-1].key, None)
    return _documents(items), skipped + len(items) + rest


def _matching_keys(partition: str, window: Window, filters: Filters) -> Iterator[str]:
    """The keys of the window's events that pass ``filters``, in order: one pass over the
    window with the filter, keys only (``TooManyToFilter`` past ``MAX_FILTERED`` events)."""
    connection = AuditEventModel._get_connection()
    condition = _range(window.low(), window.high())
    examined, start = 0, None
    while True:
        answer = connection.query(
            partition,
            range_key_condition=condition,
            filter_condition=filters.condition(),
            attributes_to_get=["key"],
            exclusive_start_key=start,
            # DynamoDB's Limit counts the events examined, matching or not.
            limit=MAX_FILTERED - examined,
        )
        examined += answer["ScannedCount"]
        for item in answer.get("Items", ()):
            yield item["key"]["S"]
        start = answer.get("LastEvaluatedKey")
        if start is None:
            return
        if examined >= MAX_FILTERED:
            raise TooManyToFilter(MAX_FILTERED)


def _filtered_page(
    partition: str, window: Window, number: int, size: int, filters: Filters
) -> tuple[list[dict[str, Any]], int]:
    first_index, last_index = (number - 1) * size, number * size - 1
    total, first, last = 0, None, None
    for key in _matching_keys(partition, window, filters):
        if total == first_index:
            first = key
        if first_index <= total <= last_index:
            last = key
        total += 1
    if first is None or last is None:
        return [], total
    # The page's events: those between its first and last match that pass the filter.
    page = _items(partition, AuditEventModel.key.between(first, last), filters, None)
    return _documents(page), total
