"""The module cache's settings: which upstream namespaces may be cached, and which hosts an
upstream's download answer may point to. One item; site admins change it
(``/api/v2/admin/module-cache-settings``); every instance re-reads it at most every
``REGISTRY_SETTINGS_CACHE_SECONDS``.

Nothing is allowed by default: a registry caches no public module until a site admin
names its namespaces. ``allowed-source-hosts`` defaults to ``github.com`` (where the public
registry's modules live); an entry is a host, with ``:port`` where not the scheme's default.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass

from pynamodb.attributes import ListAttribute, UnicodeAttribute, UTCDateTimeAttribute

from chalicelib.core.data import db
from chalicelib.core.settings import get_settings

KEY = "module-cache-settings"
DEFAULT_SOURCE_HOSTS = ("github.com",)


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


def stored() -> CacheSettings:
    """The settings as stored now (one consistent GetItem; the defaults when none)."""
    try:
        item = CacheSettingsModel.get(KEY, consistent_read=True)
    except CacheSettingsModel.DoesNotExist:
        return CacheSettings()
    return CacheSettings(
        tuple(str(n) for n in item.allowed_namespaces),
        tuple(str(h) for h in item.allowed_source_hosts),
    )


_lock = threading.Lock()
_held: tuple[float, CacheSettings] | None = None


def current() -> CacheSettings:
    """The settings, re-read at most every ``REGISTRY_SETTINGS_CACHE_SECONDS`` per instance
    (the protocol asks on every module request: most answers come from this copy)."""
    global _held
    moment = time.monotonic()
    with _lock:
        if _held is not None and moment - _held[0] < get_settings().admin_settings_cache_ttl:
            return _held[1]
    found = stored()
    with _lock:
        _held = (moment, found)
    return found


def forget() -> None:
    """Forget this instance's copy (after a save here; the tests between cases)."""
    global _held
    with _lock:
        _held = None
