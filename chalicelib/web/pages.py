"""What each page shows, gathered through the domains' services (never their tables).

Permissions are the services' own: a page asks the same service call the API does with the
same ``Principal``, so what a session may read is exactly what its token may read, and an
unreadable organization or module is the same 404.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from datetime import datetime
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from chalicelib.accounts.organizations import service as organizations_service
from chalicelib.artifacts import objects, semver
from chalicelib.artifacts.statuses import VersionStatus
from chalicelib.core.api.errors import BadRequest, NotFound
from chalicelib.core.api.http import host_of
from chalicelib.core.api.pagination import Page
from chalicelib.core.auth import Principal
from chalicelib.modules import describe, versions
from chalicelib.modules import service as registry
from chalicelib.modules.downloads import campaign
from chalicelib.modules.downloads import service as downloads
from chalicelib.modules.scanning import findings as scans
from chalicelib.modules.statuses import is_deprecated, is_revoked
from chalicelib.trust.findings import counts_of, status_of
from chalicelib.web import markdown
from chalicelib.web.labels import FAILED, status_label

if TYPE_CHECKING:  # the registry's records, read only through its service
    from chalicelib.modules.store import ModuleModel, ModuleVersionModel

PAGE_SIZE = 20
MAX_QUERY_LENGTH = 100


def module_path(module: ModuleModel, version: str | None = None) -> str:
    """The module page's URL: the module's address under the organization, as in TFE."""
    path = (
        f"/app/{module.organization}/registry/modules/{module.registry_name}/"
        f"{module.namespace}/{module.name}/{module.provider}"
    )
    return f"{path}/{version}" if version else path


@lru_cache(maxsize=256)
def _metadata(key: str) -> dict[str, Any]:
    """A version's parsed metadata (immutable once ingested: a new upload gets a new key)."""
    return objects.get_metadata(key)


def metadata(version: ModuleVersionModel) -> dict[str, Any]:
    if version.status != VersionStatus.OK or not version.metadata_key:
        return {}
    return _metadata(version.metadata_key)


def _order(text: str) -> tuple[int, str]:
    try:
        return (1, semver.parse(text).order_key)
    except semver.InvalidVersion:
        return (0, text)


# ----- organizations ----------------------------------------------------------------------


def organizations(principal: Principal) -> list[dict[str, Any]]:
    return [
        {"name": org.name, "email": getattr(org, "email", None)}
        for org in sorted(organizations_service.list_organizations(principal), key=lambda o: o.name)
    ]


# ----- the module list --------------------------------------------------------------------


@dataclass
class ModuleRow:
    name: str
    namespace: str
    provider: str
    registry: str
    url: str
    status: str
    status_label: str
    latest: str | None
    description: str
    updated_at: datetime
    downloads: int = 0  # every version's, as kept on the module (``total_downloads``)
    failure: str | None = None  # "1.2.0: <reason>" for the newest version whose ingest failed
    # The latest version's scan, from its entry on the module item (no read more): its
    # status (None without a latest version) and its non-zero counts, most severe first.
    scan_status: str | None = None
    scan_counts: list[tuple[str, int]] = field(default_factory=list)


@dataclass
class ModuleList:
    organization: str
    q: str
    provider: str
    providers: list[str]
    rows: list[ModuleRow]
    total: int
    page: int
    pages: int
    page_links: list[int | None] = field(default_factory=list)
    filters: dict[str, str] = field(default_factory=dict)
    may_publish: bool = False  # owners and manage-modules teams: a link to publish a module


def _row(module: ModuleModel) -> ModuleRow:
    statuses = module.statuses()
    latest = module.latest_servable()
    failed = [v for v, entry in statuses.items() if entry.get("status") in FAILED]
    failure = None
    if failed:
        newest = max(failed, key=_order)
        failure = (
            f"{newest}: {statuses[newest].get('error') or status_label(statuses[newest]['status'])}"
        )
    scan = statuses.get(latest, {}).get("scan") if latest else None
    return ModuleRow(
        name=module.name,
        namespace=module.namespace,
        provider=module.provider,
        registry=module.registry_name,
        url=module_path(module),
        status=module.status,
        status_label=status_label(module.status),
        latest=latest,
        # Kept on the module item: the row reads no version (nor S3) once backfilled.
        description=describe.latest_description(module),
        # Kept on the module item from the downloads table's stream (seconds behind).
        downloads=module.total_downloads(),
        updated_at=module.updated_at,
        failure=failure,
        scan_status=str(status_of(scan)) if latest else None,
        scan_counts=[(name, n) for name, n in counts_of(scan).items() if n],
    )


