"""Scan results as the scan function stores them (its worker is another room's): the report
beside the archive at ``findings_key``, its summary on the version item and, shorter, in
the module's ``version_statuses`` entry. For the tests of the readers."""

from __future__ import annotations

from chalicelib.artifacts import objects, semver
from chalicelib.artifacts.statuses import VersionStatus
from chalicelib.core.data.ids import iso, now
from chalicelib.modules import store, writes
from chalicelib.modules.audit import events as audit_events
from chalicelib.modules.keys import UploadKey
from chalicelib.modules.store import ModuleModel, ModuleVersionModel
from chalicelib.trust import findings
from chalicelib.trust.findings import Finding, ScanReport, ScanStatus, Severity

SCANNED_AT = "2026-11-28T12:00:00Z"

PUBLIC_BUCKET = Finding(
    rule_id="AVD-AWS-0092",
    title="S3 Buckets not publicly accessible through ACL.",
    severity=Severity.HIGH,
    resource="aws_s3_bucket_acl.public",
    file="main.tf",
    start_line=12,
    end_line=15,
    description="Buckets should not have ACLs that allow public access",
    resolution="Don't use canned ACLs or switch to private acl",
    guidance_url="https://avd.aquasec.com/misconfig/avd-aws-0092",
)
OPEN_SSH = Finding(
    rule_id="AVD-AWS-0107",
    title="An ingress security group rule allows traffic from /0.",
    severity=Severity.CRITICAL,
    resource="aws_security_group.ssh",
    file="modules/sg/main.tf",
    start_line=3,
    end_line=3,
    guidance_url="https://avd.aquasec.com/misconfig/avd-aws-0107",
)
UNENCRYPTED_EBS = Finding(
    rule_id="AVD-AWS-0026",
    title="EBS volumes must be encrypted",
    severity=Severity.HIGH,
    resource="aws_ebs_volume.data",
    file="storage.tf",
    start_line=1,
    end_line=4,
)
NO_LOGGING = Finding(
    rule_id="AVD-AWS-0089",
    title="Bucket has logging disabled",
    severity=Severity.LOW,
    resource="aws_s3_bucket.public",
    file="main.tf",
    start_line=8,
    end_line=10,
    guidance_url="javascript:alert(1)",
)
INSECURE = (PUBLIC_BUCKET, OPEN_SSH, UNENCRYPTED_EBS, NO_LOGGING)


def report(
    found: tuple[Finding, ...] = INSECURE, *, dropped: dict[str, int] | None = None
) -> ScanReport:
    """A report of ``found`` (most severe first, as the scanner keeps them); ``dropped``:
    findings per severity the scanner reported beyond those kept (``truncated``)."""
    kept = tuple(sorted(found, key=lambda f: -f.severity.rank))
    counts = findings.count(kept)
    for severity, more in (dropped or {}).items():
        counts[severity] += more
    return ScanReport(
        scanner="trivy",
        scanner_version="0.76.0",
        rules_version="embedded checks of trivy 0.76.0",
        scanned_at=SCANNED_AT,
        status=ScanStatus.FINDINGS if kept else ScanStatus.PASSED,
        findings=kept,
        counts=counts,
        truncated=bool(dropped),
    )


def failed_report(error: str = "the scan took longer than 60 s") -> ScanReport:
    return ScanReport(
        scanner="trivy",
        scanner_version="0.76.0",
        rules_version="embedded checks of trivy 0.76.0",
        scanned_at=SCANNED_AT,
        status=ScanStatus.FAILED,
        error=error,
    )


def version_item(module_id: str, version: str) -> ModuleVersionModel:
    found = store.find_version(module_id, semver.parse(version).order_key, consistent=True)
    assert found is not None, f"no version {version} of {module_id}"
    return found


def record_scan(
    module_id: str, version: str, scanned: ScanReport, *, store_report: bool = True
) -> ModuleVersionModel:
    """Store ``scanned`` as the scan function does: the report at the version's
    ``findings_key`` (unless ``store_report`` is False: a report that went missing), its
    summary on the version and in its module entry."""
    item = version_item(module_id, version)
    if store_report:
        key = UploadKey(module_id, item.version, item.id).findings_key
        objects.put(key, findings.encode(scanned), "application/gzip")
    summary = scanned.summary()
    item.update(actions=[ModuleVersionModel.scan_summary.set(summary)])
    module = ModuleModel(item.organization, item.module_key)
    entry = ModuleModel.version_statuses[item.version]
    module.update(actions=[entry["scan"].set(findings.entry_summary(summary))])
    return item


def quarantine_by_scan(version: ModuleVersionModel, reasons: list[str]) -> bool:
    """Quarantine ``version`` (as read) as the scan worker does when the policy holds it back:
    ``writes.record_scan`` with the reasons; False when the version changed since it was read."""
    moment = now()
    found = ScanReport("trivy", "0.76.0", "rules", SCANNED_AT, ScanStatus.FINDINGS)
    event = audit_events.of_version(None, version, audit_events.QUARANTINED, {"reasons": reasons})
    return writes.record_scan(
        version,
        found.summary(),
        moment,
        event,
        status=VersionStatus.QUARANTINED,
        quarantine={"reasons": list(reasons), "quarantined-at": iso(moment)},
    )
