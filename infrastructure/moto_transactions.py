"""moto's TransactWriteItems, made to cost what the transaction touches.

moto keeps a transaction's undo copy by deep-copying every table the transaction names,
all its items included, before the first write. Every change of the registry is a
transaction with its audit event (``chalicelib.core.audit``), so under moto each change
copied the whole ``audit-events`` table, and a test's changes cost the square of their
number (measured: 40 of a test file's 110 s went to ``copy.deepcopy``).

``install()`` gives moto an undo copy that holds the same: the table's item maps copied one
level deep, sharing the items the transaction does not name, with deep copies of those it
names (the only ones its updates change in place) and of the stream's records. A cancelled
transaction then puts back exactly what was there, as before. Used by the tests and the local
stack (``infrastructure.local``).

moto puts a cancelled transaction's tables back whole, as they were when it began: a write
another thread made meanwhile (the local stack serves requests and runs its workers in
threads) was lost with it. So every single-item write and every transaction takes one lock
(``WRITES``): a transaction's tables change only under it, and putting them back loses
nothing. And moto put back other table objects, with other stream shards: a stream reader's
iterator, which holds the shard it was made from, then read nothing more, ever (seen: both
readers of ``audit-events`` stopped when a transaction naming it was cancelled). The tables
are put back in place instead (``_put_back_in_place``). DynamoDB does both itself; this only
gives moto the same.
"""

from __future__ import annotations

import copy
import threading
from collections.abc import Callable
from typing import Any

_prepared = threading.local()
# Held by each write of moto's DynamoDB backend (a transaction from start to rollback).
WRITES = threading.RLock()
SINGLE_WRITES = ("put_item", "update_item", "delete_item")


def _serialized(method: Callable[..., Any]) -> Callable[..., Any]:
    def write(self: Any, *args: Any, **kwargs: Any) -> Any:
        with WRITES:
            return method(self, *args, **kwargs)

    write._serialized = True  # type: ignore[attr-defined]
    return write


def _key_of(table: Any, op_type: str, op: dict[str, Any]) -> tuple[Any, Any]:
    from moto.dynamodb.models.dynamo_type import DynamoType

    key = op["Item"] if op_type == "Put" else op["Key"]
    hash_value = DynamoType(key[table.hash_key_attr])
    range_attr = table.range_key_attr
    range_value = DynamoType(key[range_attr]) if range_attr and range_attr in key else None
    return hash_value, range_value


def _undo_copy(table: Any, keys: list[tuple[Any, Any]]) -> Any:
    """A copy of ``table`` to put back on a cancellation: its item maps one level deep, the
    items at ``keys`` (and the stream's records) deep-copied."""
    undo = copy.copy(table)
    items = copy.copy(table.items)  # keeps a defaultdict a defaultdict
    if table.range_key_attr:
        for hash_value in items:
            items[hash_value] = dict(items[hash_value])
    for hash_value, range_value in keys:
        if table.range_key_attr:
            held = items.get(hash_value)
            if held is not None and range_value in held:
                held[range_value] = copy.deepcopy(held[range_value])
        elif hash_value in items:
            items[hash_value] = copy.deepcopy(items[hash_value])
    undo.items = items
    if table.stream_shard is not None:
        shard = copy.copy(table.stream_shard)
        shard.items = list(table.stream_shard.items)
        shard.table = undo
        undo.stream_shard = shard
    return undo


def _put_back_in_place(tables: dict[str, Any], live: dict[str, Any]) -> None:
    """After a cancellation moto puts the undo copies in place of the tables; put the
    tables back, holding the copies' items and stream records. A stream reader's shard
    iterator holds the table's shard object: a new one would leave it reading a shard that
    no write reaches any more."""
    for name, table in live.items():
        restored = tables.get(name)
        if restored is None or restored is table:
            continue
        table.items = restored.items
        if table.stream_shard is not None and restored.stream_shard is not None:
            table.stream_shard.items = restored.stream_shard.items
        tables[name] = table


class _CopyModule:
    """What moto's DynamoDB models see as ``copy``: a prepared undo copy for a table of the
    running transaction, ``copy.deepcopy`` for anything else."""

    copy = staticmethod(copy.copy)

    @staticmethod
    def deepcopy(value: Any, memo: Any = None) -> Any:
        prepared = getattr(_prepared, "tables", None)
        if prepared and id(value) in prepared:
            return prepared.pop(id(value))
        return copy.deepcopy(value, memo)


def install() -> None:
    """Patch moto's DynamoDB backend (once; idempotent)."""
    from moto.dynamodb import models

    backend = models.DynamoDBBackend
    if getattr(backend.transact_write_items, "_light_undo", False):
        return
    original: Callable[..., None] = backend.transact_write_items

    def transact_write_items(self: Any, transact_items: list[dict[str, Any]]) -> None:
        keys: dict[str, list[tuple[Any, Any]]] = {}
        for item in transact_items:
            if len(item) != 1:
                break  # moto refuses it: nothing to prepare
            op_type, op = next(iter(item.items()))
            table = self.tables.get(op.get("TableName"))
            if table is None or op_type not in ("Put", "Update", "Delete", "ConditionCheck"):
                continue
            try:
                keys.setdefault(table.name, []).append(_key_of(table, op_type, op))
            except (KeyError, TypeError):
                keys.setdefault(table.name, [])  # moto answers the malformed key itself
        live = {name: self.tables[name] for name in keys}
        _prepared.tables = {
            id(table): _undo_copy(table, keys[name]) for name, table in live.items()
        }
        try:
            original(self, transact_items)
        finally:
            _prepared.tables = None
            _put_back_in_place(self.tables, live)

    transact_write_items._light_undo = True  # type: ignore[attr-defined]
    backend.transact_write_items = _serialized(transact_write_items)  # type: ignore[method-assign]
    backend.transact_write_items._light_undo = True  # type: ignore[attr-defined]
    for name in SINGLE_WRITES:
        setattr(backend, name, _serialized(getattr(backend, name)))
    models.copy = _CopyModule  # type: ignore[assignment]
