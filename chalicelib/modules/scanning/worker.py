"""The scan of one module version: the scan function's job (``module-scan``, from the scan
queue; ``entry.scan`` runs it, and the local stack's poller).

``run`` takes the job through these steps, each safe to run twice (SQS delivers at least
once):

1. find the version the job names (the same id; accepted: its archive is stored); a version
   deleted or re-created meanwhile, or already scanned, ends the job with nothing written;
2. read its archive under ``REGISTRY_MAX_ARCHIVE_BYTES`` and unpack it with ingest's own
   reader (``ingest.archive.read_archive``: the same bounds and checks, and only the files
   Terraform reads and the READMEs) into a fresh temporary directory, each file written
   anew inside it (no link, nothing outside);
3. run the scanner (``Scanner``: Trivy by default, ``trust.trivy``) within ``ScanLimits``;
4. store the report beside the archive (``findings_key``, ``trust.findings.encode``);
5. record its summary on the version and in its module entry (``writes.record_scan``, only
   while the version is as read and unscanned: a second delivery writes nothing), with its
   audit event (``scanned``, or ``quarantined``; by the registry, ``auth.type`` System). A version
   held for its scan (``reg_ingressing`` with its archive stored: its organization's policy
   held it at ingest) leaves hold here: ``quarantined`` with the policy's reasons
   (``Policy.reasons``), else ``ok`` (published, the protocol's list refreshed).

A scan that fails (the scanner broke or could not start, the archive could not be read or
unpacked, or the job failed ``MAX_ATTEMPTS`` deliveries: a crash, a timeout or memory) is
recorded as a ``failed`` scan with its reason, never left pending: a held version then goes
where the policy sends a failed scan. S3 or DynamoDB failing propagates: the job is
delivered again.
"""

from __future__ import annotations

import logging
import os
import tempfile
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from chalicelib.artifacts import objects, semver
from chalicelib.artifacts.pipeline import MAX_REASON
from chalicelib.artifacts.statuses import VersionStatus
from chalicelib.core import observe
from chalicelib.core.data.ids import iso, now
from chalicelib.core.settings import get_settings
from chalicelib.modules import keys, store, writes
from chalicelib.modules.audit import events as audit_events
from chalicelib.modules.store import ModuleVersionModel
from chalicelib.trust import findings
from chalicelib.trust.findings import ScanReport, ScanStatus
from chalicelib.trust.policy import policy_of
from chalicelib.trust.scanner import ScanLimits, Scanner

log = logging.getLogger("registry.scan")
METRIC = "Scan"  # counted by Status (passed, findings, failed)
# The delivery on which a job that never finished is recorded as failed without scanning
# again (the scan queue's maxReceiveCount is larger: the deliveries left cover S3 or
# DynamoDB failing to record it).
MAX_ATTEMPTS = 3

ScannerFactory = Callable[[], Scanner]


def default_scanner() -> Scanner:
    """Trivy (``trust.trivy``), loaded with the first scan: no other function imports it."""
    from chalicelib.trust.trivy import TrivyScanner

    scanner: Scanner = TrivyScanner()
    return scanner


def scan_limits() -> ScanLimits:
    """The scan's bounds (time, the scanner's memory, findings kept): the settings'."""
    return ScanLimits.from_settings()


def run(job: dict[str, Any], scanner: ScannerFactory | None = None, attempt: int = 1) -> str:
    """Scan the version ``job`` names (``module_id``, ``version``, ``version_id``) with
    ``scanner``'s (``default_scanner``'s); returns what happened, for the log. ``attempt``:
    which delivery of the job this is."""
    try:
        upload = keys.UploadKey(
            *(str(job[name]) for name in ("module_id", "version", "version_id"))
        )
    except KeyError as missing:
        log.warning("ignoring a scan job without %s", missing)
        return "ignored"
    version = _find_version(upload)
    if version is None or not version.accepted or version.archive_key is None:
        return _report(upload, None, "stale")  # deleted or re-created meanwhile
    if version.scan_summary is not None:
        return _report(upload, version, "already-scanned")
    if attempt >= MAX_ATTEMPTS:
        report = failed(
            "unknown", f"the scan did not finish in {attempt} attempts (crash, time or memory)"
        )
    else:
        try:
            report = _scan(version, scanner or default_scanner)
        except objects.Gone:
            return _report(upload, version, "stale")  # its archive went: it is being deleted
    objects.put(upload.findings_key, findings.encode(report), "application/gzip")
    try:
        metadata = objects.get_metadata(version.metadata_key) if version.metadata_key else {}
    except objects.Gone:
        metadata = {}  # the version is being deleted: recording its scan finds it gone
    if metadata:
        _attest(version, metadata, last=attempt >= MAX_ATTEMPTS)
    held = version.status == VersionStatus.INGRESSING
    moment = now()
    meta: dict[str, Any] = {
        "scan-status": str(report.status),
        "scanner": report.scanner,
        **{f"findings-{name.lower()}": count for name, count in report.counts.items()},
        **({"error": report.error} if report.error else {}),
    }
    if not held:
        scanned = audit_events.of_version(None, version, audit_events.SCANNED, meta, moment=moment)
        recorded = writes.record_scan(version, report.summary(), moment, scanned)
        decision = "unchanged"
    else:
        reasons = policy_of(version.organization).reasons(report, _has_readme(metadata))
        status = VersionStatus.QUARANTINED if reasons else VersionStatus.OK
        quarantine = {"reasons": reasons, "quarantined-at": iso(moment)} if reasons else None
        action = audit_events.QUARANTINED if reasons else audit_events.SCANNED
        meta = {**meta, "status": str(status), **({"reasons": reasons} if reasons else {})}
        scanned = audit_events.of_version(None, version, action, meta, moment=moment)
        recorded = writes.record_scan(
            version, report.summary(), moment, scanned, status=status, quarantine=quarantine
        )
        decision = str(status)
    if not recorded:  # deleted meanwhile (its report with it), or another delivery recorded it
        if _find_version(upload) is None:
            objects.delete_objects([upload.findings_key])
        return _report(upload, version, "stale")
    return _report(upload, version, str(report.status), report, decision)


