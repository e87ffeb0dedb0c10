"""What a million module installs cost: ``python bench/cost_bench.py``.

One install is what ``terraform init`` of one private module asks: service discovery
(``/.well-known/terraform.json``), the module's ``versions``, its ``download`` (a 204 naming a
presigned S3 URL), then the archive straight from S3. The DynamoDB side is measured, not
assumed: every call the real routes make (moto, in-process), the read units from the bytes of
the items each read returns, the write units from the size of each item a write leaves (an
UpdateItem is billed on the larger of the item before and after it). It is measured twice:
through the whole app's REST events (today's path: three API Gateway REST requests) and
through the deployed shape of this branch (discovery through the meta function's entry app,
``versions`` and ``download`` through the protocol function's entry app with function URL
events: chalicelib.entry.function_url). Both run the code of the checkout: the rate limiter
and the download counter are whatever it has (Parts J1 and J2 land in parallel: re-run).

Prices: AWS list prices, us-east-1, 2026-11-28 (first tiers, no free tier):

- API Gateway REST $3.50 per million requests; HTTP API $1.00 per million; a Lambda
  function URL $0 (only the function's own invocation and duration).
- Lambda $0.20 per million requests; duration $0.0000166667 per GB-second on x86_64,
  $0.0000133334 on arm64 (20 % less). Since 2025-08-01 the INIT phase of a cold start is
  billed as duration too.
- DynamoDB on demand, since 2024-11-01: $0.625 per million write request units and $0.125 per
  million read request units (the issue's table used the older $1.25 and $0.25; both shown).
- S3 GET $0.0004 per 1,000 requests; CloudWatch Logs ingestion $0.50 per GB. Data transfer
  out (the archive's bytes) is left out, as in the issue.

Lambda duration is assumed, not measured (moto in-process says nothing of DynamoDB's real
latency): warm billed durations ``DURATION_MS`` per invocation, and a share ``COLD_SHARE`` of
invocations paying ``INIT_MS`` more. Logs: Lambda's START/END/REPORT lines (``PLATFORM_LOG``
bytes) plus the registry's one request line (measured: its formatted length plus
``LOG_PREFIX`` bytes of timestamp and request id).
"""

from __future__ import annotations

import logging
import math
import sys
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.common import allow_bursts  # noqa: E402
from bench.reads import item_size, returned_items  # noqa: E402

PER_MILLION = 1_000_000
REST_API = 3.50
HTTP_API = 1.00
LAMBDA_REQUEST = 0.20
GB_SECOND = {"x86_64": 0.0000166667, "arm64": 0.0000133334}
WRU, RRU = 0.625, 0.125
WRU_BEFORE_2024, RRU_BEFORE_2024 = 1.25, 0.25
S3_GET = 0.40
LOGS_PER_GB = 0.50

# Warm billed duration (ms) and memory (MB) of each invocation of an install (assumptions:
# a handful of in-region DynamoDB calls of 3-8 ms each, a presign done locally).
DURATION_MS = {"discovery": 5, "versions": 30, "download": 40}
MEMORY_MB = {"discovery": 256, "versions": 512, "download": 512}
COLD_SHARE = 0.01
INIT_MS = 1_000
PLATFORM_LOG = 330
LOG_PREFIX = 90

DISCOVERY = "/.well-known/terraform.json"
MODULE = "/api/registry/v1/modules/cost-org/big/aws"


@dataclass
class Units:
    """DynamoDB calls and request units of one request."""

    calls: dict[str, int] = field(default_factory=dict)
    rru: float = 0.0
    wru: float = 0.0
    largest_written: int = 0

    def add(self, other: Units) -> None:
        for op, n in other.calls.items():
            self.calls[op] = self.calls.get(op, 0) + n
        self.rru += other.rru
        self.wru += other.wru
        self.largest_written = max(self.largest_written, other.largest_written)

    @property
    def detail(self) -> str:
        return ", ".join(f"{op} {n}" for op, n in sorted(self.calls.items()))


def _read_units(operation: str, kwargs: dict[str, Any], response: dict[str, Any]) -> float:
    per = 1.0 if kwargs.get("ConsistentRead") else 0.5
    sizes = [item_size(item) for item in returned_items(operation, response)]
    if operation == "Query":  # billed on the sum of what it returns
        return per * max(1, math.ceil(sum(sizes) / 4096))
    if operation in ("GetItem", "BatchGetItem"):
        return per * max(1, sum(math.ceil(size / 4096) for size in sizes))
    return 0.0


