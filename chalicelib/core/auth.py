"""Bearer tokens and the principal behind a request.

Tokens are random strings shaped like TFE's (``<14>.atlasv1.<64>``); only their SHA-256
is stored, as the key of the tokens table, so authenticating is one GetItem.

Each instance remembers the tokens it verified for ``token_cache_ttl`` seconds (5 by
default, ``REGISTRY_TOKEN_CACHE_SECONDS``), so a warm function answers most requests without
reading the token again. Deleting a token forgets it at once on the instance that deleted
it; on other instances a revoked token keeps working for at most that long. An expired token
is refused at once everywhere (the expiry travels with the cached entry).

An organization's audit trail token (HCP Terraform's ``audit-trails`` token type) reads that
organization's audit trail and nothing else: ``authenticate`` and ``request_principal``
refuse it (401) unless the route asks for it (``audit_trail=True``: the audit trail's own
route), and no browser session opens with it. The rule lives here, where every credential
is turned into a principal, so no route can forget it.

When a token was last used (``last-used-at``) is recorded without a write per request: only
when the token is read from DynamoDB (a cache miss) and the stored time is older than
``LAST_USED_EVERY`` (an hour): a warm instance writes nothing, and the time shown is the
first use of its hour, at most an hour behind.
"""

from __future__ import annotations

import hashlib
import logging
import secrets
import string
import threading
import time
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Literal

from pynamodb.attributes import BooleanAttribute, UnicodeAttribute, UTCDateTimeAttribute
from pynamodb.exceptions import UpdateError
from pynamodb.indexes import AllProjection, GlobalSecondaryIndex

from chalicelib.core import observe
from chalicelib.core.api.errors import Unauthorized
from chalicelib.core.data import db
from chalicelib.core.data.ids import new_id, now
from chalicelib.core.settings import get_settings

PrincipalKind = Literal["user", "team", "organization", "audit-trails"]
# The kind of an organization's audit trail token (go-tfe's ``AuditTrailToken`` type).
AUDIT_TRAILS: PrincipalKind = "audit-trails"
AUDIT_TRAIL_ONLY = "this token reads its organization's audit trail only"
# How far behind a token's recorded last use may be (see the module's note).
LAST_USED_EVERY = timedelta(hours=1)
log = logging.getLogger(__name__)
_ALPHABET = string.ascii_letters + string.digits


class TokenById(GlobalSecondaryIndex["TokenModel"]):
    class Meta:
        index_name = "by-id"
        projection = AllProjection()

    id = UnicodeAttribute(hash_key=True)


class TokenByOwner(GlobalSecondaryIndex["TokenModel"]):
    class Meta:
        index_name = "by-owner"
        projection = AllProjection()

    owner_id = UnicodeAttribute(hash_key=True)
    created_at = UTCDateTimeAttribute(range_key=True)


@db.register
class TokenModel(db.Model):
    """One API token. ``owner_id`` is a user id, a team id or an organization name."""

    Meta = db.table("tokens")

    token_hash = UnicodeAttribute(hash_key=True)
    id = UnicodeAttribute()
    kind = UnicodeAttribute()
    owner_id = UnicodeAttribute()
    organization = UnicodeAttribute(null=True)
    description = UnicodeAttribute(null=True)
    created_by = UnicodeAttribute(null=True)
    created_at = UTCDateTimeAttribute()
    expired_at = UTCDateTimeAttribute(null=True)
    # Set on every token of a suspended user (chalicelib.accounts.users.service.set_suspended):
    # refused while set, so suspending costs no read on the hot path.
    suspended = BooleanAttribute(null=True)
    # When the token was last used, at most ``LAST_USED_EVERY`` behind (``note_use``).
    last_used_at = UTCDateTimeAttribute(null=True)
    by_id = TokenById()
    by_owner = TokenByOwner()

    def delete(self, *args: Any, **kwargs: Any) -> Any:
        """Delete the token and forget it here at once (see the module's note on caching)."""
        result = super().delete(*args, **kwargs)
        verified.forget(self.token_hash)
        return result


@dataclass(frozen=True)
class Principal:
    """Who is calling: a user, a team (team token) or an organization (organization token)."""

    kind: PrincipalKind
    id: str
    token_id: str
    organization: str | None = None

    @property
    def is_user(self) -> bool:
        return self.kind == "user"

    @property
    def reads_audit_trail_only(self) -> bool:
        """An organization's audit trail token: its organization's trail, nothing else."""
        return self.kind == AUDIT_TRAILS


class TtlCache:
    """A small per-instance map whose entries live ``ttl()`` seconds (thread-safe: the local
    server runs requests on threads). At ``max_entries`` it starts again empty: simpler than
    an LRU, and a full cache of live tokens is rare."""

    def __init__(self, ttl: Any, max_entries: int = 10_000) -> None:
        self._ttl = ttl
        self._max = max_entries
        self._entries: dict[Any, tuple[float, Any]] = {}
        self._lock = threading.Lock()

    def get(self, key: Any) -> Any | None:
        with self._lock:
            entry = self._entries.get(key)
            if entry is None:
                return None
            if time.monotonic() - entry[0] >= self._ttl():
                del self._entries[key]
                return None
            return entry[1]

    def put(self, key: Any, value: Any) -> None:
        if self._ttl() <= 0:
            return
        with self._lock:
            if len(self._entries) >= self._max:
                self._entries.clear()
            self._entries[key] = (time.monotonic(), value)

    def forget(self, key: Any) -> None:
        with self._lock:
            self._entries.pop(key, None)

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()