def module_list(
    principal: Principal, organization: str, q: str, provider: str, page: int
) -> ModuleList:
    """One page of the organization's modules, read as the API reads its list: the kept
    count and the page's own items, or the lean index for a search (never every module)."""
    if len(q) > MAX_QUERY_LENGTH:
        raise BadRequest(f"the search is limited to {MAX_QUERY_LENGTH} characters")
    filters = {"provider": provider} if provider else {}
    # Read once for the total and the provider menu (shown only if the page may be read).
    counts = registry.module_counts(organization)
    shown, total, rights = registry.page_modules(
        principal, organization, q or None, filters, Page(page, PAGE_SIZE), counts
    )
    pages = max(1, math.ceil(total / PAGE_SIZE))
    if page > pages:
        raise NotFound(f"page {page} not found: there are {pages}")
    return ModuleList(
        organization=organization,
        q=q,
        provider=provider,
        providers=registry.providers_in_use(organization, counts),
        rows=[_row(m) for m in shown],
        total=total,
        page=page,
        pages=pages,
        page_links=page_window(page, pages),
        filters={k: v for k, v in (("q", q), ("provider", provider)) if v},
        may_publish=rights.manage_modules,
    )


# ----- the organization's upgrade campaigns -------------------------------------------------


@dataclass
class CampaignList:
    """A page of the organization's modules with consumers on deprecated versions, most
    urgent first (``campaign.organization_campaigns``), each with its page's URL."""

    organization: str
    rows: list[tuple[campaign.ModuleCampaign, str]]
    after: str | None  # the next page's cursor (None: the last page)
    first: bool  # the first page (no cursor given)


def campaign_list(principal: Principal, organization: str, after: str | None) -> CampaignList:
    found, following = campaign.organization_campaigns(principal, organization, PAGE_SIZE, after)
    rows = [(entry, module_path(entry.module) + "#downloads") for entry in found]
    return CampaignList(organization, rows, following, not after)


def page_window(current: int, pages: int, around: int = 2) -> list[int | None]:
    """The page numbers the pager links: the first, the last and ``around`` either side of
    the current one; ``None`` stands for a gap (an ellipsis)."""
    shown = {1, pages} | set(range(max(1, current - around), min(pages, current + around) + 1))
    out: list[int | None] = []
    for number in sorted(shown):
        if out and out[-1] is not None and number > out[-1] + 1:
            out.append(None)
        out.append(number)
    return out


# ----- the module page --------------------------------------------------------------------


@dataclass
class VersionEntry:
    version: str
    status: str
    status_label: str
    error: str | None
    deprecated: bool
    revoked: bool
    deprecation: dict[str, Any] | None
    revocation: dict[str, Any] | None
    created_at: datetime
    url: str

    @property
    def marks(self) -> str:
        """What the version selector says beside the number."""
        notes = []
        if self.revoked:
            notes.append("revoked")
        elif self.deprecated:
            notes.append("deprecated")
        if self.status != VersionStatus.OK:
            notes.append(self.status_label.lower())
        return f" ({', '.join(notes)})" if notes else ""


@dataclass(frozen=True)
class FindingRow:
    severity: str
    rule_id: str
    link: str | None  # the scanner's guidance page (http or https only)
    title: str
    resolution: str
    resource: str
    file: str
    lines: str  # "12" or "12-18", "" when the scanner gave none


@dataclass(frozen=True)
class Security:
    """The Security tab: the selected version's scan (``scans.read``) and its findings."""

    status: str
    summary: dict[str, Any]  # scanner, scanner-version, rules-version, scanned-at, error
    counts: list[tuple[str, int]]  # non-zero counts, most severe first
    total: int  # every finding the scanner reported (kept or not)
    rows: list[FindingRow]
    truncated: bool

    @property
    def scanned_at(self) -> datetime | None:
        text = self.summary.get("scanned-at")
        try:
            return datetime.fromisoformat(text) if text else None
        except ValueError:
            return None


