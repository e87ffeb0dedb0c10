"""The module cache's settings: which upstream namespaces may be cached, and which hosts an
upstream's download answer may point to. One item; site admins change it
(``/api/v2/admin/module-cache-settings``); every instance re-reads it at most every
``REGISTRY_SETTINGS_CACHE_SECONDS``.

Nothing is allowed by default: a registry caches no public module until a site admin
names its namespaces. ``allowed-source-hosts`` defaults to ``github.com`` (where the public
registry's modules live); an entry is a host, with ``:port`` where not the scheme's default.

``namespace`` and ``source_host`` are the one home of what an entry may be (the request
model and ``save`` both call them); ``save`` writes the item with its audit event
(``module-cache-settings`` ``updated``) in one transaction, after every check: a refused
change writes nothing. An allowed namespace is reserved: no organization may take its
name (accounts asks ``reserved``, given through ``entry.wiring``), and a namespace that is
already an organization's name cannot be allowed (``save`` refuses it, naming it).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from pynamodb.attributes import ListAttribute, UnicodeAttribute, UTCDateTimeAttribute
from pynamodb.exceptions import TransactWriteError
from pynamodb.transactions import TransactWrite

from chalicelib.core.api.errors import Conflict, Unprocessable
from chalicelib.core.audit import events, trail
from chalicelib.core.data import db, instance_cache
from chalicelib.core.data.ids import now

if TYPE_CHECKING:
    from pynamodb.expressions.condition import Condition

    from chalicelib.core.auth import Principal

KEY = "module-cache-settings"
DEFAULT_SOURCE_HOSTS = ("github.com",)

# The bounds of the two lists, and of one entry (checked before anything is read or written).
MAX_NAMESPACES = 100
MAX_NAMESPACE = 64
MAX_SOURCE_HOSTS = 50
MAX_HOST = 253  # a DNS name's longest text form
MAX_SOURCE_HOST = MAX_HOST + len(":65535")
NAMESPACES = "allowed-namespaces"
SOURCE_HOSTS = "allowed-source-hosts"

# A registry namespace: letters, digits, ``-`` and ``_`` (the registry protocol's). Both
# patterns are matched whole (``fullmatch``: ``$`` would let a trailing newline through).
_NAMESPACE = re.compile(r"[A-Za-z0-9_-]{1,64}")
# A host name (or an IPv4 address: digits are labels too), lowercased, and an optional port.
_LABEL = r"[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?"
_HOST = re.compile(rf"(?P<host>{_LABEL}(?:\.{_LABEL})*)(?::(?P<port>[1-9][0-9]{{0,4}}))?")


def namespace(value: str) -> str:
    """``value`` as an allowed namespace (as written); ValueError when it is not one."""
    if not _NAMESPACE.fullmatch(value):
        raise ValueError(
            f"{value[:MAX_NAMESPACE]!r} is not a registry namespace: 1 to {MAX_NAMESPACE} "
            "letters, digits, - or _"
        )
    return value


def source_host(value: str) -> str:
    """``value`` as an allowed source host: a host name, with ``:port`` where not the
    default, lowercased; ValueError for anything else (a scheme, a path, credentials)."""
    host = value.lower()
    found = _HOST.fullmatch(host)
    if not found or len(found["host"]) > MAX_HOST or int(found["port"] or 1) > 65535:
        raise ValueError(
            f"{value[:MAX_SOURCE_HOST]!r} is not a host: a host name or host:port, with no "
            "scheme, path or credentials"
        )
    return host


@db.register
class CacheSettingsModel(db.Model):
    Meta = db.table("module-cache-settings")

    id = UnicodeAttribute(hash_key=True)  # always KEY
    allowed_namespaces = ListAttribute(of=UnicodeAttribute, default=list)
    allowed_source_hosts = ListAttribute(
        of=UnicodeAttribute, default=lambda: list(DEFAULT_SOURCE_HOSTS)
    )
    updated_at = UTCDateTimeAttribute(null=True)


@dataclass(frozen=True)
class CacheSettings:
    allowed_namespaces: tuple[str, ...] = ()
    allowed_source_hosts: tuple[str, ...] = DEFAULT_SOURCE_HOSTS

    def allows(self, namespace: str) -> bool:
        """Whether ``namespace`` (as a module address writes it) is a cached upstream
        namespace. Namespaces compare case-insensitively, as the registry protocol's do."""
        return namespace.lower() in {n.lower() for n in self.allowed_namespaces}


def _load() -> CacheSettingsModel | None:
    try:
        return CacheSettingsModel.get(KEY, consistent_read=True)
    except CacheSettingsModel.DoesNotExist:
        return None


