"""The deadline sweep: each due version revoked on its deadline, or its notice recorded
(the room's docstring says how)."""

from __future__ import annotations

import logging
from datetime import datetime, timedelta

from chalicelib.modules import store, writes
from chalicelib.modules.audit import events as audit_events
from chalicelib.modules.deadlines.store import due_versions
from chalicelib.modules.statuses import (
    DEADLINE_NOTICES,
    Lifecycle,
    RevocationStatus,
    deadline_due,
    deadline_text,
    deadline_time,
    lifecycle,
)
from chalicelib.modules.store import ModuleVersionModel

log = logging.getLogger("registry.deadlines")

APPROACHING = "deadline-approaching"
REVOKED = "revoked"
# How often one version is read again after a concurrent change, in one sweep.
ATTEMPTS = 3


def due(moment: datetime) -> list[ModuleVersionModel]:
    """The versions whose deadline the sweep must look at by ``moment``."""
    return due_versions(moment)


def settle(item: ModuleVersionModel, moment: datetime) -> str:
    """What the deadline of ``item`` (read from the index) asks at ``moment``, done:
    ``revoked``, ``noticed``, or ``skipped`` (nothing is due after all: the version changed,
    went, or another sweep did it)."""
    for _ in range(ATTEMPTS):
        version = store.find_version(item.module_id, item.order_key, consistent=True)
        if version is None or not version.due_at or version.due_at > deadline_text(moment):
            return "skipped"
        deprecation = version.deprecation or {}
        state = lifecycle(version.status, version.deprecation, version.revocation)
        if state != Lifecycle.DEPRECATED or not deprecation.get("revoke-at"):
            log.warning("version %s is due but has no deadline: left alone", version.id)
            return "skipped"
        revoke_at = deadline_time(deprecation["revoke-at"])
        try:
            if moment >= revoke_at:
                if _revoke(version, deprecation, moment):
                    return "revoked"
            elif _notice(version, revoke_at, moment):
                return "noticed"
        except (writes.VersionChanged, writes.ModuleGone):
            pass
        # changed meanwhile (a PATCH, another sweep): read it again and decide again
    return "skipped"


def revocation_of(version: ModuleVersionModel, deprecation: dict[str, str]) -> dict[str, str]:
    """The revocation a deadline makes: the deprecation's reason (else a sentence saying it
    was revoked on its deadline) as its message, and the deprecation's link."""
    message = deprecation.get("reason") or (
        f"Version {version.version} was revoked on its deprecation deadline, "
        f"{deprecation['revoke-at']}."
    )
    revocation = {"status": str(RevocationStatus.REVOKED), "message": message}
    if deprecation.get("link"):
        revocation["link"] = deprecation["link"]
    return revocation


def _revoke(version: ModuleVersionModel, deprecation: dict[str, str], moment: datetime) -> bool:
    revocation = revocation_of(version, deprecation)
    meta = {
        "revoke-at": deprecation["revoke-at"],
        "by": "deadline",
        "message": revocation["message"],
        **({"link": revocation["link"]} if "link" in revocation else {}),
    }
    event = audit_events.of_version(None, version, REVOKED, meta, moment=moment)
    writes.record_version_lifecycle(version, deprecation, revocation, moment, event)
    log.info("version %s revoked on its deadline %s", version.id, deprecation["revoke-at"])
    return True


def days_left(revoke_at: datetime, moment: datetime) -> int | None:
    """The notice due at ``moment`` (the last one passed: 7 or 1 days before), None before
    the first."""
    passed = [d for d in DEADLINE_NOTICES if moment >= revoke_at - timedelta(days=d)]
    return min(passed) if passed else None


def _notice(version: ModuleVersionModel, revoke_at: datetime, moment: datetime) -> bool:
    left = days_left(revoke_at, moment)
    next_due = deadline_due(version.deprecation, version.revocation, moment)
    if left is None or next_due is None:  # no notice passed: due_at was early; nothing to say
        return False
    meta = {"revoke-at": deadline_text(revoke_at), "days-left": left}
    event = audit_events.of_version(None, version, APPROACHING, meta, moment=moment)
    return writes.record_deadline_notice(version, next_due, event)