def security(version: ModuleVersionModel) -> Security:
    """What the Security tab shows of a version's scan (one S3 read once it is scanned). A
    report that cannot be read says so in the tab (logged by ``scans.read``); the rest of
    the page is served."""
    try:
        scan = scans.read(version)
    except scans.ReportUnreadable:
        return Security("unreadable", dict(version.scan_summary or {}), [], 0, [], False)
    counts = scan.counts or {}
    rows = [
        FindingRow(
            severity=str(f.severity),
            rule_id=f.rule_id,
            link=scans.guidance_link(f),
            title=f.title,
            resolution=f.resolution,
            resource=f.resource,
            file=f.file,
            lines=scans.lines(f),
        )
        for f in scan.findings
    ]
    return Security(
        status=str(scan.status),
        summary=dict(scan.summary or {}),
        counts=[(name, n) for name, n in counts.items() if n],
        total=sum(counts.values()),
        rows=rows,
        truncated=scan.truncated,
    )


@dataclass
class ModulePage:
    module: ModuleModel
    versions: list[VersionEntry]
    selected: VersionEntry | None
    sha256: str | None
    metadata: dict[str, Any]
    readme_html: str
    source: str
    constraint: str
    snippet: str
    # The CLI configuration terraform needs to reach a plain-HTTP registry; None over HTTPS.
    cli_config: str | None
    vcs: dict[str, Any] | None
    submodules: list[dict[str, Any]]
    examples: list[dict[str, Any]]
    url: str
    may_publish: bool = False  # owners and manage-modules teams: a link to its publishing page
    # Owners and manage-modules teams only (``downloads.may_see``); None for the others.
    downloads: downloads.Report | None = None
    chart: Chart | None = None
    # The same readers: who is on what, downloads per version per week (``campaign``).
    campaign_view: campaign.ModuleView | None = None
    security: Security | None = None  # the selected version's scan


@dataclass(frozen=True)
class Chart:
    """Daily downloads as bars of an inline SVG (no script): ``bars`` are (x, y, height,
    day, count) in the viewBox's units, ``width`` by ``height``."""

    bars: list[tuple[int, int, int, str, int]]
    width: int
    height: int
    peak: int
    total: int
    first: str
    last: str


def download_chart(report: downloads.Report, bar: int = 10, height: int = 60) -> Chart:
    """The module's downloads per day over the report's days, every version summed."""
    days = [day for day, _ in report.versions[0].daily] if report.versions else []
    counts = [sum(v.daily[i][1] for v in report.versions) for i in range(len(days))]
    peak = max(counts, default=0)
    bars = []
    for index, (day, count) in enumerate(zip(days, counts, strict=True)):
        tall = round(count / peak * (height - 2)) if peak else 0
        if count and not tall:
            tall = 1
        bars.append((index * bar, height - tall, tall, day, count))
    return Chart(
        bars,
        len(days) * bar,
        height,
        peak,
        sum(counts),
        days[0] if days else "",
        days[-1] if days else "",
    )


def _entry(module: ModuleModel, version: ModuleVersionModel) -> VersionEntry:
    deprecation = version.deprecation or None
    revocation = version.revocation or None
    return VersionEntry(
        version=version.version,
        status=version.status,
        status_label=status_label(version.status),
        error=version.error,
        deprecated=is_deprecated(deprecation),
        revoked=is_revoked(revocation),
        deprecation=deprecation,
        revocation=revocation if revocation else None,
        created_at=version.created_at,
        url=module_path(module, version.version),
    )


def _default_version(
    module: ModuleModel, newest_first: list[ModuleVersionModel]
) -> ModuleVersionModel | None:
    """The version ``terraform`` would get (the module's latest servable one), else the
    newest (a module whose versions are all pending, failed or revoked)."""
    latest = module.latest_servable()
    chosen = next((v for v in newest_first if v.version == latest), None)
    return chosen or (newest_first[0] if newest_first else None)


def constraint_for(version: str) -> str:
    """A sensible ``version`` argument: ``~> MAJOR.MINOR`` (this minor and later ones of
    the same major), or the exact version for a pre-release (Terraform only picks a
    pre-release when pinned exactly)."""
    parsed = semver.parse(version)
    if parsed.is_prerelease:
        return parsed.text
    return f"~> {parsed.major}.{parsed.minor}"


