"""A module version's who-did-what, read from the audit trail (``chalicelib.core.audit``):
who created it, who (or what) published it, deprecated, revoked or released it, and when.
The version page shows it (``version_history`` checks the reader may see the module, as
every version read does; ``of_version`` for a caller that has read the version already).

The events of one version are read with one filtered Query of the organization's
partition from the version's creation on (``documents``); the version's page renders them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from chalicelib.core.audit import events, trail
from chalicelib.core.auth import Principal
from chalicelib.modules.audit import events as audit_events
from chalicelib.modules.service import ModuleRef
from chalicelib.modules.store import ModuleVersionModel
from chalicelib.modules.versions import find_version

# The most events a version's history shows; an event about a version is written with or
# after its creation, and a minute's margin keeps one whose time was taken just before the
# version's item was.
MOST = 100
MARGIN = timedelta(minutes=1)
# What makes a version ``ok``: ingest accepting its archive, its scan passing (a held
# version), or its release from quarantine.
PUBLISHING = (audit_events.UPLOADED, audit_events.SCANNED, "released")


@dataclass(frozen=True)
class Step:
    """One event of the version: its ``action`` (``created``, ``uploaded``, ``refused``,
    ``scanned``, ``quarantined``, ``released``, ``deprecated``, ``undeprecated``,
    ``revoked``, ``unrevoked``...), when, and who: ``actor`` as a person reads it (a user's
    username, else the id; ``the registry`` for a worker), ``actor_id``, ``system`` (the
    registry acted), ``meta`` (the event's: the version's status after it, a reason...)."""

    action: str
    at: datetime
    actor: str
    actor_id: str
    system: bool
    meta: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class VersionHistory:
    """The version's steps, oldest first, and whether the trail was read whole."""

    steps: tuple[Step, ...]
    complete: bool

    def latest(self, *actions: str) -> Step | None:
        """The newest step with one of ``actions``."""
        return next((s for s in reversed(self.steps) if s.action in actions), None)

    @property
    def created(self) -> Step | None:
        return self.latest("created")

    @property
    def published(self) -> Step | None:
        """The step that made the version ``ok`` (served): an upload accepted, a held
        version's scan passing, or its release."""
        return next(
            (
                s
                for s in self.steps
                if s.action in PUBLISHING
                and (s.action == "released" or s.meta.get("status") == "ok")
            ),
            None,
        )

    @property
    def published_by(self) -> str | None:
        """Who published it: whoever released it from quarantine; else whoever created it
        (the upload link's holder, or the registry for a version from a VCS tag)."""
        published = self.published
        if published is None:
            return None
        if not published.system:
            return published.actor
        created = self.created
        if created is not None:
            return created.actor
        return published.meta.get("uploaded-by") or published.actor

    @property
    def deprecated(self) -> Step | None:
        """Its deprecation, while it is deprecated (undeprecating clears it)."""
        step = self.latest("deprecated", "undeprecated")
        return step if step is not None and step.action == "deprecated" else None

    @property
    def revoked(self) -> Step | None:
        """Its revocation, while it is revoked."""
        step = self.latest("revoked", "unrevoked", "undeprecated")
        return step if step is not None and step.action == "revoked" else None

    @property
    def released(self) -> Step | None:
        return self.latest("released")


def version_history(principal: Principal, ref: ModuleRef, version: str) -> VersionHistory:
    """The history of ``version`` of the module ``ref``, for whoever may read the module
    (404 otherwise, as ``versions.find_version``)."""
    item, _ = find_version(principal, ref, version)
    return of_version(item)


def documents(version: ModuleVersionModel) -> tuple[list[dict[str, Any]], bool]:
    """The version's events as the trail keeps them, oldest first (at most ``MOST``), and
    whether that is all of them: one filtered read of the organization's events from the
    version's creation on (``core.audit.store``: a filtered read examines at most
    ``MAX_FILTERED`` events; a busier trail gives none here, ``complete`` False)."""
    wanted = trail.Filters(resource_type=audit_events.VERSION, resource_id=version.id)
    try:
        found, total = trail.read_page(
            version.organization, None, 1, MOST, start=version.created_at - MARGIN, filters=wanted
        )
    except trail.TooManyToFilter:
        return [], False
    return found, total <= MOST


def of_version(version: ModuleVersionModel) -> VersionHistory:
    """The history of a version the caller has read (and may show)."""
    found, complete = documents(version)
    return VersionHistory(tuple(_step(d) for d in found), complete)


def _step(document: dict[str, Any]) -> Step:
    auth, resource = document.get("auth") or {}, document.get("resource") or {}
    return Step(
        action=resource.get("action", ""),
        at=datetime.fromisoformat(document["timestamp"].replace("Z", "+00:00")),
        actor=auth.get("description") or auth.get("accessor_id") or "",
        actor_id=auth.get("accessor_id") or "",
        system=auth.get("type") == events.SYSTEM,
        meta=dict(resource.get("meta") or {}),
    )
