"""The scan job: an accepted module version's archive scanned, its report stored beside it,
its summary recorded, and a version held by its organization's policy published or
quarantined (``modules.scanning.worker``, from ingest's request to the recorded outcome).

The scanner here is a small ``Scanner`` of the tests' own (the real one, Trivy, is tested in
tests/trust and end to end in tests/e2e/test_scan_e2e.py): what it saw is what the worker
unpacked, and what it reports is what the worker must record."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from chalicelib.artifacts import objects, semver
from chalicelib.core.data.aws import client
from chalicelib.core.settings import get_settings
from chalicelib.modules import keys, store
from chalicelib.modules.ingest.handler import handle_s3_record
from chalicelib.modules.scanning import worker
from chalicelib.trust import findings
from chalicelib.trust.findings import Finding, ScanReport, ScanStatus, Severity
from chalicelib.trust.policy import Policy
from chalicelib.trust.scanner import ScanLimits
from tests.conftest import Api, make_org, tar_gz
from tests.modules.helpers import MAIN_TF, ORG, V1, create_module, create_version, upload_key

README = "# vpc\n\nA VPC.\n"


class FakeScanner:
    """Reports ``found`` (or raises ``broken``) and keeps what each scan saw: every file
    under the directory (its bytes; a link would show as such), and the limits."""

    name = "fake"

    def __init__(self, found: tuple[Finding, ...] = (), broken: Exception | None = None):
        self.found = found
        self.broken = broken
        self.seen: list[dict[str, bytes | str]] = []
        self.directories: list[Path] = []
        self.limits: list[ScanLimits] = []

    def scan(self, directory: Path, limits: ScanLimits) -> ScanReport:
        self.directories.append(directory)
        self.limits.append(limits)
        self.seen.append(
            {
                str(p.relative_to(directory)): ("link" if p.is_symlink() else p.read_bytes())
                for p in directory.rglob("*")
                if not p.is_dir()
            }
        )
        if self.broken is not None:
            raise self.broken
        return ScanReport(
            scanner="fake",
            scanner_version="1.0",
            rules_version="fake rules 1",
            scanned_at="2026-01-02T03:04:05.000Z",
            status=ScanStatus.FINDINGS if self.found else ScanStatus.PASSED,
            findings=self.found,
            counts=findings.count(self.found),
        )


def finding(severity: Severity, rule: str = "FAKE-001") -> Finding:
    return Finding(rule, f"{rule} title", severity, "aws_s3_bucket.this", "main.tf", 1, 3)


@pytest.fixture
def acme(api: Api) -> Api:
    make_org(api, "acme")
    create_module(api)
    return api


def holding(monkeypatch: pytest.MonkeyPatch, policy: Policy) -> None:
    """The organization's publishing policy, where ingest and the worker ask for it."""
    from chalicelib.modules.ingest import handler

    monkeypatch.setattr(handler, "policy_of", lambda org: policy)
    monkeypatch.setattr(worker, "policy_of", lambda org: policy)


def scan_jobs() -> list[dict]:
    """The jobs on the scan queue (taken off it)."""
    sqs = client("sqs")
    url = sqs.get_queue_url(QueueName=get_settings().scan_queue)["QueueUrl"]
    jobs = []
    while messages := sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10).get("Messages"):
        for message in messages:
            jobs.append(json.loads(message["Body"]))
            sqs.delete_message(QueueUrl=url, ReceiptHandle=message["ReceiptHandle"])
    return jobs


Files = dict[str, str | bytes] | bytes


def upload(api: Api, version: str, files: Files) -> tuple[str, str]:
    """The version created and its archive ingested: (the ingest's outcome, its upload key)."""
    reply = create_version(api, version)
    assert reply.status == 201, reply.json
    key = upload_key(reply)
    body = files if isinstance(files, bytes) else tar_gz(files)
    client("s3").put_object(Bucket=get_settings().bucket, Key=key, Body=body)
    return handle_s3_record({"s3": {"object": {"key": key}}}), key


def version_item(version: str = "1.0.0"):
    order_key = semver.parse(version).order_key
    found = store.find_version(keys_of(version).module_id, order_key, consistent=True)
    assert found is not None
    return found


_KEYS: dict[str, keys.UploadKey] = {}


def keys_of(version: str) -> keys.UploadKey:
    return _KEYS[version]


def ingested(api: Api, version: str, files: Files, outcome: str) -> dict:
    """Upload and ingest; the one scan job ingest asked for."""
    result, key = upload(api, version, files)
    assert result == outcome
    parsed = keys.UploadKey.parse(key)
    assert parsed is not None
    _KEYS[version] = parsed
    (job,) = scan_jobs()
    assert job == {
        "kind": "module-scan",
        "module_id": parsed.module_id,
        "version": version,
        "version_id": parsed.version_id,
    }
    return job


def stored_report(version: str = "1.0.0") -> ScanReport:
    with objects.fetch(keys_of(version).findings_key, 10**6) as found:
        return findings.decode(found.read())


def entry(version: str = "1.0.0") -> dict:
    module = store.module_by_id(keys_of(version).module_id)
    assert module is not None
    return module.statuses()[version]


def served(api: Api) -> list[str]:
    reply = api.get(f"{V1}/acme/vpc/aws/versions")
    if reply.status == 404:
        return []
    return [v["version"] for v in reply.json["modules"][0]["versions"]]


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
    assert item.scan == report.summary()
    assert item.scan["status"] == "findings" and item.scan["counts"]["high"] == 1
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
    first, report = version_item().scan, stored_report()

    again = FakeScanner()
    assert worker.run(job, lambda: again) == "already-scanned"
    assert again.seen == []  # not scanned again: the first result stands
    assert version_item().scan == first and stored_report() == report


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
    assert item.status == "reg_ingressing" and item.scan is None
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
    assert item.scan["status"] == "failed" and error in item.scan["error"]
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
    assert f"did not finish in {worker.MAX_ATTEMPTS} attempts" in version_item().scan["error"]


def test_an_archive_over_the_limit_now_is_a_failed_scan(acme: Api, monkeypatch: pytest.MonkeyPatch):
    job = ingested(acme, "1.0.0", {"main.tf": MAIN_TF}, "ok")
    monkeypatch.setenv("REGISTRY_MAX_ARCHIVE_BYTES", "64")
    get_settings.cache_clear()
    scanner = FakeScanner()
    assert worker.run(job, lambda: scanner) == "failed"
    assert scanner.seen == []
    assert version_item().scan["error"] == "the archive is over the limit of 64 bytes"


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
