"""The web UI's one table: browser sessions, keyed by the SHA-256 of the session cookie.

The cookie's value (a random secret) is never stored, only its hash; the session holds the
hash of the API token it was opened with (never the token), a CSRF token, and when it ends.
DynamoDB's TTL deletes expired items eventually; ``session.py`` refuses them at once.
"""

from __future__ import annotations

from pynamodb.attributes import TTLAttribute, UnicodeAttribute, UTCDateTimeAttribute

from chalicelib.core.data import db


@db.register
class WebSessionModel(db.Model):
    """One signed-in browser."""

    Meta = db.table("web-sessions")

    session_hash = UnicodeAttribute(hash_key=True)
    token_hash = UnicodeAttribute()
    csrf = UnicodeAttribute()
    created_at = UTCDateTimeAttribute()
    expires = TTLAttribute()


def get(session_hash: str) -> WebSessionModel | None:
    try:
        return WebSessionModel.get(session_hash)
    except WebSessionModel.DoesNotExist:
        return None
