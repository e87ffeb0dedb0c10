"""An audit event: HCP Terraform's audit-trail record (go-tfe v1.109.0's ``AuditTrail``:
``id``, ``version``, ``type``, ``timestamp``, ``auth``, ``request``, ``resource``), built from
the request the change is made in (``core.observe``'s scope: request id, source address,
user agent) and the caller (``core.auth.Principal``).

What HCP's shape has no field for goes beside its fields, never in place of them: the source
address and user agent in ``request`` (``source_address``, ``user_agent``), the outcome in
``resource.meta`` (``outcome``). Every string is cut to its bound before the event is written
(a 500 KB user agent is cut, not a 500), and ``meta`` is bounded in keys, values and list
lengths: nothing a caller sends can make the item pass DynamoDB's 400 KB.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

from chalicelib.core import observe
from chalicelib.core.data.ids import iso, now

if TYPE_CHECKING:
    from chalicelib.core.auth import Principal

# HCP's schema version and event type for a change to a resource.
VERSION = "0"
TYPE = "Resource"
# ``auth.type``: a caller's own credential (HCP also has ``Impersonated`` and ``System``).
CLIENT = "Client"
SYSTEM = "System"
# ``resource.meta.outcome``: the change was made (a refused change records ``refused`` later).
SUCCEEDED = "succeeded"

# Bounds, in characters (each at most 4 bytes in UTF-8).
MAX_ID = 255  # ids, types, actions, request ids, organization names
MAX_DESCRIPTION = 255  # the actor's description (a username)
MAX_ADDRESS = 64  # an IPv6 address with a zone is at most 45-ish
MAX_USER_AGENT = 512
MAX_META_KEYS = 32
MAX_META_KEY = 64
MAX_META_TEXT = 1024
MAX_META_LIST = 64
# What marks a cut string: its bound includes it.
CUT = "…"


def _no_name(principal: Principal) -> str | None:
    return None


# How a user is described (their username): accounts knows it and sits above core, so the
# entry apps give it (``entry.wiring``); until then an event names the user by id.
_describe: Callable[[Principal], str | None] = _no_name


def describe_users_with(describe: Callable[[Principal], str | None]) -> None:
    """Give the events the user's name (``accounts.users.service.shown_username``)."""
    global _describe
    _describe = describe


def cut(value: str | None, bound: int) -> str | None:
    """``value`` at most ``bound`` characters (a longer one ends with ``…``)."""
    if value is None or len(value) <= bound:
        return value
    return value[: bound - len(CUT)] + CUT


def _meta_value(value: Any) -> Any:
    """A meta value, bounded: text, numbers, booleans, None, or a short list of them."""
    if value is None or isinstance(value, bool | int | float):
        return value
    if isinstance(value, list | tuple | set | frozenset):
        items = sorted(value, key=str) if isinstance(value, set | frozenset) else list(value)
        return [_meta_value(v) for v in items[:MAX_META_LIST] if not isinstance(v, list | dict)]
    return cut(str(value), MAX_META_TEXT)


def bounded_meta(meta: dict[str, Any] | None) -> dict[str, Any]:
    """At most ``MAX_META_KEYS`` keys (cut to ``MAX_META_KEY``), each value bounded (one
    key is kept for the outcome)."""
    kept = list((meta or {}).items())[: MAX_META_KEYS - 1]
    return {str(cut(str(k), MAX_META_KEY)): _meta_value(v) for k, v in kept}


def new_event_id() -> str:
    """A random UUID (HCP's event ids are UUIDs; ``os.urandom`` rather than ``uuid``, whose
    import costs a cold start ~9 ms)."""
    h = os.urandom(16).hex()
    return f"{h[:8]}-{h[8:12]}-4{h[13:16]}-{'89ab'[int(h[16], 16) % 4]}{h[17:20]}-{h[20:32]}"


@dataclass(frozen=True)
class Auth:
    """Who acted: ``accessor_id`` (a user, team or organization token's owner), ``description``
    (a user's username), ``type`` (``Client``; ``System`` for the registry's own workers),
    ``impersonator_id`` (who acted as ``accessor_id``; None), ``organization_id``."""

    accessor_id: str
    description: str
    type: str = CLIENT
    impersonator_id: str | None = None
    organization_id: str = ""


