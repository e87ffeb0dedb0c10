"""The publishing policy's rule (``Policy.reasons``), on scan reports made by hand."""

from __future__ import annotations

from chalicelib.trust.findings import Finding, ScanReport, ScanStatus, Severity, count
from chalicelib.trust.policy import Policy


def _report(findings: list[Finding], *, dropped: dict[str, int] | None = None) -> ScanReport:
    counts = count(findings)
    for severity, n in (dropped or {}).items():
        counts[severity] += n
    return ScanReport(
        "trivy", "0.76.0", "rules", "2026-11-28T00:00:00Z",
        ScanStatus.FINDINGS if findings else ScanStatus.PASSED,
        tuple(findings), counts, truncated=bool(dropped),
    )  # fmt: skip


def _finding(rule: str, severity: Severity) -> Finding:
    return Finding(rule, f"rule {rule}", severity)


def test_findings_at_or_above_the_floor_block_unless_ignored() -> None:
    report = _report([_finding("AWS-0107", Severity.HIGH), _finding("AWS-0099", Severity.LOW)])
    assert Policy().reasons(report, has_readme=True) == []
    assert Policy("critical").reasons(report, has_readme=True) == []
    (reason,) = Policy("high").reasons(report, has_readme=True)
    assert "1 finding(s) at or above high (AWS-0107)" in reason
    assert Policy("high", frozenset({"AWS-0107"})).reasons(report, has_readme=True) == []
    # As Trivy's guidance pages name it, in any case.
    assert Policy("high", frozenset({"avd-aws-0107"})).reasons(report, has_readme=True) == []
    assert len(Policy("low", frozenset({"AWS-0107"})).reasons(report, has_readme=True)) == 1


def test_findings_dropped_by_the_cap_block_when_every_kept_one_is_ignored() -> None:
    kept = [_finding("AWS-0107", Severity.HIGH)]
    capped = _report(kept, dropped={"high": 2})
    policy = Policy("high", frozenset({"AWS-0107"}))
    (reason,) = policy.reasons(capped, has_readme=True)
    assert "more findings at or above high than the scan kept" in reason
    # Dropped findings below the floor do not count.
    assert policy.reasons(_report(kept, dropped={"low": 5}), has_readme=True) == []


def test_a_failed_scan_holds_back_only_under_a_blocking_severity() -> None:
    failed = ScanReport("trivy", "0.76.0", "r", "t", ScanStatus.FAILED, error="timed out")
    assert Policy().reasons(failed, has_readme=True) == []
    assert Policy("critical").reasons(failed, has_readme=True) == ["the scan failed: timed out"]


def test_a_missing_readme_holds_back_when_required() -> None:
    clean = _report([])
    assert Policy(require_readme=True).holds_versions
    assert not Policy().holds_versions
    assert Policy(require_readme=True).reasons(clean, has_readme=False)
    assert Policy(require_readme=True).reasons(clean, has_readme=True) == []
