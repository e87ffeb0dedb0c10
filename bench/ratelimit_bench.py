"""The API rate limiter's DynamoDB writes: ``python bench/ratelimit_bench.py``.

Runs the real routes through Chalice's test client on moto (in-process), with the limiter on
at the default limit (30 a second) and its clock held still inside each scenario's second.
Counts the UpdateItem calls on the ``rate-limits`` table (a conditional update that fails is
billed too: 1 WRU each, as one that succeeds on an item under 1 KB) and the requests let
through. Several instances of one function are simulated by giving each its own local counts
(``admin.ratelimit.LocalCounts``) and sending the requests to them in turn.

Before (0.11.0): one conditional UpdateItem per request, refused ones included, by
construction. Prices: AWS list prices, us-east-1, DynamoDB on-demand, $0.625 per million WRU
since November 2024; the issue's table used the earlier $1.25.
"""

from __future__ import annotations

import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import bench.common  # noqa: E402, F401 - moto's environment, before chalicelib is imported

LIMIT = 30
WRU_PRICE = 0.625  # USD per million write request units, on-demand, us-east-1 (Nov 2024)
ISSUE_WRU_PRICE = 1.25  # what the issue's table used
START = 1_900_000_000.25  # a quarter into a second


class Writes:
    """UpdateItem calls on the rate-limits table."""

    count = 0


@contextmanager
def counting_limiter_writes() -> Iterator[None]:
    from pynamodb.connection.base import Connection

    original = Connection._make_api_call

    def counted(self: Any, operation: str, kwargs: dict[str, Any]) -> Any:
        if operation == "UpdateItem" and str(kwargs.get("TableName", "")).endswith("rate-limits"):
            Writes.count += 1
        return original(self, operation, kwargs)

    Connection._make_api_call = counted  # type: ignore[method-assign]
    try:
        yield
    finally:
        Connection._make_api_call = original  # type: ignore[method-assign]


class Seconds:
    """The limiter's clock: each scenario (or each install) in a second of its own."""

    def __init__(self) -> None:
        self.now = START

    def __call__(self) -> float:
        return self.now

    def next(self) -> None:
        self.now += 1


def run(client: Any, seconds: Seconds, paths: list[str], token: str, instances: int) -> int:
    """Send ``paths`` within one second over ``instances`` instances in turn; the number let
    through."""
    from chalicelib.admin import ratelimit

    seconds.next()
    counts = [ratelimit.LocalCounts() for _ in range(instances)]
    headers = {"Authorization": f"Bearer {token}"}
    through = 0
    for n, path in enumerate(paths):
        ratelimit.instance_counts = counts[n % instances]
        status = client.http.get(path, headers=headers).status_code
        assert status in (200, 204, 429), (path, status)
        through += status != 429
    return through


def main() -> None:
    from chalice.test import Client
    from moto import mock_aws

    with mock_aws():
        from app import app
        from bench.protocol_bench import _admin_id, seed
        from chalicelib.admin import ratelimit
        from chalicelib.admin.store import forget_cached_settings, write_settings
        from infrastructure.resources import provision

        provision()
        _admin_id()
        token = seed("acme", modules=1, versions=1)
        write_settings("general", {"api-rate-limiting-enabled": True, "api-rate-limit": LIMIT})
        forget_cached_settings()
        seconds = Seconds()
        ratelimit.clock = seconds
        base = "/api/registry/v1/modules/acme/big/aws"
        install = ["/.well-known/terraform.json", f"{base}/versions", f"{base}/1.0.0/download"]
        share = ratelimit.share_of(LIMIT)
        print(
            f"API rate limiter (moto in-process, limit {LIMIT}/s, share {share}/s per instance; "
            "writes: UpdateItem on rate-limits, 1 WRU each):"
        )
        with Client(app, project_dir=tempfile.mkdtemp()) as client, counting_limiter_writes():
            run(client, seconds, install, token, 1)  # warm: settings and the token cached
            installs = 1000
            Writes.count = 0
            for _ in range(installs):
                assert run(client, seconds, install, token, 1) == len(install)
            per_install = Writes.count / installs
            print(
                f"  {installs} installs (discovery, versions, download; one a second): "
                f"{Writes.count} writes, {per_install:.2f} per install (before: 3)"
            )
            Writes.count = 0
            through = run(client, seconds, install * 5, token, 1)
            print(
                f"  a busy token, 5 installs (15 requests) in a second on one instance: "
                f"{through} let through, {Writes.count} writes (before: 15)"
            )
            rows = [
                ("a client at the limit, 30 requests in a second", 30, 1),
                ("a flood, 1,000 requests in a second", 1000, 1),
                ("the flood over 2 instances in turn", 1000, 2),
                ("the flood over 4 instances in turn", 1000, 4),
                ("the flood over 10 instances in turn", 1000, 10),
            ]
            for label, requests, instances in rows:
                Writes.count = 0
                through = run(client, seconds, [install[1]] * requests, token, instances)
                bound = LIMIT + (instances - 1) * share
                print(
                    f"  {label}: {through} let through (tolerance {bound}), "
                    f"{Writes.count} writes (before: {requests})"
                )
        before, after = 3.0, per_install
        print(
            "  per million installs, the limiter's writes: before "
            f"{before:.0f} M WRU = ${before * WRU_PRICE:.2f} (${before * ISSUE_WRU_PRICE:.2f} at "
            f"the issue's ${ISSUE_WRU_PRICE}/M); now {after:.2f} M WRU = "
            f"${after * WRU_PRICE:.2f} for clients under the share"
        )


if __name__ == "__main__":
    main()
