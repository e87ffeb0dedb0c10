"""What the scan tests build on: a small ``Scanner`` of their own (what it saw is what the
worker unpacked; what it reports is what the worker must record), module versions ingested
with their scan job, and reads of what the worker stored."""

from __future__ import annotations

import json
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
from tests.conftest import Api, tar_gz
from tests.modules.helpers import V1, create_version, upload_key

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
