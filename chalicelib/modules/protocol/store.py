"""The public-registry proxy's cache (``public``): one item per upstream path with the
upstream's answer, shared by every Lambda instance.

``fresh_until`` decides what is served; DynamoDB's TTL (``expires_at``) deletes entries long
stale, which are kept a while to be served when the upstream cannot be reached.
"""

from __future__ import annotations

from datetime import timedelta

from pynamodb.attributes import NumberAttribute, TTLAttribute, UnicodeAttribute

from chalicelib.core.data import db


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
