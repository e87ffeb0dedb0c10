"""Windowed counters in the ``rate-limits`` table, shared by every Lambda instance: one item
per ``<who>#<window start>``, bumped by a single conditional UpdateItem (ADD n only while the
count stays within the limit) and expired by DynamoDB's TTL. The API's rate limiter
(``admin.ratelimit``) and the password sign-in throttle (``accounts.signin``) count here."""

from __future__ import annotations

from datetime import UTC, datetime

from pynamodb.attributes import NumberAttribute, TTLAttribute, UnicodeAttribute
from pynamodb.exceptions import UpdateError

from chalicelib.core.data import db


@db.register
class RateLimitModel(db.Model):
    """Hits of one client in one window: ``key`` = ``<client>#<window start>``."""

    Meta = db.table("rate-limits")

    key = UnicodeAttribute(hash_key=True)
    hits = NumberAttribute(default=0)
    expires = TTLAttribute(null=True)


def count_request(key: str, limit: int, expires_at: int, amount: int = 1) -> int | None:
    """Count ``amount`` requests in the window ``key`` if the count stays within ``limit``.

    One conditional UpdateItem. Returns the new count, or ``None`` (nothing counted) when
    ``amount`` more would pass the limit.
    """
    item = RateLimitModel(key)
    fits = RateLimitModel.hits <= limit - amount
    try:
        item.update(
            actions=[
                RateLimitModel.hits.add(amount),
                RateLimitModel.expires.set(datetime.fromtimestamp(expires_at, tz=UTC)),
            ],
            condition=RateLimitModel.hits.does_not_exist() | fits,
        )
    except UpdateError as exc:
        if db.conditional_failure(exc):
            return None
        raise
    return int(item.hits)


def uncount(key: str) -> None:
    """Take back one hit counted in ``key`` (an attempt that turned out not to count: a
    successful sign-in). Only while the item exists: never resurrects an expired window."""
    try:
        RateLimitModel(key).update(
            actions=[RateLimitModel.hits.add(-1)],
            condition=RateLimitModel.hits > 0,
        )
    except UpdateError as exc:
        if not db.conditional_failure(exc):
            raise