def source_address(module: ModuleModel, host: str) -> str:
    if module.registry_name == "public":
        return f"{module.namespace}/{module.name}/{module.provider}"
    return f"{host}/{module.organization}/{module.name}/{module.provider}"


def _directory(entry: dict[str, Any]) -> dict[str, Any]:
    """A submodule or example, with its README rendered and its inputs required first."""
    return {
        **entry,
        "readme_html": markdown.render(entry.get("readme")),
        "inputs": sorted_inputs(entry.get("inputs") or []),
    }


def sorted_inputs(inputs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Required inputs first, then by name."""
    return sorted(inputs, key=lambda i: (not i.get("required"), i.get("name") or ""))


def cli_configuration(base_url: str) -> str | None:
    """What terraform needs to reach this registry when it is served over plain HTTP:
    terraform discovers a host's services over HTTPS only, so a ``host`` block of the CLI
    configuration names them (``modules.v1``, ``providers.v1`` for private providers, and
    ``login.v1`` for ``terraform login``).
    None over HTTPS, where the discovery document does it."""
    if not base_url.startswith("http://"):
        return None
    from chalicelib.web.oauth import AUTHZ_PATH, CLIENT_ID, PORTS, TOKEN_PATH

    ports = ", ".join(str(port) for port in PORTS)
    return (
        f'host "{host_of(base_url)}" {{\n'
        "  services = {\n"
        f'    "modules.v1" = "{base_url}/api/registry/v1/modules/"\n'
        f'    "providers.v1" = "{base_url}/api/registry/v1/providers/"\n'
        '    "login.v1" = {\n'
        f'      client      = "{CLIENT_ID}"\n'
        '      grant_types = ["authz_code"]\n'
        f'      authz       = "{base_url}{AUTHZ_PATH}"\n'
        f'      token       = "{base_url}{TOKEN_PATH}"\n'
        f"      ports       = [{ports}]\n"
        "    }\n"
        "  }\n"
        "}\n"
    )


def module_page(
    principal: Principal, ref: registry.ModuleRef, version: str | None, base_url: str
) -> ModulePage:
    module, rights = registry.get_module(principal, ref)
    stored = versions.list_versions(module)
    stored.sort(key=lambda v: v.order_key, reverse=True)
    if version is None:
        chosen = _default_version(module, stored)
    else:
        chosen = next((v for v in stored if v.version == version), None)
        if chosen is None:
            raise NotFound(f"version {version!r} of {module.name}/{module.provider} not found")
    meta = metadata(chosen) if chosen else {}
    root = meta.get("root") or {}
    if root:
        root = {**root, "inputs": sorted_inputs(root.get("inputs") or [])}
    source = source_address(module, host_of(base_url))
    constraint = constraint_for(chosen.version) if chosen else ""
    snippet = f'module "{module.name.replace("-", "_")}" {{\n  source  = "{source}"\n'
    snippet += f'  version = "{constraint}"\n}}\n' if constraint else "}\n"
    vcs = None
    if module.vcs_repo:
        vcs = {
            "repo": module.vcs_repo,
            "mechanism": module.publishing_mechanism,
            "sync": module.vcs_sync or {},
            "webhook": module.webhook_registration or {},
        }
    tab = campaign.module_view(module) if downloads.may_see(rights) else None
    report = tab.report if tab else None
    return ModulePage(
        module=module,
        versions=[_entry(module, v) for v in stored],
        selected=_entry(module, chosen) if chosen else None,
        sha256=chosen.sha256 if chosen else None,
        metadata={**meta, "root": root},
        readme_html=markdown.render(root.get("readme")),
        source=source,
        constraint=constraint,
        snippet=snippet,
        cli_config=cli_configuration(base_url) if module.registry_name == "private" else None,
        vcs=vcs,
        submodules=[_directory(d) for d in meta.get("submodules") or []],
        examples=[_directory(d) for d in meta.get("examples") or []],
        url=module_path(module),
        may_publish=rights.manage_modules and module.registry_name == "private",
        downloads=report,
        chart=download_chart(report) if report else None,
        campaign_view=tab,
        security=security(chosen) if chosen else None,
    )
