"""Reading a module version's findings: its scan summary (on the version item) and its scan
report (beside the archive, at ``findings_key``), for the findings API and the Security tab.

A version not scanned yet (``scan`` None) is ``pending`` with no findings, and nothing is read
from S3. A scanned version's report is read once, under ``MAX_REPORT_BYTES`` (as stored,
gzipped) and ``MAX_REPORT_JSON_BYTES`` (unpacked): the scan function writes it within its own
bound on findings, so a report past these is not one it wrote. A summary whose report is not
there (a failed scan that stored none) shows the summary and no findings.
"""

from __future__ import annotations

import logging
import zlib
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from chalicelib.artifacts import objects
from chalicelib.core.api.errors import ApiError, BadRequest
from chalicelib.modules.keys import UploadKey
from chalicelib.trust import findings
from chalicelib.trust.findings import Finding, ScanReport, ScanStatus, Severity

if TYPE_CHECKING:
    from chalicelib.modules.store import ModuleVersionModel

log = logging.getLogger("registry.findings")

# What a stored report may weigh, gzipped and unpacked. The scan keeps at most a few hundred
# findings of about 1 KB each: these are an order of magnitude above that.
MAX_REPORT_BYTES = 4 * 1024 * 1024
MAX_REPORT_JSON_BYTES = 32 * 1024 * 1024

# Links the pages make of a finding's guidance URL (the scanner's, never javascript: or data:).
SAFE_SCHEMES = ("https://", "http://")


def parse_severities(text: str | None) -> frozenset[Severity] | None:
    """``filter[severity]``: one severity or a comma-separated list (any case, blanks around
    names ignored); None when absent or empty (no filter). A name that is not a severity is
    a 400 naming it and the ones there are."""
    if text is None or not text.strip():
        return None
    wanted = set()
    for part in text.split(","):
        name = part.strip().lower()
        if not name:
            continue
        try:
            wanted.add(Severity(name))
        except ValueError:
            known = ", ".join(str(s) for s in reversed(Severity))
            raise BadRequest(
                f"filter[severity]: {part.strip()[:32]!r} is not a severity (use {known})",
                parameter="filter[severity]",
            ) from None
    return frozenset(wanted) or None


class ReportUnreadable(ApiError):
    """The version's stored report is over its bounds or not a report: the operator's
    problem, never shown as "no findings"."""

    title = "report unreadable"


@dataclass(frozen=True)
class VersionFindings:
    """A version's scan as readers see it: ``status`` (``pending`` before its scan), the
    summary's facts (None while pending), and every finding kept, most severe first."""

    version_id: str
    status: ScanStatus
    summary: Mapping[str, Any] | None
    findings: tuple[Finding, ...] = ()
    truncated: bool = False

    def of_severity(self, wanted: Collection[Severity] | None) -> list[Finding]:
        if wanted is None:
            return list(self.findings)
        return [finding for finding in self.findings if finding.severity in wanted]

    @property
    def counts(self) -> dict[str, int] | None:
        """Findings per severity, every severity named, highest first (every finding the
        scanner reported, kept or not); None while pending."""
        if self.summary is None:
            return None
        return findings.counts_of(self.summary)

    def meta(self) -> dict[str, Any]:
        """The findings list's ``meta`` (besides its pagination)."""
        summary = self.summary or {}
        meta: dict[str, Any] = {
            "status": str(self.status),
            "scanner": summary.get("scanner"),
            "scanner-version": summary.get("scanner-version"),
            "rules-version": summary.get("rules-version"),
            "scanned-at": summary.get("scanned-at"),
            "counts": self.counts,
            "truncated": self.truncated,
        }
        if summary.get("error"):
            meta["error"] = summary["error"]
        return meta


def read(version: ModuleVersionModel) -> VersionFindings:
    """The version's scan: its summary, and its report unless it is pending (one S3 read)."""
    summary = version.scan_summary
    status = findings.status_of(summary)
    if not summary or status == ScanStatus.PENDING:
        return VersionFindings(version.id, ScanStatus.PENDING, None)
    report = _report(version)
    if report is None:
        return VersionFindings(version.id, status, summary)
    ordered = sorted(report.findings, key=lambda finding: -finding.severity.rank)
    return VersionFindings(version.id, status, summary, tuple(ordered), report.truncated)


def _report(version: ModuleVersionModel) -> ScanReport | None:
    key = UploadKey(version.module_id, version.version, version.id).findings_key
    try:
        with objects.fetch(key, MAX_REPORT_BYTES) as fetched:
            return findings.decode(fetched.read(), MAX_REPORT_JSON_BYTES)
    except objects.Gone:
        return None
    except (objects.TooLarge, ValueError, KeyError, TypeError, zlib.error, EOFError) as exc:
        log.warning("scan report %s cannot be read: %s", key, exc)
        detail = f"the scan report of version {version.version} cannot be read"
        raise ReportUnreadable(detail) from None


def guidance_link(finding: Finding) -> str | None:
    """The finding's guidance URL where a page may link it (http or https only)."""
    url = finding.guidance_url.strip()
    return url if url.lower().startswith(SAFE_SCHEMES) else None


def lines(finding: Finding) -> str:
    """``12`` or ``12-18`` (empty when the scanner gave no line)."""
    if finding.start_line is None:
        return ""
    if finding.end_line is None or finding.end_line == finding.start_line:
        return str(finding.start_line)
    return f"{finding.start_line}-{finding.end_line}"
