"""A module version's who-did-what, read from the audit trail (``chalicelib.core.audit``):
who created it, who (or what) published it, deprecated, revoked or released it, and when.
The version page shows it (``version_history`` checks the reader may see the module, as
every version read does; ``of_version`` for a caller that has read the version already).

The trail keeps an organization's events in one partition, ordered by time, with no index by
resource: the events of one version are found with a Query of the partition filtered on the
version's id (``contains`` on the stored document, then checked exactly). Two bounded reads
find them, since nothing about a version can precede its creation:

* forward from the version's ``created_at``: its creation, upload (or refusal), scan and
  quarantine, which follow within minutes;
* backward from now, down to its creation: its latest lifecycle changes (deprecated, revoked,
  released), whenever they came.

Each read is at most ``MAX_PAGES`` Query pages of DynamoDB's 1 MB (eventually consistent:
about 128 read units a full page, whatever the filter keeps). When the two reads meet, the
history is whole (``complete``); in a busy organization an old version's middle events may
be missed (``complete`` False), never its newest or its oldest.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from chalicelib.core.audit import events, trail
from chalicelib.core.auth import Principal
from chalicelib.modules.audit import events as audit_events
from chalicelib.modules.service import ModuleRef
from chalicelib.modules.store import ModuleVersionModel
from chalicelib.modules.versions import find_version

# Query pages (of at most 1 MB each) each of the two reads takes.
MAX_PAGES = 2
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


def of_version(version: ModuleVersionModel) -> VersionHistory:
    """The history of a version the caller has read (and may show)."""
    organization, start = version.organization, version.created_at
    found: dict[str, dict[str, Any]] = {}
    complete = False
    for document in trail.about(organization, version.id, start, forward=True, pages=MAX_PAGES):
        if document is trail.END:
            complete = True
            break
        found[document["id"]] = document
    if not complete:
        # Newest first, until it meets what the forward read found (the two ranges join).
        newest = trail.about(organization, version.id, start, forward=False, pages=MAX_PAGES)
        for document in newest:
            if document is trail.END or document["id"] in found:
                complete = True
                break
            found[document["id"]] = document
    steps = sorted((_step(d) for d in found.values()), key=lambda step: step.at)
    return VersionHistory(tuple(steps), complete)


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
