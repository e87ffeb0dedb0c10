"""What a notification is about: the triggers a configuration subscribes to, and ``Notice``,
one notification as every destination format renders it (``payload``).

A notice comes from an audit event (``of_event``: the ``audit-events`` stream's new images),
so every change that is notified was made and recorded; the deadline sweep's notices too
(``registry-module-version`` ``deadline-approaching`` events).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from chalicelib.core.audit.events import SYSTEM
from chalicelib.core.settings import get_settings
from chalicelib.modules.audit import events as module_events
from chalicelib.modules.statuses import VersionStatus
from chalicelib.providers import audited as provider_events


class Trigger(StrEnum):
    """The registry's triggers (TFE's workspace ones are ``run:created`` and so on)."""

    MODULE_PUBLISHED = "registry-module-version:published"  # served: ok (after its scan too)
    MODULE_REFUSED = "registry-module-version:refused"  # ingest refused it, or policy held it
    MODULE_DEPRECATED = "registry-module-version:deprecated"
    MODULE_REVOKED = "registry-module-version:revoked"  # by hand or by its deadline
    MODULE_DEADLINE = "registry-module-version:deadline-approaching"  # 7 days, 1 day before
    PROVIDER_PUBLISHED = "registry-provider-version:published"


# The trigger of a verification (``/actions/verify``): not one a configuration subscribes to.
VERIFICATION = "verification"


@dataclass(frozen=True)
class Notice:
    """One notification: what happened, to what, by whom, when.

    ``resource``: ``type`` and ``id`` (the audit event's), and what names it to a person:
    ``address`` (``org/namespace/name/provider`` or ``org/namespace/name`` for a provider),
    ``version``. ``details``: what the trigger carries (``reason``, ``link``, ``revoke-at``,
    ``days-left``, ``latest-version``, ``status``...). ``url``: the resource's page on this
    registry (``REGISTRY_PUBLIC_URL``), when it has one. ``actor``: a username, or None when
    the registry itself acted (a worker, the deadline sweep)."""

    trigger: str  # a Trigger, or VERIFICATION
    organization: str
    occurred_at: str  # ISO 8601 UTC
    message: str  # one sentence a person reads
    resource: dict[str, str]
    actor: str | None = None
    url: str | None = None
    details: dict[str, Any] = field(default_factory=dict)


# ----- from audit events (the ``audit-events`` stream's new items) --------------------------

MODULE_VERSION = module_events.VERSION
PROVIDER_VERSION = provider_events.VERSION
OK = str(VersionStatus.OK)
# A version's lifecycle changes, as its events name them (``versions._event``).
RELEASED, DEPRECATED, REVOKED = "released", "deprecated", "revoked"
DEADLINE_APPROACHING = "deadline-approaching"  # the deadline sweep's


@dataclass(frozen=True)
class Module:
    """What a notice needs of a version's module: its id (its downloads' partition) and its
    latest servable version (``statuses.latest_servable``), and the version's own entry of
    its ``version-statuses`` (its deprecation's ``reason``, ``link`` and ``revoke-at``)."""

    id: str
    latest: str | None
    entries: Mapping[str, Mapping[str, Any]]


ReadModule = Callable[[str, str], "Module | None"]  # (organization, module key)


def read_module(organization: str, key: str) -> Module | None:
    """The module of that key, as a notice needs it (one GetItem), None when it is gone."""
    # The modules' service loads where events are read (the fan-out), not wherever a Notice
    # is (the configurations API's payloads).
    from chalicelib.modules import service
    from chalicelib.modules.statuses import latest_servable

    module = service.module_at(organization, key)
    if module is None:
        return None
    statuses = module.statuses()
    latest = latest_servable(statuses)
    return Module(module.id, latest.text if latest else None, statuses)


def trigger_of(resource_type: str, action: str, meta: Mapping[str, Any]) -> Trigger | None:
    """The trigger an audit event's resource and action fire, if any: a module version
    served (its upload accepted ``ok``, a held version's scan passing, or its release), refused
    (by ingest, or held back by the publishing policy), deprecated, revoked, its deadline
    approaching; a provider version whose checksums and signature were verified."""
    if resource_type == PROVIDER_VERSION:
        return Trigger.PROVIDER_PUBLISHED if action == provider_events.UPLOADED else None
    if resource_type != MODULE_VERSION:
        return None
    if action in (module_events.UPLOADED, module_events.SCANNED):
        return Trigger.MODULE_PUBLISHED if meta.get("status") == OK else None
    return {
        RELEASED: Trigger.MODULE_PUBLISHED,
        module_events.REFUSED: Trigger.MODULE_REFUSED,
        module_events.QUARANTINED: Trigger.MODULE_REFUSED,
        DEPRECATED: Trigger.MODULE_DEPRECATED,
        REVOKED: Trigger.MODULE_REVOKED,
        DEADLINE_APPROACHING: Trigger.MODULE_DEADLINE,
    }.get(action)


def fired_by(document: Mapping[str, Any]) -> tuple[str, Trigger] | None:
    """(organization, trigger) of an audit event that fires one, read from the event alone
    (nothing is read from a table): None for every other event and for site-wide ones."""
    resource = document.get("resource") or {}
    organization = (document.get("auth") or {}).get("organization_id") or ""
    trigger = trigger_of(
        resource.get("type", ""), resource.get("action", ""), resource.get("meta") or {}
    )
    return (organization, trigger) if organization and trigger else None


def module_key_of(meta: Mapping[str, Any]) -> str | None:
    """The module key (``registry#namespace#name#provider``) a module event's meta names
    (``registry``, ``module`` as ``namespace/name/provider``), None when it names none."""
    parts = str(meta.get("module") or "").split("/")
    if len(parts) != 3 or not all(parts):
        return None
    return "#".join([str(meta.get("registry") or "private"), *parts])


def of_event(document: Mapping[str, Any], modules: ReadModule = read_module) -> Notice | None:
    """The notice an audit event (its JSON, as the trail answers it) gives, None when it
    notifies nothing: an action no trigger names, a site-wide event, a module gone meanwhile.
    ``modules``: how the version's module is read (the fan-out keeps one per batch)."""
    resource = document.get("resource") or {}
    auth = document.get("auth") or {}
    meta = resource.get("meta") or {}
    organization = auth.get("organization_id") or ""
    trigger = trigger_of(resource.get("type", ""), resource.get("action", ""), meta)
    version = str(meta.get("version") or "")
    if trigger is None or not organization or not version:
        return None
    actor = None if auth.get("type") == SYSTEM else auth.get("description") or None
    common: dict[str, Any] = {
        "trigger": str(trigger),
        "organization": organization,
        "occurred_at": str(document.get("timestamp") or ""),
        "actor": actor,
    }
    if trigger == Trigger.PROVIDER_PUBLISHED:
        return _provider_notice(common, str(resource.get("id")), str(meta.get("provider")), version)
    key = module_key_of(meta)
    module = modules(organization, key) if key else None
    if key is None or module is None:
        return None
    registry, address = key.split("#", 1)[0], str(meta["module"])
    details = _details(trigger, meta, module, version)
    shown = f"{organization}/{address}"
    return Notice(
        **common,
        message=" ".join(_message(trigger, f"{shown} {version}", details, version).split()),
        resource={
            "type": MODULE_VERSION,
            "id": str(resource.get("id")),
            "address": shown,
            "version": version,
        },
        url=_page(f"/app/{organization}/registry/modules/{registry}/{address}/{version}"),
        details=details,
    )


def _provider_notice(
    common: dict[str, Any], resource_id: str, named: str, version: str
) -> Notice | None:
    parts = named.split("/")  # registry/namespace/name
    if len(parts) != 3:
        return None
    _, namespace, name = parts
    shown = f"{common['organization']}/{namespace}/{name}"
    return Notice(
        **common,
        message=f"Provider {shown} {version} was published.",
        resource={
            "type": PROVIDER_VERSION,
            "id": resource_id,
            "address": shown,
            "version": version,
        },
        url=_page(
            f"/app/{common['organization']}/registry/providers/private/{namespace}/{name}/{version}"
        ),
        details={},
    )


# What a notice's details carry of its event's meta, per trigger (with the deprecation's
# texts from the version's entry where the event does not say them).
_KEPT = ("reason", "link", "revoke-at", "days-left", "message", "by", "status", "reasons")


def _details(
    trigger: Trigger, meta: Mapping[str, Any], module: Module, version: str
) -> dict[str, Any]:
    details: dict[str, Any] = {k: meta[k] for k in _KEPT if meta.get(k) not in (None, "", [])}
    if trigger in (Trigger.MODULE_DEPRECATED, Trigger.MODULE_DEADLINE, Trigger.MODULE_REVOKED):
        deprecation = (module.entries.get(version) or {}).get("deprecation") or {}
        for key in ("reason", "link", "revoke-at"):
            if key not in details and deprecation.get(key):
                details[key] = deprecation[key]
    if module.latest:
        details["latest-version"] = module.latest
    return details


def _move_to(details: Mapping[str, Any], version: str) -> str:
    latest = details.get("latest-version")
    if latest and latest != version:
        return f"Move to {latest}"
    return "No other version is published yet to move to"


def _message(trigger: Trigger, what: str, details: Mapping[str, Any], version: str) -> str:
    """One sentence or two a person reads: what happened, and what to do."""
    reason = f": {details['reason']}" if details.get("reason") else ""
    deadline = f" by {details['revoke-at']}" if details.get("revoke-at") else ""
    if trigger == Trigger.MODULE_PUBLISHED:
        return f"{what} was published."
    if trigger == Trigger.MODULE_REFUSED:
        if details.get("reasons"):
            return (
                f"{what} was held back by the publishing policy: "
                + "; ".join(str(r) for r in details["reasons"])
                + "."
            )
        return f"{what} was refused{reason}."
    if trigger == Trigger.MODULE_DEPRECATED:
        when = f" It will be revoked on {details['revoke-at']}." if deadline else ""
        return f"{what} is deprecated{reason}.{when} {_move_to(details, version)}{deadline}."
    if trigger == Trigger.MODULE_DEADLINE:
        days = details.get("days-left")
        left = f" ({days} day{'s' if days != 1 else ''} left)" if days else ""
        return (
            f"{what} will be revoked on {details.get('revoke-at')}{left}{reason}. "
            f"{_move_to(details, version)}{deadline}."
        )
    by = " on its deadline" if details.get("by") == "deadline" else ""
    why = f": {details['message']}" if details.get("message") else reason
    return f"{what} was revoked{by}{why}. {_move_to(details, version)}."


def _page(path: str) -> str | None:
    """The page's address on this registry (``REGISTRY_PUBLIC_URL``), None without one."""
    base = get_settings().public_base_url
    return f"{base}{path}" if base else None
