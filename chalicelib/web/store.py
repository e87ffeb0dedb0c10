"""The web UI's tables: browser sessions, keyed by the SHA-256 of the session cookie, and
``terraform login``'s authorization codes (``LoginCodeModel``, ``chalicelib.web.oauth``).

The cookie's value (a random secret) is never stored, only its hash; the session holds the
hash of the API token it was opened with (never the token), a CSRF token, and when it ends.
DynamoDB's TTL deletes expired items eventually; ``session.py`` refuses them at once.

It keeps the second steps of two-factor sign-ins (``SecondStepModel``) too, and one more
item: the key that signs the sign-in form's CSRF tokens
(``signing_key``), sealed with KMS like every secret at rest (``chalicelib.core.secrets``),
under a key no session can have (a session's is 64 hex digits).

``login-codes`` holds one item per authorization code, keyed by the code's SHA-256 (the code
itself is never stored); DynamoDB's TTL deletes it eventually, ``oauth.py`` refuses it once
expired.
"""

from __future__ import annotations

import base64
import json
import secrets as random
from functools import cache

from pynamodb.attributes import (
    BooleanAttribute,
    TTLAttribute,
    UnicodeAttribute,
    UTCDateTimeAttribute,
)
from pynamodb.exceptions import PutError

from chalicelib.core import observe, secrets
from chalicelib.core.data import db
from chalicelib.core.data.ids import now

SIGNING_KEY_ID = "key:pre-sign-in-csrf"
SIGNING_KEY_PURPOSE = "web/pre-sign-in-csrf-key"


@db.register
class WebSessionModel(db.Model):
    """One signed-in browser."""

    Meta = db.table("web-sessions")

    session_hash = UnicodeAttribute(hash_key=True)
    token_hash = UnicodeAttribute()
    csrf = UnicodeAttribute()
    created_at = UTCDateTimeAttribute()
    expires = TTLAttribute()
    # Set when the session opened with a token minted for it (a password, an invitation):
    # signing out deletes that token too. A pasted token outlives its session.
    minted = BooleanAttribute(null=True)


class SecondStepModel(db.Model):
    """A password accepted, waiting for the two-factor code (not registered: the table is
    the one above): keyed ``step:`` + the SHA-256 of the secret in the browser's
    ``tfe_registry_2fa`` cookie, short-lived, deleted when used."""

    Meta = db.table("web-sessions")

    session_hash = UnicodeAttribute(hash_key=True)
    user_id = UnicodeAttribute()
    next = UnicodeAttribute()
    expires = TTLAttribute()


class WebKeyModel(db.Model):
    """A signing key in the sessions' table (not registered: the table is the one above).
    No ``expires``: DynamoDB's TTL never deletes it."""

    Meta = db.table("web-sessions")

    session_hash = UnicodeAttribute(hash_key=True)  # SIGNING_KEY_ID
    sealed = UnicodeAttribute()  # JSON of core.secrets.seal's answer
    created_at = UTCDateTimeAttribute()


@db.register
class LoginCodeModel(db.Model):
    """One authorization code, keyed by its SHA-256 (the code itself is never stored)."""

    Meta = db.table("login-codes")

    code_hash = UnicodeAttribute(hash_key=True)
    client_id = UnicodeAttribute()
    redirect_uri = UnicodeAttribute()
    code_challenge = UnicodeAttribute()
    user_id = UnicodeAttribute()
    # The id of the API token behind the session that approved (the new token's creator).
    approved_with = UnicodeAttribute()
    created_at = UTCDateTimeAttribute()
    # Refused by ``exchange`` once past; DynamoDB's TTL deletes the item eventually.
    expires = TTLAttribute()
    used_at = UTCDateTimeAttribute(null=True)
    token_id = UnicodeAttribute(null=True)  # the token the code was exchanged for


def get(session_hash: str) -> WebSessionModel | None:
    try:
        return WebSessionModel.get(session_hash)
    except WebSessionModel.DoesNotExist:
        return None


def second_step(step_key: str) -> SecondStepModel | None:
    """The second step stored under ``step_key`` (expired or not: the caller decides)."""
    try:
        return SecondStepModel.get(step_key)
    except SecondStepModel.DoesNotExist:
        return None


def login_code(code_hash: str) -> LoginCodeModel | None:
    try:
        return LoginCodeModel.get(code_hash)
    except LoginCodeModel.DoesNotExist:
        return None


def sessions() -> list[WebSessionModel]:
    """Every stored session (the signing key left out)."""
    return list(WebSessionModel.scan(WebSessionModel.token_hash.exists()))


@cache
def signing_key() -> bytes:
    """The instance's key for the sign-in form's CSRF tokens: read (and unsealed: one KMS
    Decrypt) once per process, created by the first instance that needs it."""
    try:
        item = WebKeyModel.get(SIGNING_KEY_ID)
    except WebKeyModel.DoesNotExist:
        item = _create_signing_key()
    plain = secrets.unseal(json.loads(item.sealed), purpose=SIGNING_KEY_PURPOSE)
    return base64.b64decode(plain)


def _create_signing_key() -> WebKeyModel:
    key = base64.b64encode(random.token_bytes(32)).decode("ascii")
    sealed = secrets.seal(key, purpose=SIGNING_KEY_PURPOSE)
    item = WebKeyModel(SIGNING_KEY_ID, sealed=json.dumps(sealed), created_at=now())
    try:
        with observe.bookkeeping():  # the server's own key, made on first use: no one's change
            item.save(condition=WebKeyModel.session_hash.does_not_exist())
    except PutError as failed:  # another instance created it first: use theirs
        if not db.conditional_failure(failed):
            raise
        item = WebKeyModel.get(SIGNING_KEY_ID)
    return item
