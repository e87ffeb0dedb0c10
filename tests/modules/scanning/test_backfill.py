"""Versions without a scan (ingested before scanning, or whose job was dead-lettered) get
one from the backfill, once."""

from __future__ import annotations

from chalicelib.modules import store
from chalicelib.modules.scanning import worker
from chalicelib.modules.scanning.backfill import request_missing_scans
from tests.conftest import Api
from tests.modules.helpers import MAIN_TF
from tests.modules.scanning.helpers import FakeScanner, ingested, scan_jobs, upload, version_item


def test_versions_without_a_scan_are_queued_once(acme: Api) -> None:
    job = ingested(acme, "1.0.0", {"main.tf": MAIN_TF}, "ok")  # its job taken: lost
    assert request_missing_scans() == {"queued": 1}
    assert scan_jobs() == [job]

    assert worker.run(job, FakeScanner) == "passed"
    assert version_item().scan_summary is not None
    (module,) = store.modules_of("acme")
    assert "scan" in module.statuses()["1.0.0"]
    assert request_missing_scans() == {}
    assert scan_jobs() == []


def test_a_version_not_accepted_is_not_queued(acme: Api) -> None:
    result, _ = upload(acme, "1.0.0", {"main.tf": "resource {"})
    assert result == "failed"
    assert request_missing_scans() == {}
    assert scan_jobs() == []
