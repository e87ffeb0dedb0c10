"""Lists that page with keys: one place for reading a page of a list from DynamoDB.

A list is the items of one partition in key order (an organization's modules, tags, ...).
Reading a page must cost what the page returns, not what the partition holds, so:

* **The total is kept, not counted.** ``CountModel`` holds a count per (scope, part), changed
  by ``count_update`` inside the same transaction that puts or deletes an item of the list
  (under the item's own condition), so it is exact. ``meta.pagination.total-count`` reads one
  small item.
* **Skipping uses a lean index.** ``page[number]`` is an offset, and DynamoDB cannot skip
  without reading. A list whose items are large names a *lean* global secondary index on the
  same hash and range keys as the table, with a ``KEYS_ONLY`` (or small ``INCLUDE``)
  projection: a Query on it is billed on the projected size (tens of bytes per entry), so
  page 50 reads a lean entry for each item before it, then the page itself with one Query on
  the table starting after the last entry skipped (``ExclusiveStartKey``). Page 1 reads only
  its own items. A list whose items are lean already (tags: about 100 bytes) is its own index
  (``KeyedList`` without ``lean``). A list whose lean entries are items of their own in the
  list's order, naming their item by key (the claims of project and workspace names, keyed by
  organization and name) is a ``ClaimList``: a page reads the entries up to its end, then its
  items by key. Module versions need no index: the module item names them all.
* **Filters and searches read the lean index only.** A ``q`` search or a filter on what the
  key holds reads every lean entry of the partition (the total must be exact), keeps the
  matching ones and fetches just the page's full items with one BatchGetItem.
* **A search can read kept key sets instead.** A list that keeps ``KeySetModel`` items
  (``key_set_update`` in the transaction that puts or deletes an item, beside its count)
  holds every range key of the partition in ``KEY_SHARDS`` string sets: one Query of a few
  dozen items, however many items the list holds (DynamoDB bills the same bytes as the lean
  entries' keys, but a search makes one call of that, not a Query paging through thousands
  of index entries). ``kept_keys`` answers None when the sets do not hold the whole list
  (written before they were kept, until the backfill): the caller reads the lean index.

Why an index and not cursors cached per query: ``page[number]`` links are stateless and any
page can be asked first (go-tfe walks ``next-page``, the web UI and pytfe jump), cursors
would need a cache that is written on reads and goes stale on every write; the same-key
index needs no code on writes at all (DynamoDB keeps it), stays in the table's order by
construction, and costs one small index entry per item. Its reads are eventually
consistent, as the table Queries they replace already were.

Before a list's count is kept (data written before this, until ``python -m
infrastructure.backfill`` runs), callers pass ``total=None`` and the lean entries are counted.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from pynamodb.attributes import NumberAttribute, UnicodeAttribute, UnicodeSetAttribute
from pynamodb.indexes import GlobalSecondaryIndex
from pynamodb.transactions import TransactWrite

from chalicelib.core.api.pagination import Page
from chalicelib.core.data import db

# BatchGetItem takes at most 100 keys; a page is at most 100 items (MAX_PAGE_SIZE).
BATCH_GET_KEYS = 100


@db.register
class CountModel(db.Model):
    """A kept count: ``scope`` names the list (``registry-modules#acme``), ``part`` a part of
    it a filter selects with a key prefix (``private``/``public``), or ``all``."""

    Meta = db.table("list-counts")

    scope = UnicodeAttribute(hash_key=True)
    part = UnicodeAttribute(range_key=True)
    count = NumberAttribute(default=0)  # type: ignore[assignment]  # hides Model.count(), unused


ALL = "all"


def count_update(tx: TransactWrite, scope: str, part: str, delta: int) -> None:
    """Add ``delta`` to a count, inside the transaction that puts or deletes the item."""
    tx.update(CountModel(scope, part), actions=[CountModel.count.add(delta)])


def counts(scope: str) -> dict[str, int]:
    """Every part's count of a list (one Query of a few tiny items)."""
    return {item.part: int(item.count) for item in CountModel.query(scope)}


def set_counts(scope: str, values: dict[str, int]) -> None:
    """Overwrite a list's counts (the backfill, which counts the lean index)."""
    for part, value in values.items():
        CountModel(scope, part, count=value).save()


# How many string sets hold a list's keys: a key's set is the CRC-32 of the key modulo this.
# 64 sets of 20,000 module keys (about 30 bytes each) are about 9 KB each: a write of one
# costs up to 9 WRU, the search reads them in one Query of about 600 KB.
KEY_SHARDS = 64


class KeySetModel(db.Model):
    """A kept set of a list's range keys, in the counts' table (``CountModel``'s, which
    creates it: not registered again): ``scope`` is ``key_set_scope`` of the list's count
    scope, ``part`` the shard (``00`` to ``63``), ``members`` the keys, unordered."""

    Meta = db.table("list-counts")

    scope = UnicodeAttribute(hash_key=True)
    part = UnicodeAttribute(range_key=True)
    members = UnicodeSetAttribute(null=True, attr_name="keys")


def key_set_scope(scope: str) -> str:
    return f"keys#{scope}"


def key_shard(key: str) -> str:
    return f"{zlib.crc32(key.encode()) % KEY_SHARDS:02d}"


def key_set_update(tx: TransactWrite, scope: str, key: str, delta: int) -> None:
    """Add the key to its set (``delta`` > 0) or take it out, inside the transaction that
    puts or deletes the item (and counts it: ``count_update``). DynamoDB's ADD and DELETE
    of a set's element commute, so concurrent writers of one shard lose nothing."""
    item = KeySetModel(key_set_scope(scope), key_shard(key))
    members = KeySetModel.members
    tx.update(item, actions=[members.add({key}) if delta > 0 else members.delete({key})])


def kept_keys(scope: str, total: int) -> list[str] | None:
    """Every key of the list, sorted as DynamoDB sorts them (code points: UTF-8 bytes), from
    its kept sets (one Query); None when they do not hold ``total`` keys (the kept count of
    the whole list), i.e. they were not kept for all its items yet."""
    keys: list[str] = []
    for shard in KeySetModel.query(key_set_scope(scope)):
        keys.extend(shard.members or ())
    return sorted(keys) if len(keys) == total else None


def set_key_sets(scope: str, keys: Iterable[str]) -> bool:
    """Overwrite a list's kept sets with ``keys`` (the backfill); True when one changed."""
    wanted: dict[str, set[str]] = {}
    for key in keys:
        wanted.setdefault(key_shard(key), set()).add(key)
    kept = {s.part: set(s.members or ()) for s in KeySetModel.query(key_set_scope(scope))}
    changed = False
    for part in wanted.keys() | kept.keys():
        if wanted.get(part, set()) != kept.get(part, set()):
            KeySetModel(key_set_scope(scope), part, members=wanted.get(part) or None).save()
            changed = True
    return changed


def backfill_key_sets(scope_prefix: str, wanted: dict[str, list[str]]) -> int:
    """Make the kept sets of every list whose count scope starts with ``scope_prefix`` hold
    ``wanted`` (count scope -> every key; a scope left out: none), from a Scan of the sets
    (the backfill); how many lists' sets were written."""
    prefix = key_set_scope(scope_prefix)
    kept = {s.scope for s in KeySetModel.scan() if s.scope.startswith(prefix)}
    scopes = {scope.removeprefix(key_set_scope("")) for scope in kept} | wanted.keys()
    return sum(set_key_sets(scope, wanted.get(scope, [])) for scope in scopes)


@dataclass(frozen=True)
class KeyedList:
    """One partition of ``model`` in key order (``forward``), optionally narrowed by a range
    key ``condition`` (e.g. ``begins_with``); ``lean`` is the lean index (same hash and range
    keys, small projection), ``None`` when the items are lean themselves."""

    model: Any
    hash_value: str
    lean: GlobalSecondaryIndex[Any] | None = None
    condition: Any = None
    forward: bool = True

    def _index(self) -> Any:
        return self.lean if self.lean is not None else self.model

    def lean_entries(self, limit: int | None = None) -> Iterator[Any]:
        """The lean entries in list order (each a model instance holding the projected
        attributes: at least the keys)."""
        return iter(
            self._index().query(
                self.hash_value,
                self.condition,
                scan_index_forward=self.forward,
                limit=limit,
            )
        )

    def start_key(self, entry: Any) -> dict[str, Any]:
        """The table's ``ExclusiveStartKey`` just after ``entry``."""
        out = {}
        for attribute in (self.model._hash_key_attribute(), self.model._range_key_attribute()):
            if attribute is not None:
                value = getattr(entry, _python_name(self.model, attribute))
                out[attribute.attr_name] = {attribute.attr_type: attribute.serialize(value)}
        return out

    def after(self, entry: Any | None, limit: int) -> list[Any]:
        """Up to ``limit`` full items after ``entry`` (from the start when ``None``): one
        Query of the table."""
        return list(
            self.model.query(
                self.hash_value,
                self.condition,
                scan_index_forward=self.forward,
                limit=limit,
                last_evaluated_key=self.start_key(entry) if entry is not None else None,
            )
        )

    def full(self, entries: list[Any]) -> list[Any]:
        """The full items of ``entries``, in their order (BatchGetItem; gone ones left out)."""
        if self.lean is None:
            return entries
        keys = [self._key(entry) for entry in entries]
        found: dict[tuple[Any, ...], Any] = {}
        for start in range(0, len(keys), BATCH_GET_KEYS):
            batch = keys[start : start + BATCH_GET_KEYS]
            for item in self.model.batch_get(batch):
                found[self._key(item)] = item
        return [found[key] for key in keys if key in found]

    def _key(self, entry: Any) -> Any:
        model = self.model
        hash_value = getattr(entry, _python_name(model, model._hash_key_attribute()))
        range_attribute = model._range_key_attribute()
        if range_attribute is None:
            return hash_value
        return (hash_value, getattr(entry, _python_name(model, range_attribute)))


def _python_name(model: Any, attribute: Any) -> str:
    name: str
    for name, candidate in model.get_attributes().items():
        if candidate is attribute:
            return name
    raise KeyError(attribute.attr_name)


@dataclass(frozen=True)
class ClaimList:
    """Lean entries kept in a table of their own, in the list's order, each naming its item
    elsewhere: the items that claim projects' and workspaces' names, keyed by organization
    and name, hold the item's id. ``fetch`` turns entries into their items, in order."""

    lean: Any
    hash_value: str
    fetch: Callable[[list[Any]], list[Any]]
    forward: bool = True

    def lean_entries(self, limit: int | None = None) -> Iterator[Any]:
        return iter(self.lean.query(self.hash_value, scan_index_forward=self.forward, limit=limit))

    def page(self, offset: int, size: int) -> list[Any]:
        """The entries up to the page's end (one Query), then the page's items."""
        return self.full(list(self.lean_entries(limit=offset + size))[offset:])

    def full(self, entries: list[Any]) -> list[Any]:
        return self.fetch(entries) if entries else []


def _keyed_page(source: KeyedList, offset: int, size: int) -> list[Any]:
    last = None
    if offset:
        for last in source.lean_entries(limit=offset):  # noqa: B007 - the last one
            pass
        if last is None:
            return []
    return source.after(last, size)


def read_page(
    source: KeyedList | ClaimList,
    page: Page,
    *,
    total: int | None,
    matches: Callable[[Any], bool] | None = None,
) -> tuple[list[Any], int]:
    """The page's full items and the list's total.

    Without ``matches`` and with the kept ``total``: a ``KeyedList``'s page 1 is one Query of
    the table for the page, page N reads the lean entries before it (one Query of the lean
    index, limited to the offset), then the page from just after the last one; a
    ``ClaimList`` reads its entries up to the page's end, then the page's items by key. With
    ``matches`` (a filter or search on what the lean entries hold), or without a kept total
    (before the backfill), every lean entry is read, the matching ones counted, and the
    page's full items fetched by key."""
    if matches is None and total is not None:
        if page.offset >= total:
            return [], total
        if isinstance(source, ClaimList):
            return source.page(page.offset, page.size), total
        return _keyed_page(source, page.offset, page.size), total
    entries = [e for e in source.lean_entries() if matches is None or matches(e)]
    window = entries[page.offset : page.offset + page.size]
    return source.full(window), len(entries)