@contextmanager
def metering() -> Iterator[Units]:
    """Meter every DynamoDB call PynamoDB sends, into the Units yielded (reset it per
    request). A write's units: the larger of its item before and after, per started KB
    (read around it with calls that are not metered)."""
    from pynamodb.connection.base import Connection

    units = Units()
    original = Connection._make_api_call

    def item_bytes(self: Any, table: str, key: dict[str, Any]) -> int:
        found = original(self, "GetItem", {"TableName": table, "Key": key})
        return item_size(found["Item"]) if found and found.get("Item") else 0

    def metered(self: Any, operation: str, kwargs: dict[str, Any]) -> Any:
        units.calls[operation] = units.calls.get(operation, 0) + 1
        if operation in ("UpdateItem", "DeleteItem"):
            before = item_bytes(self, kwargs["TableName"], kwargs["Key"])
            response = original(self, operation, kwargs)
            after = item_bytes(self, kwargs["TableName"], kwargs["Key"])
            units.wru += max(1, math.ceil(max(before, after) / 1024))
            units.largest_written = max(units.largest_written, after)
            return response
        if operation == "PutItem":
            size = item_size(kwargs["Item"])
            units.wru += max(1, math.ceil(size / 1024))
            units.largest_written = max(units.largest_written, size)
            return original(self, operation, kwargs)
        if operation == "TransactWriteItems":  # two units per KB of each item
            units.wru += 2 * len(kwargs.get("TransactItems", []))
            return original(self, operation, kwargs)
        response = original(self, operation, kwargs)
        units.rru += _read_units(operation, kwargs, response or {})
        return response

    Connection._make_api_call = metered
    try:
        yield units
    finally:
        Connection._make_api_call = original


class LogBytes(logging.Handler):
    """The bytes of the registry's log lines (formatted, plus Lambda's prefix)."""

    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.bytes = 0

    def emit(self, record: logging.LogRecord) -> None:
        self.bytes += len(self.format(record).encode()) + LOG_PREFIX


def seed() -> tuple[str, list[str]]:
    """The organization ``cost-org`` (its module ``big``), its team token, and 100 more
    team tokens: consumers of one version."""
    from bench.protocol_bench import seed as seed_org
    from chalicelib.accounts.teams.service import create_team
    from chalicelib.accounts.tokens.service import create_team_token
    from chalicelib.core.auth import Principal

    token = seed_org("cost-org", modules=1, versions=3)
    from bench.protocol_bench import _admin_id

    admin = Principal("user", _admin_id(), "bench")
    consumers = []
    for index in range(100):
        team = create_team(admin, "cost-org", f"consumer{index:03d}", None, {})
        consumers.append(create_team_token(admin, team.id, None)[1])
    return token, consumers


Request = Callable[[str, str], int]


def rest_client(app: Any) -> tuple[Any, Request]:
    from chalice.test import Client

    client = Client(app, project_dir=tempfile.mkdtemp())

    def get(path: str, token: str) -> int:
        response = client.http.get(path, headers={"Authorization": f"Bearer {token}"})
        return int(response.status_code)

    return client, get


def url_request(app: Any) -> Request:
    from chalice.local import LambdaContext

    def get(path: str, token: str) -> int:
        event = {
            "version": "2.0",
            "rawPath": path,
            "rawQueryString": "",
            "headers": {"authorization": f"Bearer {token}", "user-agent": "Terraform/1.9.0"},
            "requestContext": {
                "http": {"method": "GET", "path": path, "sourceIp": "198.51.100.7"},
                "stage": "$default",
            },
            "isBase64Encoded": False,
        }
        return int(app(event, LambdaContext("ProtocolFunction", 512))["statusCode"])

    return get


def install(
    steps: dict[str, Request], token: str, units: Units, logs: LogBytes
) -> tuple[dict[str, Units], int]:
    """One install's requests; the Units and log bytes of each."""
    per_step: dict[str, Units] = {}
    logs.bytes = 0
    for step, path, expected in (
        ("discovery", DISCOVERY, 200),
        ("versions", f"{MODULE}/versions", 200),
        ("download", f"{MODULE}/1.0.0/download", 204),
    ):
        units.calls.clear()
        units.rru = units.wru = 0.0
        units.largest_written = 0
        status = steps[step](path, token)
        assert status == expected, (step, status)
        per_step[step] = Units(dict(units.calls), units.rru, units.wru, units.largest_written)
    return per_step, logs.bytes


