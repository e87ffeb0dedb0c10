"""The local stack deletes expired DynamoDB items as DynamoDB's TTL does (moto never does):
``infrastructure.expiry``, periodically and before a snapshot is written."""

from __future__ import annotations

import itertools
import time
from pathlib import Path
from typing import Any

from infrastructure import expiry, persistence

_serial = itertools.count()


def table(short: str) -> str:
    from chalicelib.core.settings import get_settings

    return get_settings().table_prefix + short


def ttl_tables() -> dict[str, str]:
    """Table -> TTL attribute, as DescribeTimeToLive says."""
    from chalicelib.core.data.aws import client

    dynamodb = client("dynamodb")
    found = {}
    for table in dynamodb.list_tables()["TableNames"]:
        ttl = dynamodb.describe_time_to_live(TableName=table)["TimeToLiveDescription"]
        if ttl.get("TimeToLiveStatus") == "ENABLED":
            found[table] = ttl["AttributeName"]
    return found


def put(table: str, **extra: dict[str, str]) -> dict[str, Any]:
    """An item with a fresh key (of whatever types the table's key has); its key."""
    from chalicelib.core.data.aws import client

    dynamodb = client("dynamodb")
    description = dynamodb.describe_table(TableName=table)["Table"]
    types = {a["AttributeName"]: a["AttributeType"] for a in description["AttributeDefinitions"]}
    key = {}
    for part in description["KeySchema"]:
        value = str(next(_serial))
        key[part["AttributeName"]] = {types[part["AttributeName"]]: value}
    dynamodb.put_item(TableName=table, Item={**key, **extra})
    return key


def exists(table: str, key: dict[str, Any]) -> bool:
    from chalicelib.core.data.aws import client

    return "Item" in client("dynamodb").get_item(TableName=table, Key=key, ConsistentRead=True)


def test_expired_items_are_deleted_from_every_ttl_table_and_nothing_else(aws: None):
    from chalicelib.core.data.aws import client

    tables = ttl_tables()
    # The rate-limit counters, web sessions and login codes at least; two attribute names.
    assert {table("rate-limits"), table("web-sessions"), table("login-codes")} <= set(tables)
    assert len(set(tables.values())) > 1
    now = time.time()
    past, future = str(int(now) - 10), str(int(now) + 3600)
    expired, kept = {}, {}
    for name, attribute in tables.items():
        expired[name] = [put(name, **{attribute: {"N": past}})]
        kept[name] = [
            put(name, **{attribute: {"N": future}}),
            put(name, **{attribute: {"S": past}}),  # not a number: DynamoDB ignores it
            put(name),  # no expiry at all
        ]
    # A table without TTL keeps an attribute of that name whatever its value.
    plain = next(t for t in client("dynamodb").list_tables()["TableNames"] if t not in tables)
    untouched = put(plain, expires={"N": past}, expires_at={"N": past})

    assert expiry.sweep() == {name: 1 for name in tables}
    for name in tables:
        assert not any(exists(name, key) for key in expired[name]), name
        assert all(exists(name, key) for key in kept[name]), name
    assert exists(plain, untouched)
    assert expiry.sweep() == {}  # nothing left to delete


def test_a_snapshot_never_keeps_expired_items(aws: None, tmp_path: Path):
    """The saver sweeps before it writes: the file holds no row DynamoDB would have deleted,
    even between two periodic sweeps."""
    from chalicelib.core.data.aws import client

    counters = table("rate-limits")
    attribute = ttl_tables()[counters]
    now = int(time.time())
    gone = put(counters, **{attribute: {"N": str(now - 1)}})
    stays = put(counters, **{attribute: {"N": str(now + 600)}})
    directory = tmp_path / "data"
    lock = persistence.lock_data_dir(directory)
    try:
        saver = persistence.Saver(
            directory, persistence.Gate(lambda *_: []), before_save=expiry.sweep_logged
        )
        assert saver.save(force=True)
    finally:
        lock.close()
    client("dynamodb").put_item(TableName=counters, Item={**gone, attribute: {"N": str(now - 1)}})
    persistence.restore(directory)  # back to what the file holds
    assert not exists(counters, gone)
    assert exists(counters, stays)
