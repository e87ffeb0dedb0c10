"""A scan's result, as every scanner reports it and every reader shows it.

``ScanReport`` is what one scan of one version found (stored beside the archive, as JSON);
``ScanReport.summary()`` is what the version item keeps of it (its ``scan`` attribute, at
most a few hundred bytes), and ``entry_summary`` what the module's ``version-statuses``
entry keeps (for the module list's counts, without reading the version).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field
from enum import StrEnum
from typing import Any


class Severity(StrEnum):
    """A finding's severity, lowest first (``rank``). ``unknown``: the scanner gave none."""

    UNKNOWN = "unknown"
    LOW = "low"
    MEDIUM = "medium"
    HIGH = "high"
    CRITICAL = "critical"

    @property
    def rank(self) -> int:
        return list(Severity).index(self)

    @classmethod
    def parse(cls, text: str | None) -> Severity:
        """A scanner's spelling (``HIGH``, ``High``), ``UNKNOWN`` for anything else."""
        try:
            return cls((text or "").strip().lower())
        except ValueError:
            return cls.UNKNOWN


class ScanStatus(StrEnum):
    """A version's ``scan-status``."""

    PENDING = "pending"  # not scanned yet (queued, or scanned before the scan existed)
    PASSED = "passed"  # scanned, no finding
    FINDINGS = "findings"  # scanned, at least one finding
    FAILED = "failed"  # the scan could not finish (its error is recorded)


@dataclass(frozen=True)
class Finding:
    """One finding: which rule, how bad, where (file and line range, relative to the module's
    root), and the scanner's guidance link where it has one."""

    rule_id: str
    title: str
    severity: Severity
    resource: str = ""
    file: str = ""
    start_line: int | None = None
    end_line: int | None = None
    description: str = ""
    resolution: str = ""
    guidance_url: str = ""

    def to_json(self) -> dict[str, Any]:
        return {**asdict(self), "severity": str(self.severity)}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Finding:
        return cls(**{**data, "severity": Severity.parse(data.get("severity"))})


def count(findings: Iterable[Finding]) -> dict[str, int]:
    """Findings per severity, every severity named (highest first)."""
    counts = {str(severity): 0 for severity in reversed(Severity)}
    for finding in findings:
        counts[str(finding.severity)] += 1
    return counts


@dataclass(frozen=True)
class ScanReport:
    """One scan of one version. ``findings`` are those kept (at most the scan's bound, the
    most severe first); ``counts`` count every finding the scanner reported, kept or not;
    ``truncated`` says some were dropped. A failed scan has ``error`` and no findings."""

    scanner: str  # "trivy"
    scanner_version: str  # "0.76.0"
    rules_version: str  # which rule set (e.g. "embedded checks of trivy 0.76.0")
    scanned_at: str  # ISO 8601, UTC
    status: ScanStatus
    findings: tuple[Finding, ...] = ()
    counts: dict[str, int] = field(default_factory=dict)
    truncated: bool = False
    error: str = ""

    def summary(self) -> dict[str, Any]:
        """What the version item keeps (its ``scan`` attribute) and the API shows."""
        summary: dict[str, Any] = {
            "status": str(self.status),
            "scanner": self.scanner,
            "scanner-version": self.scanner_version,
            "rules-version": self.rules_version,
            "scanned-at": self.scanned_at,
            "counts": dict(self.counts),
        }
        if self.error:
            summary["error"] = self.error
        return summary

    def to_json(self) -> dict[str, Any]:
        return {
            **self.summary(),
            "truncated": self.truncated,
            "findings": [finding.to_json() for finding in self.findings],
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ScanReport:
        return cls(
            scanner=data["scanner"],
            scanner_version=data["scanner-version"],
            rules_version=data["rules-version"],
            scanned_at=data["scanned-at"],
            status=ScanStatus(data["status"]),
            findings=tuple(Finding.from_json(f) for f in data.get("findings", ())),
            counts=dict(data.get("counts", {})),
            truncated=bool(data.get("truncated", False)),
            error=data.get("error", ""),
        )


def entry_summary(summary: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """What a module's ``version-statuses`` entry keeps of a version's scan summary: the
    status and the non-zero counts (a few dozen bytes)."""
    if not summary:
        return None
    counts = {k: v for k, v in (summary.get("counts") or {}).items() if v}
    return {"status": summary["status"], **({"counts": counts} if counts else {})}


def status_of(summary: Mapping[str, Any] | None) -> ScanStatus:
    """The ``scan-status`` of a version's ``summary`` or a module entry's ``entry_summary``:
    ``pending`` without one (not scanned yet)."""
    try:
        return ScanStatus((summary or {}).get("status") or ScanStatus.PENDING)
    except ValueError:
        return ScanStatus.PENDING


def counts_of(summary: Mapping[str, Any] | None) -> dict[str, int]:
    """Every severity with its count in a summary (0 for those it leaves out, as
    ``entry_summary`` does), highest first."""
    kept = (summary or {}).get("counts") or {}
    return {str(s): int(kept.get(str(s)) or 0) for s in reversed(Severity)}


def encode(report: ScanReport) -> bytes:
    """The report as it is stored beside the archive (gzipped JSON)."""
    import gzip
    import json

    return gzip.compress(json.dumps(report.to_json(), separators=(",", ":")).encode(), 6)


class ReportTooLarge(ValueError):
    """A stored report that unpacks past the reader's bound."""


def decode(data: bytes, max_size: int | None = None) -> ScanReport:
    """The stored report; with ``max_size``, never unpacking more than that many bytes of
    JSON (``ReportTooLarge``): a reader bounds what a few compressed bytes may become."""
    import gzip
    import json
    import zlib

    if max_size is None:
        return ScanReport.from_json(json.loads(gzip.decompress(data)))
    unpacker = zlib.decompressobj(wbits=31)  # gzip
    text = unpacker.decompress(data, max_size + 1)
    if len(text) > max_size:
        raise ReportTooLarge(f"the scan report unpacks past {max_size} bytes")
    return ScanReport.from_json(json.loads(text))
