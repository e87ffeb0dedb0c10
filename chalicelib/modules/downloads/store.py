"""The ``module-downloads`` table: small items per module counting its versions' downloads.

A module's partition (``module_id``) holds, by sort key (``version``):

* ``<version>#d#<YYYY-MM-DD>``: a *day item*, that version's downloads that UTC day (``n``);
* ``<version>#p#<kind>#<id>``: a *consumer item*, the time of the principal's last download
  of that version (``at``; ``kind`` is ``user``, ``team`` or ``organization``);
* ``<version>``: the *base item* of versions counted before 0.12, which held everything in
  one item (``total``, one ``dYYYY-MM-DD`` per day, one ``c#<kind>#<id>`` per consumer).
  Nothing writes it on a download any more; it is read as it is (its total, days and
  consumers add to the new items'), and the backfill moves its consumers out
  (``migrate_base``) and folds old day items into its ``total`` (``fold_old_days``).

A download is ONE UpdateItem of its day item (``ADD n :one``): atomic, so the counts are exact,
nothing is read first, and the item stays under 1 KB (``MAX_ITEM_BYTES``) however many days and
consumers the version has, so the write costs 1 WRU. The consumer's item is written only when
this instance has not written it yet that UTC day (``written``: once per consumer per version
per day per instance), a second UpdateItem of another small item, conditional on moving the
time forward.

Read back with one Query of the module's partition (``module_downloads``): the registry
protocol's detail endpoints, the owners' report and the campaigns, never the download path.
A version's total is its base item's ``total`` plus its day items' counts
(``version_total``: one Query of those items only, for the stream's kept totals).

Bounds: a read keeps consumers whose last download is within ``DAYS_KEPT`` days, the
``MAX_CONSUMERS`` most recent per version; day items and consumer items older than
``DAYS_KEPT`` days are removed by the backfill's ``fold_old_days`` (a day's count into the
base item's ``total`` and the day item's deletion in one transaction, so the total is kept
and a second run adds nothing).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from botocore.exceptions import ClientError
from pynamodb.attributes import NumberAttribute, UnicodeAttribute

from chalicelib.core.data import db
from chalicelib.core.data.ids import iso, now

DAYS_KEPT = 400
MAX_CONSUMERS = 1_000
DAY_MARK = "#d#"
CONSUMER_MARK = "#p#"
# The largest item the download path writes (a day or a consumer item): 1 KB is 1 WRU.
MAX_ITEM_BYTES = 1_024
# Consumers an instance remembers having written today, at most (it starts again empty).
MAX_WRITTEN = 10_000
# The base items' attribute prefixes (items counted before 0.12).
BASE_DAY_PREFIX = "d"
BASE_CONSUMER_PREFIX = "c#"


@db.register
class DownloadsModel(db.Model):
    """The table's declaration (keys and the base items' ``total``); the day and consumer
    items are written and read with the low-level calls below."""

    # The stream tells the DownloadTotals function which versions changed
    # (``downloads.totals``), off the download's path.
    Meta = db.table("module-downloads", stream="NEW_IMAGE")

    module_id = UnicodeAttribute(hash_key=True)
    version = UnicodeAttribute(range_key=True)
    total = NumberAttribute(default=0)


def day_key(version: str, moment: datetime) -> str:
    return f"{version}{DAY_MARK}{moment:%Y-%m-%d}"


def consumer_key(version: str, kind: str, principal_id: str) -> str:
    return f"{version}{CONSUMER_MARK}{kind}#{principal_id}"


def version_of(key: str) -> str:
    """The version a sort key belongs to (versions never hold ``#``)."""
    return key.partition("#")[0]


def is_day_key(key: str) -> bool:
    return DAY_MARK in key


def is_consumer_key(key: str) -> bool:
    return CONSUMER_MARK in key


@dataclass
class _Written:
    """Per instance: the UTC day each (module, version, kind, id) consumer item was last
    written, so that it is written once a day at most."""

    days: dict[tuple[str, str, str, str], str] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def clear(self) -> None:
        with self.lock:
            self.days.clear()


written = _Written()


def record(module_id: str, version: str, kind: str, principal_id: str, moment: datetime) -> None:
    """Count one download of ``version`` by the principal at ``moment``: one UpdateItem of the
    day item, and one of the consumer item when this instance has not written it today."""
    table = DownloadsModel.Meta.table_name
    connection = db.connection()
    connection.dispatch("UpdateItem", day_update(table, module_id, version, moment))
    consumer = (module_id, version, kind, principal_id)
    today = f"{moment:%Y-%m-%d}"
    with written.lock:
        if written.days.get(consumer) == today:
            return
    try:
        connection.dispatch(
            "UpdateItem", consumer_update(table, module_id, version, kind, principal_id, moment)
        )
    except ClientError as exc:  # a later download of it was written first: nothing to do
        if not db.conditional_failure(exc):
            raise
    with written.lock:
        if len(written.days) >= MAX_WRITTEN:
            written.days.clear()
        written.days[consumer] = today


def day_update(table: str, module_id: str, version: str, moment: datetime) -> dict[str, Any]:
    """The download's UpdateItem: its day item's count, plus one."""
    return {
        "TableName": table,
        "Key": {"module_id": {"S": module_id}, "version": {"S": day_key(version, moment)}},
        "UpdateExpression": "ADD #n :one",
        "ExpressionAttributeNames": {"#n": "n"},
        "ExpressionAttributeValues": {":one": {"N": "1"}},
    }


def consumer_update(
    table: str, module_id: str, version: str, kind: str, principal_id: str, moment: datetime
) -> dict[str, Any]:
    """The consumer's UpdateItem: its last download, never moved back."""
    return {
        "TableName": table,
        "Key": {
            "module_id": {"S": module_id},
            "version": {"S": consumer_key(version, kind, principal_id)},
        },
        "UpdateExpression": "SET #at = :now",
        "ConditionExpression": "attribute_not_exists(#at) OR #at < :now",
        "ExpressionAttributeNames": {"#at": "at"},
        "ExpressionAttributeValues": {":now": {"S": iso(moment)}},
    }


@dataclass(frozen=True)
class VersionDownloads:
    """What a version's items hold: the total, the count per day (``YYYY-MM-DD``) and each
    consumer's last download (``(kind, id)`` -> ISO time)."""

    version: str
    total: int
    days: dict[str, int]
    consumers: dict[tuple[str, str], str]


def module_downloads(module_id: str, consistent: bool = False) -> list[VersionDownloads]:
    """Every version's downloads of a module, in the order of its versions' keys: one Query of
    its partition (more only past 1 MB: some 10,000 consumer or day items)."""
    request: dict[str, Any] = {
        "TableName": DownloadsModel.Meta.table_name,
        "KeyConditionExpression": "module_id = :m",
        "ExpressionAttributeValues": {":m": {"S": module_id}},
        "ConsistentRead": consistent,
    }
    return _merged(_query(request), now())


def version_total(module_id: str, version: str) -> int | None:
    """A version's total (base item and day items: one strongly consistent Query of those
    items only, never its consumers); None when it has no item at all (deleted)."""
    request: dict[str, Any] = {
        "TableName": DownloadsModel.Meta.table_name,
        # "<v>" < "<v>#d#..." < "<v>#d$" < "<v>#p#...": the base item and the day items.
        "KeyConditionExpression": "module_id = :m AND #k BETWEEN :v AND :end",
        "ExpressionAttributeNames": {"#k": "version"},
        "ExpressionAttributeValues": {
            ":m": {"S": module_id},
            ":v": {"S": version},
            ":end": {"S": version + DAY_MARK[:-1] + "$"},
        },
        "ConsistentRead": True,
    }
    found = [item for item in _query(request) if version_of(item["version"]["S"]) == version]
    if not found:
        return None
    return sum(_count(item) for item in found)


def _query(request: dict[str, Any], operation: str = "Query") -> Iterator[dict[str, Any]]:
    """Every item a Query (or a Scan) finds, page after page."""
    while True:
        answer = db.connection().dispatch(operation, request)
        yield from answer.get("Items", [])
        if not answer.get("LastEvaluatedKey"):
            return
        request["ExclusiveStartKey"] = answer["LastEvaluatedKey"]


def _count(item: dict[str, Any]) -> int:
    """What an item adds to its version's total: a day item's count, a base item's total."""
    key = item["version"]["S"]
    if is_day_key(key):
        return int(item.get("n", {}).get("N", "0"))
    if is_consumer_key(key):
        return 0
    return int(item.get("total", {}).get("N", "0"))


@dataclass
class _Version:
    total: int = 0
    days: dict[str, int] = field(default_factory=dict)
    consumers: dict[tuple[str, str], str] = field(default_factory=dict)

    def consumer(self, key: tuple[str, str], last: str) -> None:
        self.consumers[key] = max(last, self.consumers.get(key, ""))

    def day(self, day: str, n: int) -> None:
        self.days[day] = self.days.get(day, 0) + n


def _merged(items: Iterator[dict[str, Any]], moment: datetime) -> list[VersionDownloads]:
    versions: dict[str, _Version] = {}
    for item in items:
        key = item["version"]["S"]
        found = versions.setdefault(version_of(key), _Version())
        found.total += _count(item)
        if is_day_key(key):
            found.day(key.rpartition("#")[2], int(item.get("n", {}).get("N", "0")))
        elif is_consumer_key(key):
            kind, _, principal_id = key.partition(CONSUMER_MARK)[2].partition("#")
            found.consumer((kind, principal_id), item.get("at", {}).get("S", ""))
        else:
            _read_base(item, found)
    oldest = iso(moment - timedelta(days=DAYS_KEPT))
    return [
        VersionDownloads(version, found.total, found.days, _kept(found.consumers, oldest))
        for version, found in versions.items()
    ]


def _read_base(item: dict[str, Any], found: _Version) -> None:
    """A base item's days and consumers (its total is counted by ``_count``)."""
    for name, value in item.items():
        if name.startswith(BASE_CONSUMER_PREFIX):
            kind, _, principal_id = name.removeprefix(BASE_CONSUMER_PREFIX).partition("#")
            found.consumer((kind, principal_id), value.get("S", ""))
        elif name.startswith(BASE_DAY_PREFIX) and name[1:2].isdigit():
            found.day(name[1:], int(value["N"]))


def _kept(consumers: dict[tuple[str, str], str], oldest: str) -> dict[tuple[str, str], str]:
    """The consumers within the bounds: silent for less than DAYS_KEPT days, the
    MAX_CONSUMERS most recent."""
    recent = sorted(
        ((last, key) for key, last in consumers.items() if last >= oldest), reverse=True
    )
    return {key: last for last, key in recent[:MAX_CONSUMERS]}


def forget(module_id: str, versions: list[str]) -> None:
    """Delete every item of a deleted module's (or a deleted version's) versions: one Query of
    the partition's keys, then batched deletes."""
    doomed = set(versions)
    request: dict[str, Any] = {
        "TableName": DownloadsModel.Meta.table_name,
        "KeyConditionExpression": "module_id = :m",
        "ExpressionAttributeValues": {":m": {"S": module_id}},
        "ProjectionExpression": "module_id, #k",
        "ExpressionAttributeNames": {"#k": "version"},
        "ConsistentRead": True,
    }
    keys = [i["version"]["S"] for i in _query(request) if version_of(i["version"]["S"]) in doomed]
    with DownloadsModel.batch_write() as batch:
        for key in keys:
            batch.delete(DownloadsModel(module_id, key))


# ----- the backfill's: old items moved and folded (a scan, never a request's) --------------

# Attributes one UpdateItem removes at most (far below the 4 KB an expression may hold).
MAX_REMOVED = 50


def fold_old_days(moment: datetime) -> dict[str, int]:
    """Bound the table (safe to re-run): each day item older than ``DAYS_KEPT`` days goes into
    its version's base item's ``total`` (one transaction: the base's ``ADD`` and the day
    item's deletion while it holds that count, so nothing is counted twice or lost), each
    consumer item silent as long is deleted (while it holds that time), and each base item of
    0.11 gives its consumers to consumer items and loses them and its old days."""
    oldest_day = f"{moment - timedelta(days=DAYS_KEPT):%Y-%m-%d}"
    oldest = iso(moment - timedelta(days=DAYS_KEPT))
    table = DownloadsModel.Meta.table_name
    connection = db.connection()
    done = {"days folded": 0, "consumers removed": 0, "base items moved": 0}
    for item in _query({"TableName": table}, "Scan"):
        module_id, key = item["module_id"]["S"], item["version"]["S"]
        if is_day_key(key) and key.rpartition("#")[2] < oldest_day:
            done["days folded"] += _fold(connection, table, item)
        elif is_consumer_key(key) and item.get("at", {}).get("S", "") < oldest:
            done["consumers removed"] += _delete_if(connection, table, item, "at")
        elif not is_day_key(key) and not is_consumer_key(key):
            moved = _move_base(connection, table, (module_id, key), item, (oldest_day, oldest))
            done["base items moved"] += moved
    return done


def _fold(connection: Any, table: str, item: dict[str, Any]) -> int:
    key = item["version"]["S"]
    base = {"module_id": item["module_id"], "version": {"S": version_of(key)}}
    try:
        connection.dispatch(
            "TransactWriteItems",
            {
                "TransactItems": [
                    {
                        "Update": {
                            "TableName": table,
                            "Key": base,
                            "UpdateExpression": "ADD #t :n",
                            "ExpressionAttributeNames": {"#t": "total"},
                            "ExpressionAttributeValues": {":n": item["n"]},
                        }
                    },
                    {
                        "Delete": {
                            "TableName": table,
                            "Key": {"module_id": item["module_id"], "version": item["version"]},
                            "ConditionExpression": "#n = :n",
                            "ExpressionAttributeNames": {"#n": "n"},
                            "ExpressionAttributeValues": {":n": item["n"]},
                        }
                    },
                ]
            },
        )
    except ClientError as exc:  # counted again meanwhile (a late download): the next run
        if db.error_code(exc) != "TransactionCanceledException":
            raise
        return 0
    return 1


def _delete_if(connection: Any, table: str, item: dict[str, Any], name: str) -> int:
    try:
        connection.dispatch(
            "DeleteItem",
            {
                "TableName": table,
                "Key": {"module_id": item["module_id"], "version": item["version"]},
                "ConditionExpression": "#a = :a",
                "ExpressionAttributeNames": {"#a": name},
                "ExpressionAttributeValues": {":a": item[name]},
            },
        )
    except ClientError as exc:  # downloaded again meanwhile: kept
        if not db.conditional_failure(exc):
            raise
        return 0
    return 1


def _move_base(
    connection: Any,
    table: str,
    keys: tuple[str, str],
    item: dict[str, Any],
    bounds: tuple[str, str],
) -> int:
    """A 0.11 base item's consumers into consumer items, then its consumers and its days older
    than DAYS_KEPT removed from it (its total stays whole); 1 when it had any. ``bounds``:
    the oldest day and time kept."""
    (module_id, version), (oldest_day, oldest) = keys, bounds
    removed = []
    for name, value in item.items():
        if name.startswith(BASE_CONSUMER_PREFIX):
            kind, _, principal_id = name.removeprefix(BASE_CONSUMER_PREFIX).partition("#")
            last = value.get("S", "")
            if last >= oldest:
                update = consumer_update(table, module_id, version, kind, principal_id, now())
                update["ExpressionAttributeValues"] = {":now": {"S": last}}
                try:
                    connection.dispatch("UpdateItem", update)
                except ClientError as exc:  # a later download is kept there already
                    if not db.conditional_failure(exc):
                        raise
            removed.append(name)
        elif name.startswith(BASE_DAY_PREFIX) and name[1:2].isdigit() and name[1:] < oldest_day:
            removed.append(name)
    for start in range(0, len(removed), MAX_REMOVED):
        names = {f"#r{i}": name for i, name in enumerate(removed[start : start + MAX_REMOVED])}
        connection.dispatch(
            "UpdateItem",
            {
                "TableName": table,
                "Key": {"module_id": {"S": module_id}, "version": {"S": version}},
                "UpdateExpression": "REMOVE " + ", ".join(names),
                "ExpressionAttributeNames": names,
            },
        )
    return 1 if removed else 0
