"""What the module cache keeps: one table, ``module-cache``, and objects under ``v1/cache/``.

* ``<namespace>/<name>/<provider>`` (lower case) + ``versions``: the upstream's version
  list as last fetched (``body``: the version strings), fresh until ``fresh_until``; an
  empty list (a name the upstream does not have, written whichever token asked) also
  ``expires`` then, so DynamoDB's TTL deletes it rather than letting such names pile up;
* the same address + ``v#<version>``: a cached version: its archive's SHA-256 and size,
  the S3 keys of the archive and of its parsed metadata, when it was fetched and from
  which source host, its last use (bookkeeping, written at most once an hour per
  instance), and ``conflict`` when the upstream later served other bytes for it (the
  cached archive is kept and served; the conflict is for a site admin to see);
* the same address + ``d#<version>``: the upstream's detail of a version not cached yet
  (``body``: its root, submodules and examples, READMEs cut to ``DETAIL_BYTES``), fresh
  until ``fresh_until`` and served stale after that when the upstream cannot answer; a
  cached version's detail is what its own archive's ingest found.

Archives live in S3 under their digest (``v1/cache/<sha256>.tar.gz``, metadata beside
them): the same bytes are stored once whatever serves them (a second protocol, a bundle),
and outside ``v1/object/``, so their puts raise no upload events.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from pynamodb.attributes import (
    JSONAttribute,
    NumberAttribute,
    TTLAttribute,
    UnicodeAttribute,
    UTCDateTimeAttribute,
)
from pynamodb.exceptions import PutError

from chalicelib.core.data import db

PREFIX = "v1/cache/"
VERSIONS = "versions"
VERSION = "v#"
DETAIL = "d#"


def address(namespace: str, name: str, provider: str) -> str:
    return f"{namespace}/{name}/{provider}".lower()


def archive_key(sha256: str) -> str:
    return f"{PREFIX}{sha256}.tar.gz"


def metadata_key(sha256: str) -> str:
    return f"{PREFIX}{sha256}.json.gz"


@db.register
class CachedModel(db.Model):
    Meta = db.table("module-cache")

    address = UnicodeAttribute(hash_key=True)
    item = UnicodeAttribute(range_key=True)
    # versions: ``{"versions": [...], "stale": bool}``; a version: nothing
    body = JSONAttribute(null=True)
    fresh_until = NumberAttribute(default=0)
    # a negative versions entry: DynamoDB's TTL deletes it (fresh_until decides what is read)
    expires = TTLAttribute(null=True)
    # a cached version
    sha256 = UnicodeAttribute(null=True)
    # what names the content at its source: the archive's SHA-256, or ``git:<commit>``
    identity = UnicodeAttribute(null=True)
    size = NumberAttribute(null=True)
    archive_key = UnicodeAttribute(null=True)
    metadata_key = UnicodeAttribute(null=True)
    source_host = UnicodeAttribute(null=True)
    fetched_at = UTCDateTimeAttribute(null=True)
    last_used = UTCDateTimeAttribute(null=True)
    conflict = JSONAttribute(null=True)

    @property
    def version(self) -> str:
        return self.item[len(VERSION) :]


def _get(address_: str, item: str) -> CachedModel | None:
    try:
        return CachedModel.get(address_, item)
    except CachedModel.DoesNotExist:
        return None


def kept_versions(address_: str) -> CachedModel | None:
    return _get(address_, VERSIONS)


def keep_versions(address_: str, versions: dict[str, Any], fresh_until: float) -> None:
    """Keep the upstream's list (``{"versions": [...], "stale": bool}``); an empty one is
    deleted by DynamoDB once no longer fresh."""
    item = CachedModel(address_, VERSIONS, body=versions, fresh_until=int(fresh_until))
    if not versions.get("versions"):
        item.expires = datetime.fromtimestamp(int(fresh_until), UTC)
    item.save()


def kept_detail(address_: str, version: str) -> CachedModel | None:
    return _get(address_, DETAIL + version)


def keep_detail(address_: str, version: str, detail: dict[str, Any], fresh_until: float) -> None:
    CachedModel(address_, DETAIL + version, body=detail, fresh_until=int(fresh_until)).save()


def cached_version(address_: str, version: str) -> CachedModel | None:
    return _get(address_, VERSION + version)


def cached_versions(address_: str) -> list[CachedModel]:
    """Every cached version of a module (one Query)."""
    condition = CachedModel.item.startswith(VERSION)
    return list(CachedModel.query(address_, range_key_condition=condition))


def add_version(address_: str, version: str, **fields: Any) -> bool:
    """Record a cached version, unless one is recorded already (False then: the first
    stays, whatever this one holds)."""
    item = CachedModel(address_, VERSION + version, **fields)
    try:
        item.save(condition=CachedModel.item.does_not_exist())
    except PutError as exc:
        if db.conditional_failure(exc):
            return False
        raise
    return True


def mark_conflict(item: CachedModel, found: dict[str, Any]) -> None:
    item.update(actions=[CachedModel.conflict.set(found)])


def mark_used(item: CachedModel, moment: datetime | None = None) -> None:
    item.update(actions=[CachedModel.last_used.set(moment or datetime.now(UTC))])


def every_version(start: dict[str, Any] | None, limit: int) -> tuple[list[CachedModel], Any]:
    """A page of every cached version (a Scan: for the site admins' list), and where the
    next page starts (None at the end)."""
    found = CachedModel.scan(
        CachedModel.item.startswith(VERSION), limit=limit, last_evaluated_key=start
    )
    page = list(found)
    return page, found.last_evaluated_key