@dataclass
class Design:
    name: str
    api: dict[str, float]  # per million requests of each step
    architecture: str
    measured: dict[str, Units]
    log_bytes: int

    def rows(self) -> dict[str, float]:
        total = Units()
        for step_units in self.measured.values():
            total.add(step_units)
        api = sum(self.api.values())
        invocations = len(DURATION_MS)
        gb_seconds = sum(
            (DURATION_MS[s] + COLD_SHARE * INIT_MS) / 1000 * MEMORY_MB[s] / 1024
            for s in DURATION_MS
        )
        lambda_cost = (
            LAMBDA_REQUEST * invocations + gb_seconds * GB_SECOND[self.architecture] * PER_MILLION
        )
        logs = (self.log_bytes + PLATFORM_LOG * invocations) * PER_MILLION / 1e9 * LOGS_PER_GB
        return {
            "API requests": api,
            "Lambda": lambda_cost,
            "DynamoDB writes": total.wru * WRU,
            "DynamoDB reads": total.rru * RRU,
            "S3 GET": S3_GET,
            "CloudWatch Logs": logs,
        }


def table(designs: list[Design]) -> str:
    lines = [
        "| per million module installs | " + " | ".join(d.name for d in designs) + " |",
        "| --- |" + " ---: |" * len(designs),
    ]
    rows = [d.rows() for d in designs]
    for label in rows[0]:
        lines.append(f"| {label} | " + " | ".join(f"${r[label]:.2f}" for r in rows) + " |")
    lines.append("| **total** | " + " | ".join(f"**${sum(r.values()):.2f}**" for r in rows) + " |")
    return "\n".join(lines)


def main() -> None:
    from moto import mock_aws

    with mock_aws():
        from app import app
        from chalicelib.entry.api.meta import app as meta_app
        from chalicelib.entry.api.protocol import app as protocol_app
        from infrastructure.resources import provision

        provision()
        allow_bursts()
        token, consumers = seed()
        logs = LogBytes()
        logging.getLogger("registry").addHandler(logs)
        client, rest = rest_client(app)
        meta_client, meta = rest_client(meta_app)
        url = url_request(protocol_app)
        today_steps = {"discovery": rest, "versions": rest, "download": rest}
        edge_steps = {"discovery": meta, "versions": url, "download": url}
        with client, meta_client, metering() as units:
            # Warm instances (the token verified before): the steady state of a busy registry.
            install(today_steps, token, units, logs)
            today, today_logs = install(today_steps, token, units, logs)
            install(edge_steps, token, units, logs)
            edge, edge_logs = install(edge_steps, token, units, logs)
            # One version downloaded by 100 consumers: what its download writes.
            for consumer in consumers:
                rest(f"{MODULE}/1.1.0/download", consumer)
            units.calls.clear()
            units.wru = 0.0
            rest(f"{MODULE}/1.1.0/download", token)
            crowded_wru, crowded_bytes = units.wru, units.largest_written

    print("DynamoDB per install, measured (moto in-process, warm instance, team token):")
    for label, measured in (("today (REST)", today), ("edge (function URL)", edge)):
        for step, step_units in measured.items():
            print(
                f"  {label:<20} {step:<9} {sum(step_units.calls.values())} calls "
                f"({step_units.detail or 'none'}), {step_units.rru:.1f} RRU, "
                f"{step_units.wru:.0f} WRU"
            )
    print(
        f"  a download of a version 100 consumers downloaded before: {crowded_wru:.0f} WRU "
        f"in all (the largest item it wrote: {crowded_bytes:,} bytes)"
    )
    print(f"  log bytes per install (registry lines): {today_logs} today, {edge_logs} edge")
    rest_api = {step: REST_API for step in DURATION_MS}
    designs = [
        Design("0.11 (REST, x86_64)", rest_api, "x86_64", today, today_logs),
        Design(
            "edge: function URL (x86_64)",
            {"discovery": REST_API, "versions": 0.0, "download": 0.0},
            "x86_64",
            edge,
            edge_logs,
        ),
        Design(
            "edge + arm64",
            {"discovery": REST_API, "versions": 0.0, "download": 0.0},
            "arm64",
            edge,
            edge_logs,
        ),
        Design(
            "edge + arm64 + discovery on an HTTP API",
            {"discovery": HTTP_API, "versions": 0.0, "download": 0.0},
            "arm64",
            edge,
            edge_logs,
        ),
    ]
    print()
    print(table(designs))
    print()
    wru = sum(u.wru for u in edge.values())
    rru = sum(u.rru for u in edge.values())
    print(
        f"DynamoDB per million installs: ${wru * WRU + rru * RRU:.2f} at today's prices, "
        f"${wru * WRU_BEFORE_2024 + rru * RRU_BEFORE_2024:.2f} at the issue's ($1.25/M WRU, "
        f"$0.25/M RRU); a download of the crowded version: ${crowded_wru * WRU:.2f}"
    )
    print(
        f"Assumptions: warm billed ms {DURATION_MS}, memory MB {MEMORY_MB}, "
        f"{COLD_SHARE:.0%} cold starts of {INIT_MS} ms (INIT billed), "
        f"{PLATFORM_LOG} B of Lambda platform log lines per invocation."
    )


if __name__ == "__main__":
    main()
