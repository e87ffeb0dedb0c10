"""The public-registry proxy's cache (``public``): one item per upstream path with the
upstream's answer, shared by every Lambda instance. And the reads of the protocol's list
(``modules.store.ProtocolEntryModel``, which ``modules.store`` keeps): in order, or by key.

``fresh_until`` decides what is served; DynamoDB's TTL (``expires_at``) deletes entries long
stale, which are kept a while to be served when the upstream cannot be reached.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from datetime import timedelta

from pynamodb.attributes import NumberAttribute, TTLAttribute, UnicodeAttribute

from chalicelib.core.data import db
from chalicelib.modules.store import ProtocolEntryModel


@db.register
class PublicCacheModel(db.Model):
    Meta = db.table("public-registry-cache")

    path = UnicodeAttribute(hash_key=True)
    status = NumberAttribute()
    body = UnicodeAttribute()
    fresh_until = NumberAttribute()
    # DynamoDB's TTL deletes long-stale entries; fresh_until decides what is served.
    expires_at = TTLAttribute()


def cached(path: str) -> PublicCacheModel | None:
    """The cached answer for an upstream path, fresh or stale; None when there is none."""
    try:
        return PublicCacheModel.get(path)
    except PublicCacheModel.DoesNotExist:
        return None


def keep(path: str, status: int, body: str, fresh_until: float, expires_in: int) -> None:
    """Cache an answer: served until ``fresh_until`` (epoch seconds), deleted by DynamoDB
    ``expires_in`` seconds from now."""
    PublicCacheModel(
        path,
        status=status,
        body=body,
        fresh_until=int(fresh_until),
        expires_at=timedelta(seconds=expires_in),
    ).save()


def protocol_entries_of(
    organization: str, protocol_keys: list[str], want: int
) -> Iterator[ProtocolEntryModel]:
    """The organization's protocol list entries of ``protocol_keys`` (sorted), in their
    order, read by key in batches of ``want`` (what the caller expects to consume), then 4,
    16... times more (BatchGetItem, 100 keys a call); a key without an entry (a module
    without a servable version) is left out."""
    start, size = 0, max(1, want)
    while start < len(protocol_keys):
        batch = protocol_keys[start : start + size]
        found = {
            entry.protocol_key: entry
            for entry in ProtocolEntryModel.batch_get([(organization, key) for key in batch])
        }
        yield from (found[key] for key in batch if key in found)
        start, size = start + size, min(MAX_ENTRIES_READ, size * 4)


# The most protocol list entries (about 75 bytes each) one Query of a listing asks for.
MAX_ENTRIES_READ = 10_000


def protocol_entries(
    organization: str, key_prefix: str | None, want: int
) -> Iterator[ProtocolEntryModel]:
    """An organization's protocol list entries in order (those whose ``protocol_key`` starts
    with ``key_prefix``, when given), read in Queries of ``want`` entries (what the caller
    expects to consume), then 4, 16, 64 times more, at most 10,000 (about 750 KB): a page
    costs one Query of what it shows, a search that skips most entries a few."""
    condition = ProtocolEntryModel.protocol_key.startswith(key_prefix) if key_prefix else None
    start = None
    first = max(1, min(want, MAX_ENTRIES_READ))
    sizes = (min(MAX_ENTRIES_READ, first * 4**n) for n in itertools.count())
    for size in sizes:
        result = ProtocolEntryModel.query(
            organization, condition, limit=size, last_evaluated_key=start
        )
        yield from result
        start = result.last_evaluated_key
        if start is None:
            return
