"""Every status a module, a version's deprecation and revocation, a tag sync and a webhook
registration can have (a version's own status is every artifact's: ``artifacts.statuses``).

The values are what TFE reports (``reg_ingressing`` and friends), so clients that compare
them keep working. They are ``StrEnum``s: equal to their text, and stored as that text
(``store`` writes ``str(status)``: PynamoDB's raw maps accept only plain ``str``).
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import StrEnum
from typing import Any

from chalicelib.artifacts.statuses import VersionStatus


class ModuleStatus(StrEnum):
    PENDING = "pending"
    NO_VERSION_TAGS = "no_version_tags"  # a tag sync found no version tag
    SETUP_FAILED = "setup_failed"  # a tag sync could not read the repository
    SETUP_COMPLETE = "setup_complete"  # at least one version is ok (public modules: always)


# Module statuses a tag sync may still change (a first ok version's setup_complete stays).
SYNC_MAY_SET = (ModuleStatus.PENDING, ModuleStatus.NO_VERSION_TAGS, ModuleStatus.SETUP_FAILED)
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
    is a module's ``version-statuses`` entry or anything with ``status`` and ``revocation``."""
    return entry.get("status") == VersionStatus.OK and not is_revoked(entry.get("revocation"))
