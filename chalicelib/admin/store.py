"""Site-wide settings singletons (one item per settings area, defaults when unset)."""

from __future__ import annotations

from typing import Any

from pynamodb.attributes import JSONAttribute, UnicodeAttribute

from chalicelib.core import db

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


def read_settings(area: str, defaults: dict[str, Any]) -> dict[str, Any]:
    try:
        stored = SettingsModel.get(area).values
    except SettingsModel.DoesNotExist:
        stored = {}
    return {**defaults, **stored}


def write_settings(area: str, values: dict[str, Any]) -> None:
    SettingsModel(area, values=values).save()


def general_settings() -> dict[str, Any]:
    return read_settings("general", GENERAL_DEFAULTS)
