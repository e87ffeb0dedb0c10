"""Upgrade campaigns: who must move off which version.

A module's consumers are the principals its download items name (``store``: each version's
consumer items keep every consumer's last download of it). A consumer's *version* is the one it
downloaded last, across the module's items, and it stands on it as:

* ``revoked``: that version is revoked (a revoked version is deprecated too);
* ``deprecated``: that version is deprecated;
* ``behind``: that version sorts below the module's latest servable one
  (``statuses.latest_servable``);
* ``current``: none of these.

Everything about a version comes from the module item's ``version_statuses`` (deprecation
with its ``revoke-at`` deadline, revocation), so a module's campaign costs the module item and
ONE Query of its download items (``module_campaign``), whatever its number of consumers.

The organization's campaigns (``organization_campaigns``) walk the sparse ``by-deprecation``
index of its deprecated versions, most urgent first (revoked, then the soonest ``revoke-at``,
then the rest: ``store.deprecation_order``), and read each module met there once (its item
and its downloads Query). A module is listed once, where its most urgent deprecated version
that still has consumers sits in the index; a module whose deprecated versions nobody is on
any more is not listed. Pages follow an opaque cursor (``page[after]``): the index position
reached. A request looks at ``MAX_EXAMINED`` index entries at most, so a page may hold fewer
entries than asked while ``links.next`` still leads on.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import date, timedelta
from enum import StrEnum
from typing import Any

from chalicelib.accounts import authorization
from chalicelib.artifacts import semver
from chalicelib.core.api import pagination
from chalicelib.core.api.errors import Unprocessable
from chalicelib.core.auth import Principal
from chalicelib.core.data.ids import now
from chalicelib.modules import service as registry
from chalicelib.modules import store as modules_store
from chalicelib.modules.downloads import service, store
from chalicelib.modules.downloads.bounds import MAX_CURSOR
from chalicelib.modules.statuses import is_deprecated, is_revoked, latest_servable

# Index entries of deprecated versions one organization request looks at, at most.
MAX_EXAMINED = 100


class Standing(StrEnum):
    """Where a consumer stands, most urgent first (``filter[status]``'s values)."""

    REVOKED = "revoked"
    DEPRECATED = "deprecated"
    BEHIND = "behind"
    CURRENT = "current"


RANK = {standing: index for index, standing in enumerate(Standing)}


@dataclass(frozen=True)
class Consumer:
    """One consumer of a module and the version it downloaded last."""

    kind: str  # user, team or organization (an organization token)
    id: str
    version: str
    last_download: str  # ISO UTC
    deprecated: bool
    revoked: bool
    behind: bool
    revoke_at: str | None  # the deadline of its version's deprecation, when it has one

    @property
    def standing(self) -> Standing:
        if self.revoked:
            return Standing.REVOKED
        if self.deprecated:
            return Standing.DEPRECATED
        return Standing.BEHIND if self.behind else Standing.CURRENT

    def stands(self, standing: Standing) -> bool:
        """Whether it is on a version of that kind (a revoked version is deprecated too,
        and may be behind as well)."""
        return {
            Standing.REVOKED: self.revoked,
            Standing.DEPRECATED: self.deprecated,
            Standing.BEHIND: self.behind,
            Standing.CURRENT: self.standing == Standing.CURRENT,
        }[standing]


@dataclass(frozen=True)
class Campaign:
    """A module's consumers, most urgent first (revoked, deprecated, behind, current; then
    the oldest version first, then by kind and id: a stable order to page)."""

    module: Any  # the ModuleModel
    latest: str | None  # the latest servable version
    consumers: list[Consumer]

    def matching(self, wanted: set[Standing]) -> list[Consumer]:
        """The consumers that stand on any of ``wanted`` (all of them when empty)."""
        if not wanted:
            return list(self.consumers)
        return [c for c in self.consumers if any(c.stands(s) for s in wanted)]

    def counts(self) -> dict[str, int]:
        """How many consumers stand on each kind of version, and in all."""
        counted = {str(s): sum(1 for c in self.consumers if c.stands(s)) for s in Standing}
        return {**counted, "total": len(self.consumers)}

    def on_versions(self) -> Counter[str]:
        """version -> how many consumers are on it."""
        return Counter(c.version for c in self.consumers)


def parse_statuses(raw: str | None) -> set[Standing]:
    """``filter[status]``: a comma-separated list of ``Standing`` values (422 naming a bad one)."""
    wanted = set()
    for part in (raw or "").split(","):
        text = part.strip()
        if not text:
            continue
        try:
            wanted.add(Standing(text))
        except ValueError:
            known = ", ".join(Standing)
            raise Unprocessable(
                f"filter[status] {text[:64]!r} is not one of {known}", parameter="filter[status]"
            ) from None
    return wanted


def _order(version: str) -> str:
    return semver.parse(version).order_key if semver.is_valid(version) else ""


def campaign_of(module: Any, found: Iterable[store.VersionDownloads]) -> Campaign:
    """The campaign of a module already read, from its download items (``store``)."""
    statuses = module.statuses()
    latest = latest_servable(statuses)
    last: dict[tuple[str, str], tuple[str, str]] = {}
    for item in found:
        for key, when in item.consumers.items():
            known = last.get(key)
            if known is None or (when, _order(item.version)) > (known[0], _order(known[1])):
                last[key] = (when, item.version)
    consumers = []
    for (kind, principal_id), (when, version) in last.items():
        entry = statuses.get(version, {})
        deprecation = entry.get("deprecation")
        deprecated = is_deprecated(deprecation)
        order = _order(version)
        consumers.append(
            Consumer(
                kind=kind,
                id=principal_id,
                version=version,
                last_download=when,
                deprecated=deprecated,
                revoked=is_revoked(entry.get("revocation")),
                behind=latest is not None and bool(order) and order < latest.order_key,
                revoke_at=(deprecation or {}).get("revoke-at") if deprecated else None,
            )
        )
    consumers.sort(key=lambda c: (RANK[c.standing], _order(c.version), c.kind, c.id))
    return Campaign(module, latest.text if latest else None, consumers)


def module_campaign(principal: Principal, ref: registry.ModuleRef) -> Campaign:
    """A module's campaign for its owners and ``manage-modules`` teams (404 for anyone else,
    as for its downloads): the module item and one Query of its download items."""
    module, rights = registry.get_module(principal, ref)
    registry.require_rights(rights, "a module's consumers")
    return campaign_of(module, store.module_downloads(module.id))


# ----- downloads per version per week (the module page's campaign view) -----------------


@dataclass(frozen=True)
class Weekly:
    """Downloads per version per ISO week (weeks start on Monday, UTC), newest week first,
    from the oldest week with a download among the kept days (``store.DAYS_KEPT``)."""

    versions: list[str]  # newest first, those with downloads in the weeks shown
    weeks: list[tuple[str, list[int]]]  # (the week's Monday, one count per version)


def weekly(found: Iterable[store.VersionDownloads], today: date) -> Weekly:
    oldest = today - timedelta(days=store.DAYS_KEPT - 1)
    counts: dict[str, Counter[date]] = {}
    for item in found:
        for day, n in item.days.items():
            moment = date.fromisoformat(day)
            if moment >= oldest and n:
                monday = moment - timedelta(days=moment.weekday())
                counts.setdefault(item.version, Counter())[monday] += n
    versions = sorted(counts, key=_order, reverse=True)
    if not versions:
        return Weekly([], [])
    first = min(week for counted in counts.values() for week in counted)
    week = today - timedelta(days=today.weekday())
    weeks = []
    while week >= first:
        weeks.append((week.isoformat(), [counts[v][week] for v in versions]))
        week -= timedelta(days=7)
    return Weekly(versions, weeks)


# ----- the module page's view (its Downloads tab) ------------------------------------------


@dataclass(frozen=True)
class ModuleView:
    """Everything the module page's Downloads tab shows, from one Query of its items."""

    report: service.Report
    campaign: Campaign
    weekly: Weekly
    names: dict[tuple[str, str], str]


def module_view(module: Any) -> ModuleView:
    """The Downloads tab of a module already read and allowed (``service.may_see``): one
    Query, and the names of every consumer (one BatchGet per kind, per hundred)."""
    items = store.module_downloads(module.id)
    report = service.module_report(module, service.DEFAULT_DAYS, items)
    names = {
        (c.kind, c.id): c.name for v in report.versions for c in v.consumers if c.name is not None
    }
    return ModuleView(report, campaign_of(module, items), weekly(items, now().date()), names)


# ----- the organization's campaigns -----------------------------------------------------


@dataclass(frozen=True)
class DeprecatedVersion:
    version: str
    revoked: bool
    revoke_at: str | None
    reason: str | None
    link: str | None
    consumers: int  # consumers whose last download is this version


@dataclass(frozen=True)
class ModuleCampaign:
    """A module with consumers on deprecated versions: its campaign and its deprecated
    versions, most urgent first."""

    campaign: Campaign
    deprecated: list[DeprecatedVersion]

    @property
    def module(self) -> Any:
        return self.campaign.module

    @property
    def soonest_revoke_at(self) -> str | None:
        """The nearest deadline of a deprecated (not yet revoked) version someone is on."""
        deadlines = [
            v.revoke_at for v in self.deprecated if v.consumers and v.revoke_at and not v.revoked
        ]
        return min(deadlines, default=None)


def _urgency(version: str, entry: Mapping[str, Any]) -> tuple[str, str]:
    """Where a version sorts among deprecations (the index's own order, then oldest first)."""
    order = modules_store.deprecation_order(entry.get("deprecation"), entry.get("revocation"))
    return order or "", _order(version)


def _module_campaign(module: Any) -> tuple[ModuleCampaign, str | None]:
    """The module's campaign (one Query), and the version where it is listed: its most
    urgent deprecated version that someone is on (None: nobody is on one)."""
    campaign = campaign_of(module, store.module_downloads(module.id))
    statuses = module.statuses()
    on = campaign.on_versions()
    deprecated = sorted(
        (v for v, entry in statuses.items() if is_deprecated(entry.get("deprecation"))),
        key=lambda v: _urgency(v, statuses[v]),
    )
    versions = []
    for version in deprecated:
        deprecation = statuses[version].get("deprecation") or {}
        revoked = is_revoked(statuses[version].get("revocation"))
        versions.append(
            DeprecatedVersion(
                version=version,
                revoked=revoked,
                revoke_at=deprecation.get("revoke-at"),
                reason=deprecation.get("reason"),
                link=deprecation.get("link"),
                consumers=on.get(version, 0),
            )
        )
    listed_at = next((v.version for v in versions if v.consumers), None)
    return ModuleCampaign(campaign, versions), listed_at


def _cursor_key(organization: str, after: str | None) -> dict[str, Any] | None:
    """The index position a ``page[after]`` cursor names (422 when it is not one)."""
    if not after:
        return None
    parts = pagination.cursor_parts(after, 3, MAX_CURSOR)
    order, module_id, order_key = parts
    return {
        "deprecated_in": {"S": organization},
        "deprecation_order": {"S": order},
        "module_id": {"S": module_id},
        "order_key": {"S": order_key},
    }


def _cursor(version: Any) -> str:
    return pagination.cursor([version.deprecation_order, version.module_id, version.order_key])


def organization_campaigns(
    principal: Principal, organization: str, size: int, after: str | None = None
) -> tuple[list[ModuleCampaign], str | None]:
    """A page of the organization's modules with consumers on deprecated versions, most
    urgent first, and the cursor of the next page (None: the last). Owners and
    ``manage-modules`` teams only (404 for anyone else)."""
    authorization.authorize(
        principal,
        "manage-modules",
        organization,
        "not found: upgrade campaigns need a user or team token of a team with the "
        "manage-modules permission",
    )
    start = _cursor_key(organization, after)
    seen: dict[str, tuple[ModuleCampaign, str | None] | None] = {}
    listed: list[ModuleCampaign] = []
    examined = 0
    while True:
        want = min(MAX_EXAMINED - examined, size + 1)
        page, following = modules_store.deprecated_versions(organization, want, start)
        for version in page:
            examined += 1
            if version.module_id not in seen:
                module = modules_store.find_module(organization, version.module_key)
                seen[version.module_id] = _module_campaign(module) if module else None
            found = seen[version.module_id]
            if found is not None and found[1] == version.version:
                listed.append(found[0])
            if len(listed) == size or examined == MAX_EXAMINED:
                more = version is not page[-1] or following is not None
                return listed, _cursor(version) if more else None
        if following is None:
            return listed, None
        start = following
