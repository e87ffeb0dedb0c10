"""The audit trail's cost: what a change costs with its event, and what a million events cost
to keep (``python bench/audit_bench.py``; ``make bench`` runs it).

1. Changes through the real routes (Chalice's test client on moto, in-process), each with and
   without its event (``trail.record_in`` switched off): DynamoDB calls, the items written,
   their write units (1 KB per unit, twice inside a transaction) and the event item's bytes
   (DynamoDB's item size: attribute names and values).
2. The export of a batch of events (``chalicelib.audit.export``) to S3 and CloudWatch Logs:
   the objects and log calls a batch makes.
3. A million events kept for the default 400 days, at the list prices below (us-east-1,
   on-demand; each assumption is printed with its figure).
"""

from __future__ import annotations

import json
import math
import statistics
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.common import CALLS, counting_dynamodb  # noqa: E402

ORG = "bench-audit"

# List prices, us-east-1, in US dollars (AWS's pricing pages, November 2026).
DYNAMODB_WRU = 0.625 / 1e6  # on-demand, per write request unit
DYNAMODB_GB_MONTH = 0.25  # Standard table class storage
DYNAMODB_PITR_GB_MONTH = 0.20  # continuous backups (the template enables them)
DYNAMODB_ITEM_OVERHEAD = 100  # bytes DynamoDB adds to each item's stored size
LAMBDA_REQUEST = 0.20 / 1e6
LAMBDA_GB_SECOND = 0.0000166667  # x86
EXPORT_MEMORY_GB = 0.25  # the AuditExport function's 256 MB
EXPORT_SECONDS = 0.1  # assumed billed duration of one invocation (S3 + Logs, warm)
S3_PUT = 0.005 / 1000
S3_GB_MONTH = 0.023  # Standard
LOGS_INGEST_GB = 0.50  # Standard log class
LOGS_GB_MONTH = 0.03  # archived; charged on the compressed size, counted raw here
LOG_EVENT_OVERHEAD = 26  # bytes CloudWatch Logs counts per event
RETENTION_MONTHS = 400 / 30.4  # the default retention, in months
GB = 1024**3


def item_size(item: dict[str, Any]) -> int:
    """DynamoDB's size of an item in its wire format: each attribute's name and value
    (strings in UTF-8, numbers about a byte per two digits plus one)."""

    def value(v: dict[str, Any]) -> int:
        kind, held = next(iter(v.items()))
        if kind in ("S", "B"):
            return len(str(held).encode())
        if kind == "N":
            return math.ceil(len(str(held).lstrip("-").replace(".", "")) / 2) + 1
        if kind in ("BOOL", "NULL"):
            return 1
        if kind == "M":
            return 3 + sum(len(k.encode()) + value(x) + 1 for k, x in held.items())
        if kind == "L":
            return 3 + sum(value(x) + 1 for x in held)
        if kind in ("SS", "NS"):
            return sum(len(str(x).encode()) for x in held)
        return 0

    return sum(len(name.encode()) + value(v) for name, v in item.items())