@dataclass(frozen=True)
class Request:
    """Which request: its id, and (beside HCP's field) its source address and user agent."""

    id: str
    source_address: str | None = None
    user_agent: str | None = None


@dataclass(frozen=True)
class Resource:
    """What was changed: ``id``, ``type`` (e.g. ``registry-module-version``), ``action`` (e.g.
    ``deprecated``), ``meta`` (what else says what happened, ``outcome`` among it)."""

    id: str
    type: str
    action: str
    meta: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Event:
    """One audit event. ``organization`` is the partition it is kept in (None: site-wide)."""

    id: str
    timestamp: datetime
    auth: Auth
    request: Request
    resource: Resource
    organization: str | None = None
    version: str = VERSION
    type: str = TYPE

    def to_json(self) -> dict[str, Any]:
        """HCP's shape, as go-tfe's ``AuditTrail`` decodes it (its JSON field names)."""
        return {
            "id": self.id,
            "version": self.version,
            "type": self.type,
            "timestamp": iso(self.timestamp),
            "auth": {
                "accessor_id": self.auth.accessor_id,
                "description": self.auth.description,
                "type": self.auth.type,
                "impersonator_id": self.auth.impersonator_id,
                "organization_id": self.auth.organization_id,
            },
            "request": {
                "id": self.request.id,
                "source_address": self.request.source_address,
                "user_agent": self.request.user_agent,
            },
            "resource": {
                "id": self.resource.id,
                "type": self.resource.type,
                "action": self.resource.action,
                "meta": self.resource.meta,
            },
        }


@dataclass(frozen=True)
class _Acting:
    accessor_id: str
    description: str
    meta: dict[str, Any]


_acting: ContextVar[_Acting | None] = ContextVar("audit_acting", default=None)


@contextmanager
def as_system(accessor_id: str, description: str, **meta: Any) -> Iterator[None]:
    """Within: the events of changes made for a principal are the registry's own (``auth``
    type System, ``accessor_id`` and ``description`` naming what acts: a bundle import's job),
    with ``meta`` added (who started it). The principal still decides what may be done."""
    token = _acting.set(_Acting(accessor_id, description, meta))
    try:
        yield
    finally:
        _acting.reset(token)


def event(
    principal: Principal | None,
    *,
    organization: str | None,
    resource_type: str,
    resource_id: str,
    action: str,
    meta: dict[str, Any] | None = None,
    outcome: str = SUCCEEDED,
    description: str | None = None,
    moment: datetime | None = None,
) -> Event:
    """The event of a change made now, in the current request (``observe``'s scope): every
    field bounded. ``principal`` None: the registry itself (a worker), ``auth.type`` System.
    ``description``: the actor as a person reads it (by default a user's username), else
    its id."""
    scope = observe.current()
    request = Request(
        id=cut(scope.request_id if scope else "", MAX_ID) or "",
        source_address=cut(scope.source_address if scope else None, MAX_ADDRESS),
        user_agent=cut(scope.user_agent if scope else None, MAX_USER_AGENT),
    )
    acting = _acting.get()
    if principal is None:
        auth = Auth("registry", "the registry", SYSTEM, organization_id=organization or "")
    elif acting is not None:
        auth = Auth(
            accessor_id=cut(acting.accessor_id, MAX_ID) or "",
            description=cut(acting.description, MAX_DESCRIPTION) or "",
            type=SYSTEM,
            organization_id=cut(organization or "", MAX_ID) or "",
        )
        meta = {**acting.meta, **(meta or {})}
    else:
        if description is None and principal.is_user:
            description = _describe(principal)
        auth = Auth(
            accessor_id=cut(principal.id, MAX_ID) or "",
            description=cut(description or principal.id, MAX_DESCRIPTION) or "",
            organization_id=cut(organization or principal.organization or "", MAX_ID) or "",
        )
    resource = Resource(
        id=cut(resource_id, MAX_ID) or "",
        type=cut(resource_type, MAX_ID) or "",
        action=cut(action, MAX_ID) or "",
        meta={**bounded_meta(meta), "outcome": cut(outcome, MAX_ID)},
    )
    return Event(
        id=new_event_id(),
        timestamp=moment or now(),
        auth=auth,
        request=request,
        resource=resource,
        organization=cut(organization, MAX_ID),
    )