def _token_ttl() -> float:
    return get_settings().token_cache_ttl


# token hash -> (Principal, expired_at, suspended): what authenticate read for it.
verified = TtlCache(_token_ttl)


def hash_token(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def generate_token() -> str:
    def part(n: int) -> str:
        return "".join(secrets.choice(_ALPHABET) for _ in range(n))

    return f"{part(14)}.atlasv1.{part(64)}"


def mint_token(
    kind: PrincipalKind,
    owner_id: str,
    *,
    organization: str | None = None,
    description: str | None = None,
    created_by: str | None = None,
    expired_at: datetime | None = None,
    secret: str | None = None,
) -> tuple[TokenModel, str]:
    """Store a new token and return it with its secret (shown once, never stored)."""
    item, secret = new_token(
        kind,
        owner_id,
        organization=organization,
        description=description,
        created_by=created_by,
        expired_at=expired_at,
        secret=secret,
    )
    item.save(condition=TokenModel.token_hash.does_not_exist())
    return item, secret


def new_token(
    kind: PrincipalKind,
    owner_id: str,
    *,
    organization: str | None = None,
    description: str | None = None,
    created_by: str | None = None,
    expired_at: datetime | None = None,
    secret: str | None = None,
) -> tuple[TokenModel, str]:
    """A new token's item, not yet written (``mint_token`` writes it; a caller writing it
    in a transaction puts it on the condition ``TokenModel.token_hash.does_not_exist()``),
    and its secret."""
    secret = secret or generate_token()
    item = TokenModel(
        hash_token(secret),
        id=new_id("at"),
        kind=kind,
        owner_id=owner_id,
        organization=organization,
        description=description,
        created_by=created_by,
        created_at=now(),
        expired_at=expired_at,
    )
    return item, secret


def authenticate(header: str | None, *, audit_trail: bool = False) -> Principal:
    """The principal for an ``Authorization: Bearer`` header, or 401 (an audit trail token
    too, unless ``audit_trail``)."""
    principal = _authenticate(header)
    if principal.reads_audit_trail_only and not audit_trail:
        raise Unauthorized(AUDIT_TRAIL_ONLY)
    return principal


def _authenticate(header: str | None) -> Principal:
    if not header:
        raise Unauthorized("missing Authorization header: send 'Authorization: Bearer <token>'")
    scheme, _, token = header.strip().partition(" ")
    token = token.strip()
    if scheme.lower() != "bearer" or not token:
        raise Unauthorized("the Authorization header must be 'Bearer <token>'")
    found = _verified(hash_token(token))
    if found is None:
        raise Unauthorized("invalid or revoked token")
    principal, expired_at, suspended = found
    if suspended:
        raise Unauthorized("the owner of this token is suspended")
    if _expired(expired_at):
        raise Unauthorized("token has expired")
    return principal


def principal_for_hash(token_hash: str) -> Principal | None:
    """What ``authenticate`` accepts, for a token known by its hash (a web UI session keeps
    only that): the principal, or None when the token is unknown, revoked or expired."""
    found = _verified(token_hash)
    if found is None or found[2] or _expired(found[1]) or found[0].reads_audit_trail_only:
        return None
    return found[0]


def _verified(token_hash: str) -> tuple[Principal, datetime | None, bool] | None:
    """The principal of the token stored under ``token_hash``, its expiry and whether its
    owner is suspended, kept per instance for a few seconds (``verified``); None when there
    is no such token."""
    cached = verified.get(token_hash)
    if cached is None:
        try:
            item = TokenModel.get(token_hash)
        except TokenModel.DoesNotExist:
            return None
        principal = Principal(
            kind=item.kind,  # type: ignore[arg-type]
            id=item.owner_id,
            token_id=item.id,
            organization=item.organization,
        )
        cached = (principal, item.expired_at, bool(item.suspended))
        verified.put(token_hash, cached)
        note_use(item)
    return cached


def note_use(item: TokenModel) -> None:
    """Record that the token just read is in use, when what is stored is older than
    ``LAST_USED_EVERY`` (one UpdateItem an hour a token; none while it is cached). A token
    deleted meanwhile is left alone, and a failed write never refuses the request."""
    at = now()
    if item.last_used_at is not None and at - item.last_used_at < LAST_USED_EVERY:
        return
    try:
        with observe.bookkeeping():  # no one's change: no audit event
            item.update(
                actions=[TokenModel.last_used_at.set(at)],
                condition=TokenModel.token_hash.exists(),
            )
    except UpdateError as exc:
        if not db.conditional_failure(exc):
            log.warning("could not record a token's last use: %s", type(exc).__name__)


def _expired(expired_at: datetime | None) -> bool:
    return expired_at is not None and expired_at <= now()


def request_principal(request: Any, *, audit_trail: bool = False) -> Principal:
    """``authenticate`` once per request: the rate limiter (which must tell real tokens from
    made-up ones) and the route share the answer, so a request costs one token lookup. An
    audit trail token is refused unless ``audit_trail`` (the audit trail's route)."""
    memo = getattr(request, "_registry_principal", None)
    if memo is None:
        try:
            memo = _authenticate(request.headers.get("authorization"))
        except Unauthorized as refused:
            memo = refused
        request._registry_principal = memo
    if isinstance(memo, Unauthorized):
        raise memo
    if memo.reads_audit_trail_only and not audit_trail:
        raise Unauthorized(AUDIT_TRAIL_ONLY)
    return memo