def transaction_item(entry: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """(table, the item or key written) of one TransactWriteItems entry."""
    (kind, body), *_ = entry.items()
    return body["TableName"], body.get("Item") or body.get("Key") or {}


WRITES: list[tuple[str, str, int, bool]] = []  # (operation, table, bytes, in a transaction)


@contextmanager
def counting_writes() -> Iterator[None]:
    """Note every item each write sends (its table and size), besides the call counts."""
    from pynamodb.connection.base import Connection

    original = Connection._make_api_call

    def noted(self: Any, operation_name: str, kwargs: dict[str, Any]) -> Any:
        if operation_name == "TransactWriteItems":
            for entry in kwargs["TransactItems"]:
                table, item = transaction_item(entry)
                WRITES.append((next(iter(entry)), table, item_size(_whole(entry, item)), True))
        elif operation_name in ("PutItem", "UpdateItem", "DeleteItem"):
            item = kwargs.get("Item") or kwargs.get("Key") or {}
            WRITES.append((operation_name, kwargs["TableName"], item_size(item), False))
        return original(self, operation_name, kwargs)

    Connection._make_api_call = noted
    try:
        yield
    finally:
        Connection._make_api_call = original


def _whole(entry: dict[str, Any], key: dict[str, Any]) -> dict[str, Any]:
    """An Update's item as it will be (the audit event is created by an Update: its key and
    the values it sets); other entries as sent."""
    body = entry.get("Update")
    if body is None:
        return key
    values = body.get("ExpressionAttributeValues", {})
    names = body.get("ExpressionAttributeNames", {})
    item = dict(key)
    for placeholder, name in names.items():
        for value_name, value in values.items():
            if f"{placeholder} = {value_name}" in body.get("UpdateExpression", ""):
                item[name] = value
    return item


def write_units(writes: list[tuple[str, str, int, bool]]) -> int:
    """Write units of the writes: each item's size in KB, rounded up, twice in a transaction
    (a condition check costs one read unit instead: left out)."""
    return sum(
        (2 if in_tx else 1) * max(1, math.ceil(size / 1024))
        for operation, _, size, in_tx in writes
        if operation != "ConditionCheck"
    )


def changes() -> tuple[list[tuple[str, ...]], list[tuple[int, int]]]:
    """Each change with and without its event; the events' item sizes."""
    from chalice.test import Client
    from moto import mock_aws

    with mock_aws():
        from app import app
        from chalicelib.accounts.organizations.service import create_organization
        from chalicelib.accounts.users.service import bootstrap_admin, create_user
        from chalicelib.core.audit import store, trail
        from chalicelib.core.auth import Principal, mint_token
        from infrastructure.resources import provision

        provision()
        admin_user, _ = bootstrap_admin("bench-admin")
        admin = Principal("user", admin_user.id, "bench")
        create_organization(admin, ORG, "bench@example.com", limited=False)
        auditor = create_user("auditor", "auditor@example.com")
        mint_token("user", auditor.id)

        def doc(type_: str, **attributes: Any) -> dict[str, Any]:
            return {"data": {"type": type_, "attributes": attributes}}

        severities = iter(["high", "critical", "medium", "low"] * 4)
        operations = [
            (
                "publishing policy changed (PATCH, 2 attributes)",
                "PATCH",
                f"/api/v2/organizations/{ORG}/registry-policy",
                lambda: doc(
                    "registry-policies",
                    **{"block-severity": next(severities), "require-readme": True},
                ),
            ),
            (
                "audit trail token created (POST ?token=audit-trails)",
                "POST",
                f"/api/v2/organizations/{ORG}/authentication-token?token=audit-trails",
                lambda: None,
            ),
            (
                "site auditor granted (POST .../grant_auditor)",
                "POST",
                f"/api/v2/admin/users/{auditor.id}/actions/grant_auditor",
                lambda: None,
            ),
        ]
        rows = []
        agent = {"User-Agent": "terraform-provider-tfe/0.68.2 go-tfe/1.109.0 (linux/amd64)"}
        with (
            Client(app, project_dir=tempfile.mkdtemp()) as client,
            counting_dynamodb(),
            counting_writes(),
        ):
            headers = {
                "Authorization": "Bearer bench-admin",
                "Content-Type": "application/vnd.api+json",
                **agent,
            }
            for label, method, path, body in operations:
                for recorded in (True, False):
                    original = trail.record_in
                    if not recorded:
                        trail.record_in = lambda tx, event: None  # type: ignore[assignment]
                    try:
                        for _ in range(2):  # the second is measured: caches warm, as in use
                            CALLS.clear()
                            WRITES.clear()
                            sent = body()
                            answer = client.http.request(
                                method,
                                path,
                                headers=headers,
                                body=json.dumps(sent).encode() if sent is not None else b"",
                            )
                    finally:
                        trail.record_in = original
                    assert answer.status_code < 300, (path, answer.status_code, answer.body)
                    events = [w for w in WRITES if w[1].endswith(store.TABLE)]
                    rows.append(
                        (
                            label if recorded else "  the same without its event",
                            str(sum(CALLS.values())),
                            ", ".join(f"{op} {n}" for op, n in sorted(CALLS.items())),
                            str(len(WRITES)),
                            str(write_units(WRITES)),
                            str(events[0][2]) if events else "-",
                        )
                    )
        # Every event the bench recorded: (item bytes, JSON line bytes).
        sizes = [
            (item_size(item.serialize()), len(item.document.encode()))
            for item in store.AuditEventModel.scan()
        ]
    return rows, sizes


def export_batch() -> tuple[int, int, int]:
    """A batch of 100 events across two hours through the export: (events, S3 objects, log
    calls)."""
    from datetime import UTC, datetime, timedelta

    from chalicelib.audit import export
    from chalicelib.core.audit import events

    start = datetime.now(UTC).replace(minute=59, second=0, microsecond=0) - timedelta(hours=1)
    made = [
        events.event(
            None,
            organization=ORG,
            resource_type="registry-module-version",
            resource_id=f"1.{n}.0",
            action="uploaded",
            moment=start + timedelta(seconds=n),
        )
        for n in range(100)
    ]
    lines = [
        export.Line(f"{e.timestamp:%Y-%m-%dT%H:%M:%S.%fZ}#{e.id}", json.dumps(e.to_json()))
        for e in made
    ]
    hours = len({line.hour for line in lines})
    calls = sum(1 for day in {line.day for line in lines} for _ in export._chunks(lines))
    return len(lines), hours, calls


def million(event_bytes: float, item_bytes: float) -> list[tuple[str, float, str]]:
    """What a million events cost: written once, then each month kept (400 days)."""
    n = 1e6
    stored_gb = n * (item_bytes + DYNAMODB_ITEM_OVERHEAD) / GB
    line_gb = n * (event_bytes + 1) / GB
    log_gb = n * (event_bytes + LOG_EVENT_OVERHEAD) / GB
    units = 2 * max(1, math.ceil(item_bytes / 1024))
    rows = [
        (
            "DynamoDB writes (event in the change's transaction)",
            n * units * DYNAMODB_WRU,
            f"{units} WRU an event (a {item_bytes:.0f}-byte item, transactional)",
        ),
        (
            "DynamoDB Streams (read by Lambda)",
            0.0,
            "GetRecords by a Lambda trigger is free",
        ),
        (
            "Lambda, one event per invocation (worst)",
            n * (LAMBDA_REQUEST + EXPORT_MEMORY_GB * EXPORT_SECONDS * LAMBDA_GB_SECOND),
            f"{EXPORT_SECONDS * 1000:.0f} ms billed at 256 MB each (assumed)",
        ),
        (
            "Lambda, batches of 100 (busy)",
            n / 100 * (LAMBDA_REQUEST + EXPORT_MEMORY_GB * 0.3 * LAMBDA_GB_SECOND),
            "300 ms billed at 256 MB a batch (assumed)",
        ),
        ("S3 PUTs, one object an event (worst)", n * S3_PUT, "one object per batch and hour"),
        ("S3 PUTs, batches of 100 (busy)", n / 100 * S3_PUT, ""),
        (
            "CloudWatch Logs ingestion",
            log_gb * LOGS_INGEST_GB,
            f"{log_gb:.2f} GB ({event_bytes:.0f} bytes + 26 an event)",
        ),
    ]
    monthly = [
        (
            "DynamoDB storage, a month",
            stored_gb * DYNAMODB_GB_MONTH,
            f"{stored_gb:.2f} GB (item + 100 bytes overhead)",
        ),
        ("DynamoDB PITR backups, a month", stored_gb * DYNAMODB_PITR_GB_MONTH, ""),
        (
            "S3 Standard (Object Lock: no charge), a month",
            line_gb * S3_GB_MONTH,
            f"{line_gb:.2f} GB",
        ),
        (
            "CloudWatch Logs storage, a month",
            log_gb * LOGS_GB_MONTH,
            "raw size (AWS bills compressed: less)",
        ),
    ]
    return [
        *rows,
        *monthly,
        (
            "kept 400 days, all told (worst Lambda and S3 rows)",
            rows[0][1]
            + rows[2][1]
            + rows[4][1]
            + rows[6][1]
            + RETENTION_MONTHS * sum(cost for _, cost, _ in monthly),
            f"writes once, storage for {RETENTION_MONTHS:.1f} months",
        ),
    ]


def main() -> None:
    import logging

    # The runs without their events are, on purpose, changes with none: not worth a line each.
    logging.getLogger("registry.audit").setLevel(logging.CRITICAL)
    rows, sizes = changes()
    print("Audit trail: a change with its event (moto, through the routes; admin token):")
    print(f"  {'change':<52} {'calls':>5} {'items':>5} {'WRU':>4} {'event B':>7}")
    for label, calls, detail, items, units, event in rows:
        print(f"  {label:<52} {calls:>5} {items:>5} {units:>4} {event:>7}   ({detail})")
    items = [size for size, _ in sizes]
    lines = [size for _, size in sizes]
    print(
        f"  event items: {len(items)}, {min(items)}-{max(items)} bytes"
        f" (median {statistics.median(items):.0f}); their JSON lines {min(lines)}-{max(lines)}"
    )
    events, objects, calls = export_batch()
    print(
        f"Export of a batch of {events} events across 2 hours: {objects} S3 objects,"
        f" {calls} PutLogEvents call(s)"
    )
    item, document = max(items), max(lines)  # the largest measured, for every event
    print(f"A million events (a {item}-byte item, a {document}-byte JSON line each), US$:")
    for label, cost, note in million(document, item):
        print(f"  {label:<52} {cost:>8.2f}   {note}")


if __name__ == "__main__":
    main()
