"""What every in-process benchmark shares: moto's environment (set before anything from
chalicelib is imported), a DynamoDB call counter, and a rate limit bursts never reach."""

from __future__ import annotations

import os
import sys
from collections import Counter
from contextlib import contextmanager
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.update(
    AWS_ACCESS_KEY_ID="bench",
    AWS_SECRET_ACCESS_KEY="bench",
    AWS_DEFAULT_REGION="us-east-1",
    REGISTRY_TABLE_PREFIX="bench-",
)
os.environ.pop("AWS_ENDPOINT_URL", None)

CALLS: Counter[str] = Counter()


@contextmanager
def counting_dynamodb():
    """Count every DynamoDB operation PynamoDB sends."""
    from pynamodb.connection.base import Connection

    original = Connection._make_api_call

    def counted(self: Any, operation_name: str, operation_kwargs: dict) -> Any:
        CALLS[operation_name] += 1
        return original(self, operation_name, operation_kwargs)

    Connection._make_api_call = counted
    try:
        yield
    finally:
        Connection._make_api_call = original


def allow_bursts() -> None:
    """Keep the rate limiter on (its UpdateItem is part of every request's cost) with a limit
    the benchmark's bursts from one token never reach."""
    from chalicelib.admin.store import forget_cached_settings, write_settings

    write_settings("general", {"api-rate-limiting-enabled": True, "api-rate-limit": 1_000_000})
    forget_cached_settings()
