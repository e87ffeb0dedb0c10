"""What a module's owners (and ``manage-modules`` teams) read of its downloads: per version,
the total, the daily counts and who downloaded it (``counter`` counts them)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from chalicelib.accounts import authorization
from chalicelib.accounts.teams import service as teams_service
from chalicelib.artifacts import semver
from chalicelib.artifacts.statuses import VersionStatus
from chalicelib.core.auth import Principal
from chalicelib.core.data.ids import now
from chalicelib.modules import service as registry
from chalicelib.modules.downloads import store

DEFAULT_DAYS = 30
MAX_DAYS = store.DAYS_KEPT
ORGANIZATION_TOKEN = "organization token"


@dataclass(frozen=True)
class Consumer:
    kind: str
    id: str
    name: str | None
    last_download: str


@dataclass(frozen=True)
class VersionReport:
    version: str
    total: int
    daily: list[tuple[str, int]]  # (YYYY-MM-DD, count), oldest first, zeros included
    consumers: list[Consumer]  # the most recent first


@dataclass(frozen=True)
class Report:
    module: Any  # the ModuleModel
    total: int
    days: int
    versions: list[VersionReport]  # newest version first


def report(principal: Principal, ref: registry.ModuleRef, days: int = DEFAULT_DAYS) -> Report:
    """A module's downloads per version for its owners and ``manage-modules`` teams (404
    for anyone else, as for any write of the module)."""
    module, rights = registry.get_module(principal, ref)
    registry.require_rights(rights, "a module's downloads")
    return module_report(module, days)


def may_see(rights: authorization.OrgAccess) -> bool:
    """Whether these rights see a module's downloads (the web page asks before reading)."""
    return authorization.allows(rights, "manage-modules")


def module_report(
    module: Any, days: int = DEFAULT_DAYS, items: list[store.VersionDownloads] | None = None
) -> Report:
    """The report of a module already read and allowed: one Query (none when its download
    ``items`` were read already), and one BatchGet per kind of consumer for the names."""
    if items is None:
        items = store.module_downloads(module.id)
    found = {item.version: item for item in items}
    published = {
        v for v, entry in module.statuses().items() if entry.get("status") == VersionStatus.OK
    }
    texts = [v for v in published | set(found) if semver.is_valid(v)]
    texts.sort(key=lambda v: semver.parse(v).order_key, reverse=True)
    names = consumer_names(key for item in found.values() for key in item.consumers)
    today = now().date()
    window = [(today - timedelta(days=back)).isoformat() for back in range(days - 1, -1, -1)]
    versions = []
    for text in texts:
        counted = found.get(text) or store.VersionDownloads(text, 0, {}, {})
        consumers = sorted(
            (
                Consumer(kind, pid, names.get((kind, pid)), last)
                for (kind, pid), last in counted.consumers.items()
            ),
            key=lambda c: c.last_download,
            reverse=True,
        )
        daily = [(day, counted.days.get(day, 0)) for day in window]
        versions.append(VersionReport(text, counted.total, daily, consumers))
    return Report(module, sum(v.total for v in versions), days, versions)


def consumer_names(consumers: Iterable[tuple[str, str]]) -> dict[tuple[str, str], str]:
    """(kind, id) -> what a report calls the consumer: ``organization/team``, the username,
    or "organization token"; one BatchGet per kind (per hundred), deleted ones left out."""
    wanted: dict[str, set[str]] = {"team": set(), "user": set(), "organization": set()}
    for kind, principal_id in consumers:
        wanted.get(kind, set()).add(principal_id)
    names = teams_service.display_names(wanted["team"], wanted["user"])
    names.update({("organization", org): ORGANIZATION_TOKEN for org in wanted["organization"]})
    return names
