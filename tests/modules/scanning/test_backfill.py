"""Versions without a scan (ingested before scanning, or whose job was dead-lettered) get
one from the backfill, once."""

from __future__ import annotations

import pytest

from chalicelib.modules import store
from chalicelib.modules.scanning import worker
from chalicelib.modules.scanning.backfill import request_missing_scans
from chalicelib.trust.policy import Policy
from tests.conftest import Api
from tests.modules.helpers import MAIN_TF
from tests.modules.scanning.helpers import (
    FakeScanner,
    holding,
    ingested,
    scan_jobs,
    upload,
    version_item,
)


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


def test_retry_asks_again_for_a_held_versions_lost_scan(
    acme: Api, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A version held for its scan whose job was lost (dead-lettered) is not stuck: the
    module's retry queues its scan (and ingests nothing again), and the scan decides."""
    holding(monkeypatch, Policy(block_severity="high"))
    job = ingested(acme, "1.0.0", {"main.tf": MAIN_TF}, "held")  # its job taken: lost
    (module,) = store.modules_of("acme")
    retried = acme.post(f"/api/v2/registry-modules/{module.id}/actions/retry")
    assert retried.status == 200, retried.json
    assert scan_jobs() == [job]
    assert version_item().status == "reg_ingressing"
    assert worker.run(job, FakeScanner) == "passed"
    assert version_item().status == "ok"
    assert acme.post(f"/api/v2/registry-modules/{module.id}/actions/retry").status == 200
    assert scan_jobs() == []
