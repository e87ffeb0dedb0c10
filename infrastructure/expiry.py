"""Delete expired DynamoDB items in the local stack, as DynamoDB's Time to Live does.

moto records a table's TTL setting but never deletes anything, so locally rate-limit
counters, web sessions and login codes piled up in memory and in the saved snapshot (950
counters after half an hour). ``sweep()`` does what DynamoDB's background process does: for
every table with TTL enabled, it reads the attribute's name from DescribeTimeToLive and
deletes the items whose attribute is a number of epoch seconds in the past (a string, a
missing attribute or a future time is left alone). ``Sweeper`` runs it periodically; the
persistence saver runs it before a snapshot is written.

It goes through the AWS API (the moto server, behind the signature check and the snapshot
gate), never into moto's internals.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Any

log = logging.getLogger("registry.expiry")

DEFAULT_INTERVAL = 60.0


def sweep(now: float | None = None) -> dict[str, int]:
    """Delete the expired items of every TTL-enabled table; the count deleted per table."""
    from chalicelib.core.data.aws import client

    dynamodb = client("dynamodb")
    cutoff = {
        ":now": {"N": str(int(time.time() if now is None else now))},
        ":number": {"S": "N"},
    }
    deleted: dict[str, int] = {}
    for page in dynamodb.get_paginator("list_tables").paginate():
        for table in page["TableNames"]:
            ttl = dynamodb.describe_time_to_live(TableName=table)["TimeToLiveDescription"]
            if ttl.get("TimeToLiveStatus") != "ENABLED":
                continue
            count = _sweep_table(dynamodb, table, ttl["AttributeName"], cutoff)
            if count:
                deleted[table] = count
    if deleted:
        log.info("expired items deleted: %s", deleted)
    return deleted


def _sweep_table(dynamodb: Any, table: str, attribute: str, cutoff: dict[str, Any]) -> int:
    keys = [
        k["AttributeName"] for k in dynamodb.describe_table(TableName=table)["Table"]["KeySchema"]
    ]
    key_names = {f"#k{i}": name for i, name in enumerate(keys)}
    # Only numbers expire (a comparison of a string with a number is false in DynamoDB and
    # an error in moto: the type is tested first).
    expired = "attribute_type(#ttl, :number) AND #ttl < :now"
    count = 0
    for page in dynamodb.get_paginator("scan").paginate(
        TableName=table,
        FilterExpression=expired,
        ProjectionExpression=", ".join(key_names),
        ExpressionAttributeNames={"#ttl": attribute, **key_names},
        ExpressionAttributeValues=cutoff,
    ):
        for key in page["Items"]:
            try:  # still expired: a row renewed since the scan stays
                dynamodb.delete_item(
                    TableName=table,
                    Key=key,
                    ConditionExpression=expired,
                    ExpressionAttributeNames={"#ttl": attribute},
                    ExpressionAttributeValues=cutoff,
                )
            except dynamodb.exceptions.ConditionalCheckFailedException:
                continue
            count += 1
    return count


class Sweeper(threading.Thread):
    """Runs ``sweep()`` every ``interval`` seconds until ``stopping`` is set."""

    def __init__(self, interval: float = DEFAULT_INTERVAL) -> None:
        super().__init__(name="ttl-sweeper", daemon=True)
        self.interval = interval
        self.stopping = threading.Event()

    def run(self) -> None:
        while not self.stopping.wait(self.interval):
            sweep_logged()


def sweep_logged() -> None:
    """``sweep()``, a failure logged rather than raised (the stack keeps serving; the next
    round tries again)."""
    try:
        sweep()
    except Exception:  # noqa: BLE001
        log.exception("deleting expired items failed")
