"""What a request reads from DynamoDB: calls, and bytes as DynamoDB bills them (the size of
every item it returns, attribute names included: what Query, GetItem and BatchGetItem are
charged on; a Query of an index is charged on the projected size, which is what the index
returns). Counted at PynamoDB's connection, so every read of every route is seen.

No side effects on import: the tests use it as well as the benchmarks.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any


def value_size(value: dict[str, Any]) -> int:
    """DynamoDB's size of one attribute value (``{"S": ...}`` and so on)."""
    (kind, inner), *_ = value.items()
    if kind == "S":
        return len(inner.encode())
    if kind == "N":
        digits = Decimal(inner).normalize().as_tuple().digits
        return math.ceil(len(digits) / 2) + 1
    if kind == "B":
        return len(inner) if isinstance(inner, bytes) else len(str(inner).encode())
    if kind in ("BOOL", "NULL"):
        return 1
    if kind == "SS":
        return sum(len(s.encode()) for s in inner)
    if kind == "NS":
        return sum(value_size({"N": n}) for n in inner)
    if kind == "BS":
        return sum(len(b) for b in inner)
    if kind == "L":
        return 3 + sum(1 + value_size(v) for v in inner)
    if kind == "M":
        return 3 + sum(1 + len(k.encode()) + value_size(v) for k, v in inner.items())
    raise ValueError(kind)


def item_size(item: dict[str, Any]) -> int:
    return sum(len(name.encode()) + value_size(value) for name, value in item.items())


def returned_items(operation: str, response: dict[str, Any]) -> list[dict[str, Any]]:
    if operation in ("Query", "Scan"):
        return list(response.get("Items", []))
    if operation == "GetItem":
        return [response["Item"]] if response.get("Item") else []
    if operation == "BatchGetItem":
        return [item for items in response.get("Responses", {}).values() for item in items]
    if operation == "TransactGetItems":
        return [r["Item"] for r in response.get("Responses", []) if r.get("Item")]
    return []


# The operations that write, and where each names its tables.
WRITES = ("PutItem", "UpdateItem", "DeleteItem", "BatchWriteItem", "TransactWriteItems")


def written_tables(operation: str, kwargs: dict[str, Any]) -> list[str]:
    """The tables a write operation writes (none for a read)."""
    if operation not in WRITES:
        return []
    if operation == "BatchWriteItem":
        return list(kwargs.get("RequestItems", {}))
    if operation == "TransactWriteItems":
        return [
            part["TableName"]
            for entry in kwargs.get("TransactItems", [])
            for part in entry.values()
            if isinstance(part, dict) and "TableName" in part
        ]
    return [kwargs["TableName"]]


@dataclass
class Reads:
    calls: Counter[str] = field(default_factory=Counter)
    bytes: int = 0
    items: int = 0
    # The tables written (a request's writes: the rate limiter's counter, an audit event...).
    written: Counter[str] = field(default_factory=Counter)

    def clear(self) -> None:
        self.calls.clear()
        self.bytes = 0
        self.items = 0
        self.written.clear()

    @property
    def total_calls(self) -> int:
        return sum(self.calls.values())

    def detail(self) -> str:
        return ", ".join(f"{op} {n}" for op, n in sorted(self.calls.items()))


@contextmanager
def counting_reads() -> Iterator[Reads]:
    """Count every DynamoDB call PynamoDB sends and the bytes of the items returned."""
    from pynamodb.connection.base import Connection

    reads = Reads()
    original = Connection._make_api_call

    def counted(self: Any, operation_name: str, operation_kwargs: dict) -> Any:
        response = original(self, operation_name, operation_kwargs)
        reads.calls[operation_name] += 1
        reads.written.update(written_tables(operation_name, operation_kwargs))
        for item in returned_items(operation_name, response or {}):
            reads.items += 1
            reads.bytes += item_size(item)
        return response

    Connection._make_api_call = counted
    try:
        yield reads
    finally:
        Connection._make_api_call = original
