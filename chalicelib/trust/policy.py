"""An organization's publishing policy: which scan results hold a version back.

``Policy`` is the rule (one home: ingest asks ``holds_versions`` whether a new version waits
for its scan, the scan worker asks ``reasons`` whether it is quarantined). ``policy_of``
reads an organization's policy (the defaults until one is saved, ``trust.store``);
``read_policy`` and ``change_policy`` are its readers' and owners' (the API's
``/organizations/:org/registry-policy`` and the settings page): members read it, owners
change it, everyone else gets the 404 of an organization they cannot see.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING

from chalicelib.core.api.errors import Unprocessable
from chalicelib.core.audit import events
from chalicelib.core.data.ids import now
from chalicelib.trust.findings import ScanReport, ScanStatus, Severity

if TYPE_CHECKING:
    from chalicelib.core.auth import Principal
    from chalicelib.trust.store import PolicyModel

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
        above = [f for f in report.findings if f.severity.rank >= floor]
        ignored = {_same_rule(rule) for rule in self.ignored_rules}
        blocking = [f for f in above if _same_rule(f.rule_id) not in ignored]
        if blocking:
            rules = sorted({f.rule_id for f in blocking})
            shown = ", ".join(rules[:10]) + (", ..." if len(rules) > 10 else "")
            reasons.append(
                f"{len(blocking)} finding(s) at or above {self.block_severity} ({shown})"
            )
        elif _counted_above(report, floor) > len(above):
            # Every kept finding at or above the floor is an ignored rule, but the scan kept
            # only the most severe (its cap): the dropped ones may be rules that count.
            reasons.append(
                f"more findings at or above {self.block_severity} than the scan kept, "
                "and the kept ones are all ignored rules"
            )
        return reasons


def _same_rule(rule_id: str) -> str:
    """A rule id as compared: in any case, and Trivy's ``AVD-AWS-0086`` (as its guidance pages
    name a rule) the same as ``AWS-0086`` (as its findings do)."""
    return rule_id.upper().removeprefix("AVD-")


def _counted_above(report: ScanReport, floor: int) -> int:
    """How many findings at or above the floor the scanner reported, kept or not."""
    return sum(n for name, n in report.counts.items() if Severity.parse(name).rank >= floor)


def policy_of(organization: str) -> Policy:
    """The organization's policy (the defaults until one is saved): one GetItem."""
    from chalicelib.trust import store

    return _policy(store.find(organization))


def delete_for_organization(organization: str) -> None:
    """Forget the organization's policy (its deletion: a new organization of the same name
    starts with the defaults)."""
    from chalicelib.trust import store

    store.delete(organization)


def _policy(item: PolicyModel | None) -> Policy:
    if item is None:
        return Policy()
    return Policy(item.block_severity, frozenset(item.ignored_rules or ()), item.require_readme)


# ----- reading and changing it (the policy's routes and the settings page) --------------------

# What ``block-severity`` accepts: nothing, or the least severity that holds a version back.
BLOCK_SEVERITIES = (NONE, *(str(s) for s in Severity if s != Severity.UNKNOWN))
# Bounds of ``ignored-rules``: how many, how long each, and what a rule id looks like (Trivy's
# ``AWS-0086``, checkov's ``CKV_AWS_20``).
MAX_IGNORED_RULES = 100
MAX_RULE_ID = 128
RULE_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:-]*\Z")
ATTRIBUTES = "/data/attributes"


@dataclass(frozen=True)
class Shown:
    """An organization's policy as its readers see it: the rule, and when it last changed
    (None: never saved, the defaults)."""

    organization: str
    policy: Policy
    updated_at: datetime | None = None


def read_policy(principal: Principal, organization: str) -> Shown:
    """The organization's policy, for its readers (members, its tokens); 404 for anyone else."""
    from chalicelib.accounts import authorization
    from chalicelib.trust import store

    authorization.authorize(principal, "read", organization)
    item = store.find(organization)
    return Shown(organization, _policy(item), item.updated_at if item else None)


def change_policy(
    principal: Principal,
    organization: str,
    *,
    block_severity: str | None = None,
    ignored_rules: Sequence[str] | None = None,
    require_readme: bool | None = None,
) -> Shown:
    """Change the organization's policy (its owners; 404 for everyone else): each value given
    replaces the stored one (None keeps it). Everything is checked before the one write. The
    policy applies to versions ingested from now on: a version served or quarantined already
    stays as it is (released by an owner, or deleted). The change records its audit event
    (``registry-policy`` ``updated``, with the names of the attributes that changed) in the
    same write."""
    from chalicelib.accounts import authorization
    from chalicelib.core.audit import trail
    from chalicelib.trust import store

    refusal = f"organization {organization!r} not found or you are not one of its owners"
    authorization.authorize(principal, "own", organization, refusal)
    if block_severity is not None:
        block_severity = check_block_severity(block_severity)
    if ignored_rules is not None:
        ignored_rules = check_ignored_rules(ignored_rules)
    item = store.find(organization, consistent=True)
    current = _policy(item)
    severity = current.block_severity if block_severity is None else block_severity
    rules = sorted(current.ignored_rules) if ignored_rules is None else list(ignored_rules)
    readme = current.require_readme if require_readme is None else require_readme
    names = ("block-severity", "ignored-rules", "require-readme")
    before = (current.block_severity, sorted(current.ignored_rules), current.require_readme)
    after = (severity, rules, readme)
    moment = now()
    recorded = events.event(
        principal,
        organization=organization,
        resource_type="registry-policy",
        resource_id=organization,
        action="updated",
        meta={"changed": trail.changed(_named(names, before), _named(names, after))},
        moment=moment,
    )
    saved = store.save(
        item,
        organization,
        block_severity=severity,
        ignored_rules=rules,
        require_readme=readme,
        updated_by=f"{principal.kind}:{principal.id}",
        moment=moment,
        event=recorded,
    )
    return Shown(organization, _policy(saved), saved.updated_at)


def _named(names: Sequence[str], values: Sequence[object]) -> dict[str, object]:
    return dict(zip(names, values, strict=True))


def check_block_severity(value: str) -> str:
    wanted = value.strip().lower()
    if wanted not in BLOCK_SEVERITIES:
        raise Unprocessable(
            f"block-severity must be one of {', '.join(BLOCK_SEVERITIES)}, not {value[:32]!r}",
            pointer=f"{ATTRIBUTES}/block-severity",
        )
    return wanted


def check_ignored_rules(values: Sequence[str]) -> list[str]:
    """The rule ids, each checked, without repeats, sorted."""
    pointer = f"{ATTRIBUTES}/ignored-rules"
    if len(values) > MAX_IGNORED_RULES:
        raise Unprocessable(f"ignored-rules may hold at most {MAX_IGNORED_RULES}", pointer=pointer)
    for index, rule in enumerate(values):
        if not rule or len(rule) > MAX_RULE_ID or not RULE_ID.match(rule):
            raise Unprocessable(
                f"a rule id has at most {MAX_RULE_ID} letters, digits and _ . : - "
                f"(starting with a letter or digit), not {rule[:32]!r}",
                pointer=f"{pointer}/{index}",
            )
    return sorted(set(values))
