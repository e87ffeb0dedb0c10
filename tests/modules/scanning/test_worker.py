"""The scan job: an accepted module version's archive scanned, its report stored beside it,
its summary recorded, and a version held by its organization's policy published or
quarantined (``modules.scanning.worker``, from ingest's request to the recorded outcome).

The scanner here is a small ``Scanner`` of the tests' own (``helpers.FakeScanner``); the real
one, Trivy, is tested in tests/trust and end to end in tests/e2e/test_scan_e2e.py."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from chalicelib.artifacts import objects
from chalicelib.core.data.aws import client
from chalicelib.core.settings import get_settings
from chalicelib.modules.ingest.handler import handle_s3_record
from chalicelib.modules.scanning import worker
from chalicelib.trust.findings import ScanReport, ScanStatus, Severity
from chalicelib.trust.policy import Policy
from chalicelib.trust.scanner import ScanLimits
from tests.conftest import Api, tar_gz
from tests.modules.helpers import MAIN_TF, ORG, V1
from tests.modules.scanning.helpers import (
    README,
    FakeScanner,
    entry,
    finding,
    holding,
    ingested,
    keys_of,
    scan_jobs,
    served,
    stored_report,
    version_item,
)


def test_an_accepted_version_is_scanned_and_its_summary_recorded(acme: Api):
    files = {"main.tf": MAIN_TF, "README.md": README, "net/sub.tf": 'locals { a = "b" }\n'}
    job = ingested(acme, "1.0.0", files, "ok")
    scanner = FakeScanner((finding(Severity.HIGH), finding(Severity.LOW, "FAKE-002")))

    assert worker.run(job, lambda: scanner) == "findings"

    # The scanner saw the module's files, as regular files in a directory of their own...
    assert scanner.seen == [{path: text.encode() for path, text in files.items()}]
    assert scanner.limits == [worker.scan_limits()]
    assert not scanner.directories[0].exists()  # ...removed after the scan
    # The report beside the archive, its summary on the version and in its module entry.
    report = stored_report()
    assert [f.rule_id for f in report.findings] == ["FAKE-001", "FAKE-002"]
    item = version_item()
    assert item.scan_summary == report.summary()
    assert item.scan_summary["status"] == "findings" and item.scan_summary["counts"]["high"] == 1
    assert entry() == {
        **entry(),
        "status": "ok",
        "scan": {"status": "findings", "counts": {"high": 1, "low": 1}},
    }
    # Without a policy that holds versions, it was served from the start and still is.
    assert item.status == "ok" and item.quarantine is None
    assert served(acme) == ["1.0.0"]


def test_a_redelivered_job_writes_nothing_new(acme: Api):
    job = ingested(acme, "1.0.0", {"main.tf": MAIN_TF}, "ok")
    assert worker.run(job, lambda: FakeScanner((finding(Severity.HIGH),))) == "findings"
    first, report = version_item().scan_summary, stored_report()

    again = FakeScanner()
    assert worker.run(job, lambda: again) == "already-scanned"
    assert again.seen == []  # not scanned again: the first result stands
    assert version_item().scan_summary == first and stored_report() == report


@pytest.mark.parametrize(
    ("found", "status", "reasons"),
    [
        ((finding(Severity.LOW),), "ok", None),
        (
            (finding(Severity.CRITICAL, "FAKE-9"), finding(Severity.HIGH), finding(Severity.LOW)),
            "quarantined",
            ["2 finding(s) at or above high (FAKE-001, FAKE-9)"],
        ),
    ],
)
def test_a_held_version_is_published_or_quarantined_by_its_scan(
    acme: Api, monkeypatch: pytest.MonkeyPatch, found, status, reasons
):
    holding(monkeypatch, Policy(block_severity="high"))
    job = ingested(acme, "1.0.0", {"main.tf": MAIN_TF, "README.md": README}, "held")

    # Held: archive and metadata stored, not served, no upload link any more.
    item = version_item()
    assert item.status == "reg_ingressing" and item.scan_summary is None
    assert objects.exists(item.archive_key) and objects.exists(item.metadata_key)
    assert served(acme) == []
    assert acme.get(f"{V1}/acme/vpc/aws/1.0.0/download").status == 404
    assert not item.awaits_upload

    assert worker.run(job, lambda: FakeScanner(found)) == "findings"

    item = version_item()
    assert item.status == status and entry()["status"] == status
    assert entry()["scan"]["status"] == "findings"
    if reasons is None:
        assert item.quarantine is None
        assert served(acme) == ["1.0.0"]
        assert acme.get(f"{V1}/acme/vpc/aws/1.0.0/download").status == 204
    else:
        assert item.quarantine["reasons"] == reasons and item.quarantine["quarantined-at"]
        assert served(acme) == []
        assert acme.get(f"{V1}/acme/vpc/aws/1.0.0/download").status == 404


def test_a_held_version_without_the_readme_its_policy_requires_is_quarantined(
    acme: Api, monkeypatch: pytest.MonkeyPatch
):
    holding(monkeypatch, Policy(require_readme=True))
    job = ingested(acme, "1.0.0", {"main.tf": MAIN_TF}, "held")
    assert worker.run(job, lambda: FakeScanner()) == "passed"
    assert version_item().status == "quarantined"
    assert version_item().quarantine["reasons"] == [
        "the policy requires a README and the version has none"
    ]


def missing_scanner() -> FakeScanner:
    raise ImportError("no scanner here")


@pytest.mark.parametrize(
    ("factory", "error"),
    [
        (lambda: FakeScanner(broken=RuntimeError("boom")), "the scanner failed (RuntimeError)"),
        (missing_scanner, "the scanner could not be started (ImportError)"),
    ],
    ids=["scanner-broke", "scanner-missing"],
)
@pytest.mark.parametrize("policy", [Policy(), Policy(block_severity="medium")])
def test_a_scan_that_fails_is_recorded_as_failed_never_left_pending(
    acme: Api, monkeypatch: pytest.MonkeyPatch, factory, error, policy
):
    holding(monkeypatch, policy)
    held = policy.holds_versions
    job = ingested(acme, "1.0.0", {"main.tf": MAIN_TF}, "held" if held else "ok")

    assert worker.run(job, factory) == "failed"

    item = version_item()
    assert item.scan_summary["status"] == "failed" and error in item.scan_summary["error"]
    assert stored_report().status == ScanStatus.FAILED
    assert entry()["scan"] == {"status": "failed"}
    # A failed scan under a blocking policy holds the version back: nothing says it is clean.
    assert item.status == ("quarantined" if held else "ok")
    if held:
        assert item.quarantine["reasons"][0].startswith("the scan failed: ")


def test_a_job_that_never_finished_is_recorded_failed_on_its_last_attempt(acme: Api):
    job = ingested(acme, "1.0.0", {"main.tf": MAIN_TF}, "ok")
    scanner = FakeScanner()
    assert worker.run(job, lambda: scanner, attempt=worker.MAX_ATTEMPTS) == "failed"
    assert scanner.seen == []  # the scan that crashed the function is not run again
    assert (
        f"did not finish in {worker.MAX_ATTEMPTS} attempts" in version_item().scan_summary["error"]
    )


def test_an_archive_over_the_limit_now_is_a_failed_scan(acme: Api, monkeypatch: pytest.MonkeyPatch):
    job = ingested(acme, "1.0.0", {"main.tf": MAIN_TF}, "ok")
    monkeypatch.setenv("REGISTRY_MAX_ARCHIVE_BYTES", "64")
    get_settings.cache_clear()
    scanner = FakeScanner()
    assert worker.run(job, lambda: scanner) == "failed"
    assert scanner.seen == []
    assert version_item().scan_summary["error"] == "the archive is over the limit of 64 bytes"


def test_links_reach_the_scanner_as_plain_copies(acme: Api):
    """ingest's reader keeps a link that stays inside the module as a copy of its target:
    the worker writes it as a file, never as a link."""
    import io
    import tarfile

    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
        data = MAIN_TF.encode()
        info = tarfile.TarInfo("main.tf")
        info.size = len(data)
        archive.addfile(info, io.BytesIO(data))
        link = tarfile.TarInfo("copy.tf")
        link.type, link.linkname = tarfile.SYMTYPE, "main.tf"
        archive.addfile(link)
    job = ingested(acme, "1.0.0", buffer.getvalue(), "ok")
    scanner = FakeScanner()
    assert worker.run(job, lambda: scanner) == "passed"
    assert scanner.seen == [{"main.tf": MAIN_TF.encode(), "copy.tf": MAIN_TF.encode()}]


def test_a_job_for_a_version_gone_or_recreated_writes_nothing(acme: Api):
    job = ingested(acme, "1.0.0", {"main.tf": MAIN_TF}, "ok")
    scanner = FakeScanner()
    assert worker.run({**job, "version_id": "modver-other"}, lambda: scanner) == "stale"
    assert worker.run({**job, "version": "not-semver"}, lambda: scanner) == "stale"
    assert acme.delete(f"{ORG}/private/acme/vpc/aws/1.0.0").status == 204
    assert worker.run(job, lambda: scanner) == "stale"
    assert scanner.seen == []
    assert not objects.exists(keys_of("1.0.0").findings_key)


def test_a_redelivered_upload_event_asks_again_for_a_pending_scan(
    acme: Api, monkeypatch: pytest.MonkeyPatch
):
    """The job is sent after the version is written: when that send is lost, the upload
    event's next delivery (SQS retries it, or a retry re-sends it) asks again, and a late
    re-upload of a held version is dropped, its accepted archive kept."""
    holding(monkeypatch, Policy(block_severity="high"))
    job = ingested(acme, "1.0.0", {"main.tf": MAIN_TF}, "held")
    key = keys_of("1.0.0")
    archive = objects.exists(version_item().archive_key)
    client("s3").put_object(
        Bucket=get_settings().bucket, Key=key.key, Body=tar_gz({"main.tf": "# other\n"})
    )

    assert handle_s3_record({"s3": {"object": {"key": key.key}}}) == "already-ok"
    assert scan_jobs() == [job]
    assert archive and not objects.exists(key.key)  # the re-upload dropped
    assert worker.run(job, lambda: FakeScanner()) == "passed"
    assert version_item().status == "ok"

    # Scanned: a redelivery asks for nothing more.
    assert handle_s3_record({"s3": {"object": {"key": key.key}}}) == "already-ok"
    assert scan_jobs() == []


def test_unpack_writes_only_new_files_inside_its_directory(tmp_path: Path):
    root = tmp_path / "module"
    root.mkdir()
    worker.unpack({"main.tf": b"a", "modules/x/main.tf": b"b"}, root)
    assert (root / "modules/x/main.tf").read_bytes() == b"b"

    for path in ("../escape.tf", "/abs.tf", "modules/../../escape.tf"):
        with pytest.raises(OSError):
            worker.unpack({path: b"x"}, root)
    assert not (tmp_path / "escape.tf").exists()
    # Never through a link, never over a file.
    os.symlink(tmp_path / "outside.tf", root / "link.tf")
    with pytest.raises(OSError):
        worker.unpack({"link.tf": b"x"}, root)
    with pytest.raises(OSError):
        worker.unpack({"main.tf": b"x"}, root)
    assert not (tmp_path / "outside.tf").exists()
    assert (root / "main.tf").read_bytes() == b"a"


def test_deleting_a_scanned_version_deletes_its_report(acme: Api):
    for version in ("1.0.0", "1.1.0"):
        job = ingested(acme, version, {"main.tf": MAIN_TF}, "ok")
        assert worker.run(job, lambda: FakeScanner((finding(Severity.LOW),))) == "findings"
        assert objects.exists(keys_of(version).findings_key)
    assert acme.delete(f"{ORG}/private/acme/vpc/aws/1.0.0").status == 204
    assert not objects.exists(keys_of("1.0.0").findings_key)
    assert objects.exists(keys_of("1.1.0").findings_key)
    assert acme.delete(f"{ORG}/private/acme/vpc/aws").status == 204  # the module, and all
    assert not objects.exists(keys_of("1.1.0").findings_key)


def test_a_version_deleted_during_its_scan_keeps_no_report(acme: Api):
    job = ingested(acme, "1.0.0", {"main.tf": MAIN_TF}, "ok")

    class DeletedMeanwhile(FakeScanner):
        def scan(self, directory: Path, limits: ScanLimits) -> ScanReport:
            assert acme.delete(f"{ORG}/private/acme/vpc/aws/1.0.0").status == 204
            return super().scan(directory, limits)

    assert worker.run(job, DeletedMeanwhile) == "stale"
    assert not objects.exists(keys_of("1.0.0").findings_key)


def test_a_scanners_failure_is_kept_short_on_the_version(acme: Api):
    """A scanner's own failed report (over its time, say) is recorded as it says, its reason
    bounded: it is kept on the version item."""
    from dataclasses import replace

    job = ingested(acme, "1.0.0", {"main.tf": MAIN_TF}, "ok")

    class TalkativeScanner(FakeScanner):
        def scan(self, directory: Path, limits: ScanLimits) -> ScanReport:
            report = super().scan(directory, limits)
            return replace(report, status=ScanStatus.FAILED, error="x" * 5000)

    assert worker.run(job, TalkativeScanner) == "failed"
    error = version_item().scan_summary["error"]
    assert len(error) == 500 and error.endswith("\u2026")


def test_a_job_missing_its_version_is_ignored(acme: Api):
    assert worker.run({"kind": "module-scan", "module_id": "mod-1"}, FakeScanner) == "ignored"


def test_the_scan_job_makes_the_sbom_and_the_signed_provenance(acme: Api):
    job = ingested(acme, "1.0.0", {"main.tf": MAIN_TF}, "ok")
    assert worker.run(job, FakeScanner) == "passed"
    made = keys_of("1.0.0")
    assert objects.exists(made.sbom_key) and objects.exists(made.provenance_key)


def test_a_signing_failure_is_retried_but_never_leaves_the_scan_unrecorded(
    acme: Api, monkeypatch: pytest.MonkeyPatch
):
    from chalicelib.modules.scanning import attest

    def kms_down(*args: object, **kwargs: object) -> None:
        raise ConnectionError("KMS is unreachable")

    monkeypatch.setattr(attest, "attest", kms_down)
    job = ingested(acme, "1.0.0", {"main.tf": MAIN_TF}, "ok")
    with pytest.raises(ConnectionError):
        worker.run(job, FakeScanner)  # SQS delivers the job again
    assert version_item().scan_summary is None
    # On the job's last delivery the scan is recorded without them.
    assert worker.run(job, FakeScanner, attempt=worker.MAX_ATTEMPTS) == "failed"
    assert version_item().scan_summary is not None
    assert not objects.exists(keys_of("1.0.0").provenance_key)