def _of(item: CacheSettingsModel | None) -> CacheSettings:
    if item is None:
        return CacheSettings()
    return CacheSettings(
        tuple(str(n) for n in item.allowed_namespaces),
        tuple(str(h) for h in item.allowed_source_hosts),
    )


def stored() -> CacheSettings:
    """The settings as stored now (one consistent GetItem; the defaults when none)."""
    return _of(_load())


def reserved(name: str) -> bool:
    """Whether ``name`` (an organization's name to be) is an allowed namespace now, in any
    case: the check accounts makes before creating an organization (read consistently:
    a namespace allowed a moment ago is already reserved)."""
    return stored().allows(name)


def current() -> CacheSettings:
    """The settings, re-read at most every ``REGISTRY_SETTINGS_CACHE_SECONDS`` per instance
    (the protocol asks on every module request: most answers come from this copy)."""
    return instance_cache.held(KEY, stored)


def forget() -> None:
    """Forget this instance's copy (after a save here; the tests between cases)."""
    instance_cache.forget(KEY)


def _entries(name: str, values: list[str], bound: int, check: Callable[[str], str]) -> list[str]:
    """``values`` checked (at most ``bound``, each by ``check``), each once (compared in
    lowercase), in order; a 422 naming the attribute otherwise."""
    pointer = f"/data/attributes/{name}"
    if len(values) > bound:
        raise Unprocessable(f"{name} may hold at most {bound} entries", pointer=pointer)
    out: list[str] = []
    for value in values:
        try:
            entry = check(value)
        except ValueError as refused:
            raise Unprocessable(f"{name}: {refused}", pointer=pointer) from None
        if entry.lower() not in {o.lower() for o in out}:
            out.append(entry)
    return out


def _organizations_named(names: list[str]) -> list[str]:
    """Those of ``names`` that are an organization's name, in any case (the organization's
    own spelling). Reads the organization directory (one Query): only a change that allows
    a new namespace asks."""
    from chalicelib.accounts.organizations.service import all_organizations

    taken = {org.name.lower(): org.name for org in all_organizations()}
    return [taken[n.lower()] for n in names if n.lower() in taken]


def save(
    principal: Principal | None,
    allowed_namespaces: list[str] | None = None,
    allowed_source_hosts: list[str] | None = None,
) -> CacheSettings:
    """Replace the lists given (None: keep that one), with the change's audit event, in one
    transaction; the settings as they are now. 422 before any write for an entry that is not
    one, a list over its bound, or a namespace that is an organization's name; 409 when
    another change landed since this one read the item (then nothing is written)."""
    item = _load()
    before = _of(item)
    namespaces = list(before.allowed_namespaces)
    if allowed_namespaces is not None:
        namespaces = _entries(NAMESPACES, allowed_namespaces, MAX_NAMESPACES, namespace)
    hosts = list(before.allowed_source_hosts)
    if allowed_source_hosts is not None:
        hosts = _entries(SOURCE_HOSTS, allowed_source_hosts, MAX_SOURCE_HOSTS, source_host)
    added = [n for n in namespaces if not before.allows(n)]
    taken = _organizations_named(added) if added else []
    if taken:
        raise Unprocessable(
            f"{NAMESPACES}: {', '.join(taken)} is an organization's name on this registry; "
            "an allowed namespace and an organization cannot share a name",
            pointer=f"/data/attributes/{NAMESPACES}",
        )
    moment = now()
    changed = trail.changed(
        {
            NAMESPACES: list(before.allowed_namespaces),
            SOURCE_HOSTS: list(before.allowed_source_hosts),
        },
        {NAMESPACES: namespaces, SOURCE_HOSTS: hosts},
    )
    event = events.event(
        principal,
        organization=None,
        resource_type=KEY,
        resource_id=KEY,
        action="updated",
        meta={"changed": changed, NAMESPACES: namespaces, SOURCE_HOSTS: hosts},
        moment=moment,
    )
    written = CacheSettingsModel(
        KEY, allowed_namespaces=namespaces, allowed_source_hosts=hosts, updated_at=moment
    )
    # Unchanged since it was read: two site admins' changes never overwrite each other.
    unchanged: Condition
    if item is None:
        unchanged = CacheSettingsModel.id.does_not_exist()
    elif item.updated_at is None:
        unchanged = CacheSettingsModel.updated_at.does_not_exist()
    else:
        unchanged = CacheSettingsModel.updated_at == item.updated_at
    try:
        with TransactWrite(connection=db.connection()) as tx:
            tx.save(written, condition=unchanged)
            trail.record_in(tx, event)
    except TransactWriteError as exc:
        if db.cancellation_codes(exc)[:1] == [db.TRANSACTION_CONDITION_FAILED]:
            raise Conflict(
                "the module cache settings were changed concurrently; retry the request"
            ) from None
        raise
    forget()
    return CacheSettings(tuple(namespaces), tuple(hosts))
