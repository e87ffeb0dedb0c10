"""Bearer tokens and the principal behind a request.

Tokens are random strings shaped like TFE's (``<14>.atlasv1.<64>``); only their SHA-256
is stored, as the key of the tokens table, so authenticating is one GetItem.
"""

from __future__ import annotations

import hashlib
import secrets
import string
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

from pynamodb.attributes import UnicodeAttribute, UTCDateTimeAttribute
from pynamodb.indexes import AllProjection, GlobalSecondaryIndex

from chalicelib.core import db
from chalicelib.core.errors import Unauthorized
from chalicelib.core.ids import new_id, now

PrincipalKind = Literal["user", "team", "organization"]
_ALPHABET = string.ascii_letters + string.digits


class TokenById(GlobalSecondaryIndex):
    class Meta:
        index_name = "by-id"
        projection = AllProjection()

    id = UnicodeAttribute(hash_key=True)


class TokenByOwner(GlobalSecondaryIndex):
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
    by_id = TokenById()
    by_owner = TokenByOwner()


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
    item.save(condition=TokenModel.token_hash.does_not_exist())
    return item, secret


def authenticate(header: str | None) -> Principal:
    """The principal for an ``Authorization: Bearer`` header, or 401."""
    if not header:
        raise Unauthorized("missing Authorization header: send 'Authorization: Bearer <token>'")
    scheme, _, token = header.strip().partition(" ")
    token = token.strip()
    if scheme.lower() != "bearer" or not token:
        raise Unauthorized("the Authorization header must be 'Bearer <token>'")
    try:
        item = TokenModel.get(hash_token(token))
    except TokenModel.DoesNotExist:
        raise Unauthorized("invalid or revoked token") from None
    if item.expired_at is not None and item.expired_at <= now():
        raise Unauthorized("token has expired")
    return Principal(
        kind=item.kind,  # type: ignore[arg-type]
        id=item.owner_id,
        token_id=item.id,
        organization=item.organization,
    )


def request_principal(request: Any) -> Principal:
    """``authenticate`` once per request: the rate limiter (which must tell real tokens from
    made-up ones) and the route share the answer, so a request costs one token lookup."""
    memo = getattr(request, "_registry_principal", None)
    if memo is None:
        try:
            memo = authenticate(request.headers.get("authorization"))
        except Unauthorized as refused:
            memo = refused
        request._registry_principal = memo
    if isinstance(memo, Unauthorized):
        raise memo
    return memo
