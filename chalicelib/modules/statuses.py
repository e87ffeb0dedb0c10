"""Every status a module, a version's deprecation and revocation, a tag sync and a webhook
registration can have (a version's own status is every artifact's: ``artifacts.statuses``),
and the version lifecycle.

The values are what TFE reports (``reg_ingressing`` and friends), so clients that compare
them keep working. They are ``StrEnum``s: equal to their text, and stored as that text
(``store`` writes ``str(status)``: PynamoDB's raw maps accept only plain ``str``).
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from enum import StrEnum
from typing import Any

from chalicelib.artifacts import semver
from chalicelib.artifacts.statuses import VersionStatus


class ModuleStatus(StrEnum):
    PENDING = "pending"
    NO_VERSION_TAGS = "no_version_tags"  # a tag sync found no version tag
    SETUP_FAILED = "setup_failed"  # a tag sync could not read the repository
    SETUP_COMPLETE = "setup_complete"  # at least one version is ok (public modules: always)


# Module statuses a tag sync may still change (a first ok version's setup_complete stays).
SYNC_MAY_SET = (ModuleStatus.PENDING, ModuleStatus.NO_VERSION_TAGS, ModuleStatus.SETUP_FAILED)
# Version statuses whose archive is settled: ingested and kept (served, or held back by the
# publishing policy until it is released). No other archive is uploaded or ingested for them.
ARCHIVE_KEPT = (VersionStatus.OK, VersionStatus.QUARANTINED)
# Version statuses that ``retry`` starts again.
RETRYABLE = (
    VersionStatus.PENDING,
    VersionStatus.CLONING,
    VersionStatus.CLONE_FAILED,
    VersionStatus.INGRESS_REQUEST_FAILED,
    VersionStatus.INGRESS_FAILED,
)


class SyncStatus(StrEnum):
    """The last tag sync, in a VCS module's ``vcs-sync`` report."""

    QUEUED = "queued"
    CONTINUING = "continuing"  # more tags than one job takes: a follow-up job does the rest
    SYNCED = "synced"
    NO_VERSION_TAGS = "no_version_tags"
    FAILED = "failed"


class HookStatus(StrEnum):
    """The module's webhook at the VCS host, in ``vcs-repo.webhook-registration``."""

    PENDING = "pending"
    REGISTERED = "registered"
    MANUAL = "manual"  # Azure DevOps: added by hand
    FAILED = "failed"


class DeprecationStatus(StrEnum):
    """``deprecation.deprecated-status`` of a module version, as TFE spells it."""

    DEPRECATED = "Deprecated"
    UNDEPRECATED = "Undeprecated"


class RevocationStatus(StrEnum):
    """``revocation.status`` of a module version: a revoked version is also deprecated, and
    un-revoking leaves it deprecated (``Unrevoked`` is shown until it is undeprecated)."""

    REVOKED = "Revoked"
    UNREVOKED = "Unrevoked"


# ----- the rules on a version's statuses (one home: everything else calls these) ----------


def is_revoked(revocation: Mapping[str, Any] | None) -> bool:
    """A version whose ``revocation`` says ``Revoked`` (``Unrevoked`` is served again)."""
    return revocation is not None and revocation.get("status") == RevocationStatus.REVOKED


def is_deprecated(deprecation: Mapping[str, Any] | None) -> bool:
    return (
        deprecation is not None
        and deprecation.get("deprecated-status") == DeprecationStatus.DEPRECATED
    )


def is_servable(entry: Mapping[str, Any]) -> bool:
    """A version the registry protocol serves: ingested (``ok``) and not revoked. ``entry``
    is a module's ``version-statuses`` entry or anything with ``status`` and ``revocation``.
    (A ``quarantined`` version is not ``ok``: never served until it is released.)"""
    return entry.get("status") == VersionStatus.OK and not is_revoked(entry.get("revocation"))


# ----- "latest" (one home: the protocol, the lists, the pages and the backfills call it) -----


def servable_versions(statuses: Mapping[str, Mapping[str, Any]]) -> list[semver.Version]:
    """The versions the registry protocol serves (ok, not revoked, SemVer), newest first;
    ``statuses``: a module's ``version_statuses``."""
    versions = [
        semver.parse(text)
        for text, entry in statuses.items()
        if is_servable(entry) and semver.is_valid(text)
    ]
    versions.sort(key=lambda v: v.order_key, reverse=True)
    return versions


def latest_servable(statuses: Mapping[str, Mapping[str, Any]]) -> semver.Version | None:
    """A module's latest version: what ``terraform`` gets without a constraint, the protocol
    lists and the pages open on. The highest servable release, else (only pre-releases) the
    highest servable pre-release (Terraform picks a pre-release only when it is pinned)."""
    return semver.latest_of(servable_versions(statuses))


# ----- the version lifecycle (one home: the service enforces it, the pages offer it) -------


class VersionAction(StrEnum):
    """What may be done to a version: upload its archive, change its lifecycle, delete it."""

    UPLOAD = "upload"
    DEPRECATE = "deprecate"
    UNDEPRECATE = "undeprecate"
    REVOKE = "revoke"
    UNREVOKE = "unrevoke"
    # A quarantined version served after all (``versions.release_version``: with a reason).
    RELEASE = "release"
    DELETE = "delete"


