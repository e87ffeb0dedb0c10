"""An organization's publishing policy: which scan results hold a version back.

``Policy`` is the rule (one home: ingest asks ``holds_versions`` whether a new version waits
for its scan, the scan worker asks ``reasons`` whether it is quarantined). ``policy_of``
reads an organization's policy (the defaults until one is saved).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from chalicelib.trust.findings import ScanReport, ScanStatus, Severity

NONE = "none"  # block-severity: nothing is held back for its findings


@dataclass(frozen=True)
class Policy:
    """``block_severity``: a finding at or above it (``none``: never) quarantines a version;
    ``ignored_rules``: rule ids that never count; ``require_readme``: a version without a
    README is quarantined."""

    block_severity: str = NONE
    ignored_rules: frozenset[str] = field(default_factory=frozenset)
    require_readme: bool = False

    @property
    def holds_versions(self) -> bool:
        """Whether a new version waits for its scan before it is served."""
        return self.block_severity != NONE or self.require_readme

    def reasons(self, report: ScanReport, has_readme: bool) -> list[str]:
        """Why this policy quarantines a version with this scan (empty: it does not). A failed
        scan holds a version back under a blocking severity: nothing says it is clean."""
        reasons: list[str] = []
        if self.require_readme and not has_readme:
            reasons.append("the policy requires a README and the version has none")
        if self.block_severity == NONE:
            return reasons
        if report.status == ScanStatus.FAILED:
            reasons.append(f"the scan failed: {report.error}")
            return reasons
        floor = Severity(self.block_severity).rank
        blocking = [
            f
            for f in report.findings
            if f.severity.rank >= floor and f.rule_id not in self.ignored_rules
        ]
        if blocking:
            rules = sorted({f.rule_id for f in blocking})
            shown = ", ".join(rules[:10]) + (", ..." if len(rules) > 10 else "")
            reasons.append(
                f"{len(blocking)} finding(s) at or above {self.block_severity} ({shown})"
            )
        return reasons


def policy_of(organization: str) -> Policy:
    """The organization's policy (the defaults until one is saved)."""
    return Policy()
