"""Storage of the site-admin domain: settings singletons and rate-limit counters.

Settings: one item per area (``general``, ``smtp``, ``saml`` ...) in the ``settings`` table.
``values`` holds what may be shown; ``secrets`` holds KMS-sealed values only (see
core/secrets.py) and is never rendered. Writes are optimistic: a version attribute makes a
concurrent update fail with 409 instead of silently losing one of the two.

Rate limits: one item per client and one-second window in the ``rate-limits`` table
(``core.data.counters``, shared with the password sign-in throttle), written only by an
instance whose client passed its share of the limit (``admin.ratelimit``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from pynamodb.attributes import (
    JSONAttribute,
    UnicodeAttribute,
    VersionAttribute,
)
from pynamodb.exceptions import TransactWriteError
from pynamodb.transactions import TransactWrite

from chalicelib.core.api.errors import Conflict
from chalicelib.core.audit import events, trail
from chalicelib.core.audit.events import Event
from chalicelib.core.data import db, instance_cache
from chalicelib.core.data.counters import RateLimitModel as RateLimitModel
from chalicelib.core.data.counters import count_request as count_request
from chalicelib.core.settings import get_settings

if TYPE_CHECKING:
    from chalicelib.core.auth import Principal

# The audit trail's resource type of a settings area (its id: the area's name), and actions.
SETTING = "setting"
CREATED, UPDATED, DELETED = "created", "updated", "deleted"

GENERAL_DEFAULTS: dict[str, Any] = {
    "limit-user-organization-creation": True,
    "api-rate-limiting-enabled": True,
    "api-rate-limit": 30,
    "send-passing-statuses-for-untriggered-speculative-plans": False,
    "allow-speculative-plans-on-pull-requests-from-forks": False,
    "default-remote-state-access": True,
    "plan-timeout": "2h",
    "apply-timeout": "24h",
}


@db.register
class SettingsModel(db.Model):
    Meta = db.table("settings")

    id = UnicodeAttribute(hash_key=True)
    values = JSONAttribute(default=dict)
    secrets = JSONAttribute(null=True)
    version = VersionAttribute(null=True)


def load(area: str) -> SettingsModel:
    """The stored item of an area, or a fresh unsaved one."""
    try:
        return SettingsModel.get(area, consistent_read=True)
    except SettingsModel.DoesNotExist:
        return SettingsModel(area, values={}, secrets={})


def save(item: SettingsModel, event: Event) -> None:
    """Write an area back with its audit ``event``, in one transaction; 409 when someone
    else updated it since ``load`` (then neither is written)."""
    try:
        with TransactWrite(connection=db.connection()) as tx:
            tx.save(item)  # under its version's condition
            trail.record_in(tx, event)
    except TransactWriteError as exc:
        if db.cancellation_codes(exc)[:1] == [db.TRANSACTION_CONDITION_FAILED]:
            raise Conflict("the settings were changed concurrently; retry the request") from None
        raise
    forget_cached_settings(item.id)


def delete(area: str, event: Event) -> None:
    """Forget an area, with its audit ``event`` (one transaction)."""
    with TransactWrite(connection=db.connection()) as tx:
        tx.delete(SettingsModel(area), add_version_condition=False)
        trail.record_in(tx, event)
    forget_cached_settings(area)


def read_settings(area: str, defaults: dict[str, Any]) -> dict[str, Any]:
    return {**defaults, **(load(area).values or {})}


def write_settings(area: str, values: dict[str, Any]) -> None:
    """Replace an area's values as the registry itself (set-up and tests: no caller)."""
    item = load(area)
    changed = trail.changed(item.values or {}, values)
    item.values = values
    save(item, settings_event(None, area, changed))


def settings_event(
    principal: Principal | None, area: str, changed: list[str], action: str = UPDATED
) -> Event:
    """The audit event of a change to a settings area (site-wide): the names of the
    attributes that changed (``changed``), never their values (some are secrets)."""
    return events.event(
        principal,
        organization=None,
        resource_type=SETTING,
        resource_id=area,
        action=action,
        meta={"changed": changed},
    )


def general_defaults() -> dict[str, Any]:
    """GENERAL_DEFAULTS, with the deployment's defaults for rate limiting (on unless
    REGISTRY_RATE_LIMITING=off) and audit retention (REGISTRY_AUDIT_RETENTION_DAYS, 400)."""
    settings = get_settings()
    return {
        **GENERAL_DEFAULTS,
        "api-rate-limiting-enabled": settings.rate_limiting_default,
        "audit-retention-days": settings.audit_retention_days,
    }


def general_settings() -> dict[str, Any]:
    """The general settings as stored now (one consistent read)."""
    return read_settings("general", general_defaults())


# ----- per-instance cache of settings areas (the rate limiter's and the UI's view) ------------


def cached_settings(area: str, read: Callable[[], dict[str, Any]]) -> dict[str, Any]:
    """``read()``'s answer for a settings area, re-read at most every
    REGISTRY_SETTINGS_CACHE_SECONDS per instance (a save on this instance forgets it)."""
    return instance_cache.held(f"settings:{area}", read)


def cached_general_settings() -> dict[str, Any]:
    """General settings, re-read at most every REGISTRY_SETTINGS_CACHE_SECONDS per instance."""
    return cached_settings("general", general_settings)


def forget_cached_settings(area: str | None = None) -> None:
    """Forget one area's cached copy, or every copy this instance holds (``None``)."""
    instance_cache.forget(None if area is None else f"settings:{area}")