class Lifecycle(StrEnum):
    """Where a version is in its lifecycle (``lifecycle``)."""

    UNPUBLISHED = "unpublished"  # not ok: pending, being ingested or fetched, or failed
    # Held back by the organization's publishing policy: released (then published) or deleted.
    QUARANTINED = "quarantined"
    PUBLISHED = "published"
    DEPRECATED = "deprecated"  # also once un-revoked (``Unrevoked``)
    REVOKED = "revoked"  # deprecated too


def lifecycle(
    status: str, deprecation: Mapping[str, Any] | None, revocation: Mapping[str, Any] | None
) -> Lifecycle:
    if status == VersionStatus.QUARANTINED:
        return Lifecycle.QUARANTINED
    if status != VersionStatus.OK:
        return Lifecycle.UNPUBLISHED
    if is_revoked(revocation):
        return Lifecycle.REVOKED
    return Lifecycle.DEPRECATED if is_deprecated(deprecation) else Lifecycle.PUBLISHED


_A, _L = VersionAction, Lifecycle
# Every lifecycle change a version accepts, by where it is, and where the change leaves it; a
# change missing here is refused. Only published versions change. A version is deprecated
# before it is revoked; un-revoking leaves it deprecated; a revoked version is un-revoked
# before it is undeprecated. A change that leaves it where it is records the new reason,
# message or link (deprecating or revoking again), or changes nothing.
#
# A quarantined version is not served: the one change it accepts is its release (which
# publishes it); deprecating or revoking what nobody can install means nothing, so they
# wait for the release. Deleting it is always allowed (owners), as for any version.
TRANSITIONS: dict[tuple[Lifecycle, VersionAction], Lifecycle] = {
    (_L.QUARANTINED, _A.RELEASE): _L.PUBLISHED,
    (_L.PUBLISHED, _A.DEPRECATE): _L.DEPRECATED,
    (_L.PUBLISHED, _A.UNDEPRECATE): _L.PUBLISHED,
    (_L.PUBLISHED, _A.UNREVOKE): _L.PUBLISHED,
    (_L.DEPRECATED, _A.DEPRECATE): _L.DEPRECATED,
    (_L.DEPRECATED, _A.UNDEPRECATE): _L.PUBLISHED,
    (_L.DEPRECATED, _A.REVOKE): _L.REVOKED,
    (_L.DEPRECATED, _A.UNREVOKE): _L.DEPRECATED,
    (_L.REVOKED, _A.DEPRECATE): _L.REVOKED,
    (_L.REVOKED, _A.REVOKE): _L.REVOKED,
    (_L.REVOKED, _A.UNREVOKE): _L.DEPRECATED,
}
LIFECYCLE_ACTIONS = (_A.RELEASE, _A.DEPRECATE, _A.UNDEPRECATE, _A.REVOKE, _A.UNREVOKE)


def lifecycle_moves(state: Lifecycle) -> list[VersionAction]:
    """The lifecycle changes that move a version from ``state`` elsewhere, in the order a
    page offers them."""
    return [a for a in LIFECYCLE_ACTIONS if TRANSITIONS.get((state, a), state) != state]


# ----- deprecation deadlines (the sweep: ``chalicelib.modules.deadlines``) --------------------

# A deadline's notices, in days before its ``revoke-at`` (``deadline_due``): the sweep records
# a ``deadline-approaching`` event at each (``chalicelib.modules.deadlines``).
DEADLINE_NOTICES = (7, 1)
# How a deadline (``revoke-at``) and ``due_at`` are kept: UTC to the second, so that they
# sort as text in the index as they do in time.
DEADLINE_FORMAT = "%Y-%m-%dT%H:%M:%SZ"


def deadline_text(moment: datetime) -> str:
    """``moment`` as a deadline is kept (``DEADLINE_FORMAT``)."""
    return moment.astimezone(UTC).strftime(DEADLINE_FORMAT)


def deadline_time(text: str) -> datetime:
    """A kept deadline (``DEADLINE_FORMAT``) as an aware time."""
    return datetime.strptime(text, DEADLINE_FORMAT).replace(tzinfo=UTC)


def deadline_due(
    deprecation: Mapping[str, Any] | None, revocation: Mapping[str, Any] | None, moment: datetime
) -> str | None:
    """When the sweep must next look at a version (its ``due_at``; None: never, it has no
    deadline, or is revoked or not deprecated): the first of its notices (7 days, 1 day
    before ``revoke-at``) still ahead of ``moment``, else ``revoke-at`` itself (a notice
    already passed is skipped; the revocation never is)."""
    if not is_deprecated(deprecation) or is_revoked(revocation):
        return None
    assert deprecation is not None
    revoke_at = deprecation.get("revoke-at")
    if not revoke_at:
        return None
    deadline = deadline_time(revoke_at)
    for days in DEADLINE_NOTICES:
        notice = deadline - timedelta(days=days)
        if notice > moment:
            return deadline_text(notice)
    return revoke_at
