"""The ``module-downloads`` table: one item per (module, version) counting its downloads.

An item holds, as top-level attributes, ``total`` (every download), one ``dYYYY-MM-DD`` per
UTC day with downloads (that day's count) and one ``c#<kind>#<id>`` per consumer (the
principal that downloaded: ``user``, ``team`` or ``organization``, and its id) with the
time of its last download. A download is ONE UpdateItem of that item
(``ADD total :one, #day :one SET #consumer = :now``): atomic, so the counts are exact
(DynamoDB applies concurrent ADDs one after the other), and nothing is read first.

Bounded: day attributes older than ``DAYS_KEPT`` days and consumers silent for as long are
removed, and past ``MAX_CONSUMERS`` consumers the least recent go. Which to remove is seen
in the item the update returns (``ALL_NEW``, asked once per item per instance per day) and
the removal rides on the item's next update on that instance (``REMOVE`` in the same
expression), so pruning never adds a call. At most 400 day attributes of about 15 bytes
(6 KB) and 1,000 consumers of at most about 110 bytes (110 KB) keep an item far below
DynamoDB's 400 KB. ``total`` is kept whole: pruning never lowers it.

Read back with one Query of the module's partition (``module_downloads``): the registry
protocol's detail endpoints and the owners' report, never the download path.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from pynamodb.attributes import NumberAttribute, UnicodeAttribute

from chalicelib.core.data import db
from chalicelib.core.data.ids import iso

DAYS_KEPT = 400
MAX_CONSUMERS = 1_000
DAY_PREFIX = "d"
CONSUMER_PREFIX = "c#"
# Attributes one update removes at most (``REMOVE #r0, ... #r49``: far below the 4 KB
# DynamoDB allows an expression).
MAX_REMOVED = 50
# Items whose pruning an instance remembers at most (it starts again empty past that).
MAX_PENDING = 10_000


@db.register
class DownloadsModel(db.Model):
    """The table's declaration (keys and ``total``); the day and consumer attributes are
    dynamic names, written and read with the low-level calls below."""

    # The stream carries each changed item's new ``total`` to the module's kept totals
    # (``downloads.totals``), off the download's path.
    Meta = db.table("module-downloads", stream="NEW_IMAGE")

    module_id = UnicodeAttribute(hash_key=True)
    version = UnicodeAttribute(range_key=True)
    total = NumberAttribute(default=0)


def day_name(moment: datetime) -> str:
    return f"{DAY_PREFIX}{moment:%Y-%m-%d}"


def consumer_name(kind: str, principal_id: str) -> str:
    return f"{CONSUMER_PREFIX}{kind}#{principal_id}"


@dataclass
class _Pruning:
    """Per instance: the attributes each item should lose on its next update, and the day
    each item's whole state was last looked at (``ALL_NEW``)."""

    remove: dict[tuple[str, str], list[str]] = field(default_factory=dict)
    seen: dict[tuple[str, str], str] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def clear(self) -> None:
        with self.lock:
            self.remove.clear()
            self.seen.clear()


pruning = _Pruning()


def record(module_id: str, version: str, kind: str, principal_id: str, moment: datetime) -> None:
    """Count one download of ``version`` by the principal at ``moment``: one UpdateItem."""
    key = (module_id, version)
    day, consumer = day_name(moment), consumer_name(kind, principal_id)
    with pruning.lock:
        stale = [n for n in pruning.remove.pop(key, ()) if n not in (day, consumer)]
        if len(stale) > MAX_REMOVED:  # the rest on the next updates: expressions are <= 4 KB
            pruning.remove[key] = stale[MAX_REMOVED:]
            stale = stale[:MAX_REMOVED]
        look = pruning.seen.get(key) != day
    names = {"#t": "total", "#d": day, "#c": consumer}
    expression = "ADD #t :one, #d :one SET #c = :now"
    if stale:
        names.update({f"#r{i}": name for i, name in enumerate(stale)})
        expression += " REMOVE " + ", ".join(f"#r{i}" for i in range(len(stale)))
    answer = db.connection().dispatch(
        "UpdateItem",
        {
            "TableName": DownloadsModel.Meta.table_name,
            "Key": {"module_id": {"S": module_id}, "version": {"S": version}},
            "UpdateExpression": expression,
            "ExpressionAttributeNames": names,
            "ExpressionAttributeValues": {":one": {"N": "1"}, ":now": {"S": iso(moment)}},
            "ReturnValues": "ALL_NEW" if look else "NONE",
        },
    )
    if look:
        prune = prunable(answer.get("Attributes") or {}, moment)
        with pruning.lock:
            if len(pruning.seen) >= MAX_PENDING:
                pruning.clear()
            pruning.seen[key] = day
            if prune:
                pruning.remove[key] = prune


def prunable(item: dict[str, Any], moment: datetime) -> list[str]:
    """The attributes of a raw item past the bounds: days and consumers older than
    ``DAYS_KEPT`` days, and the least recent consumers beyond ``MAX_CONSUMERS``."""
    oldest_day = day_name(moment - timedelta(days=DAYS_KEPT))
    oldest_time = iso(moment - timedelta(days=DAYS_KEPT))
    old = [n for n in item if _is_day(n) and n < oldest_day]
    consumers = sorted(
        ((value.get("S", ""), name) for name, value in item.items() if _is_consumer(name)),
        reverse=True,
    )
    for rank, (last, name) in enumerate(consumers):
        if rank >= MAX_CONSUMERS or last < oldest_time:
            old.append(name)
    return old


def _is_consumer(name: str) -> bool:
    return name.startswith(CONSUMER_PREFIX)


def _is_day(name: str) -> bool:
    return name.startswith(DAY_PREFIX) and name[1:2].isdigit()


@dataclass(frozen=True)
class VersionDownloads:
    """What one version's item holds: the total, the count per day (``YYYY-MM-DD``) and
    each consumer's last download (``(kind, id)`` -> ISO time)."""

    version: str
    total: int
    days: dict[str, int]
    consumers: dict[tuple[str, str], str]


def module_downloads(module_id: str, consistent: bool = False) -> list[VersionDownloads]:
    """Every version's downloads of a module: one Query of its partition (more only past
    1 MB, i.e. some ten versions with a thousand consumers each)."""
    request: dict[str, Any] = {
        "TableName": DownloadsModel.Meta.table_name,
        "KeyConditionExpression": "module_id = :m",
        "ExpressionAttributeValues": {":m": {"S": module_id}},
        "ConsistentRead": consistent,
    }
    found = []
    while True:
        answer = db.connection().dispatch("Query", request)
        found += [_parsed(item) for item in answer.get("Items", [])]
        if not answer.get("LastEvaluatedKey"):
            return found
        request["ExclusiveStartKey"] = answer["LastEvaluatedKey"]


def _parsed(item: dict[str, Any]) -> VersionDownloads:
    days, consumers = {}, {}
    for name, value in item.items():
        if _is_consumer(name):
            kind, _, principal_id = name.removeprefix(CONSUMER_PREFIX).partition("#")
            consumers[(kind, principal_id)] = value.get("S", "")
        elif _is_day(name):
            days[name[1:]] = int(value["N"])
    return VersionDownloads(
        version=item["version"]["S"],
        total=int(item.get("total", {}).get("N", "0")),
        days=days,
        consumers=consumers,
    )


def forget(module_id: str, versions: list[str]) -> None:
    """Delete the download items of a deleted module's (or a deleted version's) versions."""
    with DownloadsModel.batch_write() as batch:
        for version in versions:
            batch.delete(DownloadsModel(module_id, version))