def _attest(version: ModuleVersionModel, metadata: dict[str, Any], *, last: bool) -> None:
    """The version's SBOM and signed provenance (``attest``), made before its scan is
    recorded: a failure of KMS or S3 propagates and the job is delivered again, scan and
    all. A statement that can never be signed (too long for KMS), or any failure on the
    job's last delivery, is logged and leaves the version without them (their routes say
    so): the scan is still recorded, never stuck."""
    from chalicelib.modules.scanning.attest import attest

    try:
        attest(version, metadata)
    except Exception as exc:
        if not (last or isinstance(exc, ValueError)):
            raise
        log.warning("version %s has no SBOM or provenance: %s: %s", version.id,
                    type(exc).__name__, str(exc)[:300])  # fmt: skip


def failed(scanner: str, reason: str) -> ScanReport:
    """A failed scan's report, with its reason (bounded)."""
    if len(reason) > MAX_REASON:
        reason = reason[: MAX_REASON - 1] + "\u2026"
    return ScanReport(
        scanner=scanner,
        scanner_version="",
        rules_version="",
        scanned_at=iso(now()),
        status=ScanStatus.FAILED,
        counts=findings.count(()),
        error=reason,
    )


def _find_version(upload: keys.UploadKey) -> ModuleVersionModel | None:
    try:
        order_key = semver.parse(upload.version).order_key
    except semver.InvalidVersion:
        return None
    version = store.find_version(upload.module_id, order_key, consistent=True)
    return version if version is not None and version.id == upload.version_id else None


def _scan(version: ModuleVersionModel, make_scanner: ScannerFactory) -> ScanReport:
    """The archive read, unpacked and scanned; a failure of any of it is a failed report.
    ``objects.Gone``: the archive is not there."""
    from chalicelib.modules.ingest.archive import ArchiveError, read_archive

    assert version.archive_key is not None
    settings = get_settings()
    try:
        with objects.fetch(version.archive_key, settings.max_archive_bytes) as archive:
            contents = read_archive(
                archive.file,
                max_compressed=settings.max_archive_bytes,
                max_unpacked=settings.max_unpacked_bytes,
            )
    except objects.TooLarge as large:
        return failed("unknown", f"the archive is over the limit of {large.limit} bytes")
    except ArchiveError as refused:
        return failed("unknown", f"the archive could not be read: {refused.message}")
    try:
        scanner = make_scanner()
    except Exception as exc:  # noqa: BLE001 - a scanner that cannot start is a failed scan
        log.exception("the scanner could not be started")
        return failed("unknown", f"the scanner could not be started ({type(exc).__name__})")
    with tempfile.TemporaryDirectory(prefix="scan-") as directory:
        root = Path(directory)
        try:
            unpack(contents.files, root)
        except OSError as exc:
            return failed(scanner.name, f"the archive could not be unpacked ({exc.strerror})")
        contents.files.clear()  # on disk now: the scanner's memory is what is left
        try:
            report = scanner.scan(root, scan_limits())
        except Exception as exc:  # noqa: BLE001 - the scanner broke: a failed scan, logged
            log.exception("the scanner failed")
            return failed(scanner.name, f"the scanner failed ({type(exc).__name__})")
    if len(report.error) > MAX_REASON:  # it is kept on the version item
        report = replace(report, error=report.error[: MAX_REASON - 1] + "\u2026")
    return report


def unpack(files: dict[str, bytes], root: Path) -> None:
    """Write each file (a clean relative path, ``read_archive``'s) under ``root``, an empty
    directory: created anew (``O_EXCL``: never through a link or over a file), and refused
    (``OSError``) if its path would leave ``root``."""
    base = root.resolve()
    for path, data in files.items():
        target = (base / path).resolve()
        if not target.is_relative_to(base) or target == base:
            raise OSError(0, f"{path!r} is outside the module")
        target.parent.mkdir(parents=True, exist_ok=True)
        descriptor = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        with os.fdopen(descriptor, "wb") as file:
            file.write(data)


def _has_readme(metadata: dict[str, Any]) -> bool:
    """Whether the version's parsed metadata has a README (the ingest's rule of what one is)."""
    return bool((metadata.get("root") or {}).get("readme"))


def _report(
    upload: keys.UploadKey,
    version: ModuleVersionModel | None,
    outcome: str,
    report: ScanReport | None = None,
    decision: str = "",
) -> str:
    """One log line about the job (and a count by Status for a recorded scan)."""
    fields: dict[str, Any] = {
        "outcome": outcome,
        "module_id": upload.module_id,
        "version": upload.version,
    }
    if version is not None:
        fields["organization"] = version.organization
    metrics: list[observe.Metric] = []
    message = f"scan of version {upload.version_id}: {outcome}"
    if report is not None:
        fields.update(counts=report.counts, decision=decision)
        if report.error:
            fields["reason"] = report.error
            message += f": {report.error}"
        message += f" (version {decision})"
        metrics.append(observe.Metric(METRIC, dimensions={"Status": str(report.status)}))
    observe.emit(log, logging.INFO, message, fields, metrics)
    return outcome
