"""The scan function's own entry app (``chalicelib.entry.scan``), called as Lambda calls it:
an SQS event of one record, with which delivery it is."""

from __future__ import annotations

import json

import pytest

from chalicelib.entry import scan
from chalicelib.modules.scanning import worker
from chalicelib.trust.findings import Severity
from tests.conftest import Api
from tests.modules.helpers import MAIN_TF
from tests.modules.scanning.helpers import (
    FakeScanner,
    finding,
    ingested,
    stored_report,
    version_item,
)


def sqs_event(body: str, receives: int) -> dict:
    return {
        "Records": [
            {
                "messageId": "m-1",
                "receiptHandle": "r-1",
                "body": body,
                "attributes": {"ApproximateReceiveCount": str(receives)},
                "eventSource": "aws:sqs",
            }
        ]
    }


def test_the_lambda_handler_runs_the_job_with_the_default_scanner(
    acme: Api,
    monkeypatch: pytest.MonkeyPatch,
):
    job = ingested(acme, "1.0.0", {"main.tf": MAIN_TF}, "ok")
    scanner = FakeScanner((finding(Severity.CRITICAL),))
    monkeypatch.setattr(worker, "default_scanner", lambda: scanner)
    scan.scan(sqs_event(json.dumps(job), 1), None)
    assert len(scanner.seen) == 1
    assert version_item().scan_summary["counts"]["critical"] == 1


def test_the_lambda_handler_records_a_failed_scan_on_the_last_attempt(acme: Api):
    job = ingested(acme, "1.0.0", {"main.tf": MAIN_TF}, "ok")
    scan.scan(sqs_event(json.dumps(job), worker.MAX_ATTEMPTS), None)
    assert stored_report().status == "failed"
    assert "did not finish in 3 attempts" in version_item().scan_summary["error"]


@pytest.mark.parametrize("body", ["not json", "[]", '{"kind": "vcs-sync"}', '{"Records": []}'])
def test_a_message_that_is_no_scan_job_is_dropped_not_retried(body: str):
    scan.scan(sqs_event(body, 1), None)  # no exception: SQS deletes it


def test_a_failing_job_is_left_for_sqs_to_deliver_again(monkeypatch: pytest.MonkeyPatch):
    def broken(job: dict, attempt: int = 1) -> str:
        raise ConnectionError("DynamoDB is down")

    monkeypatch.setattr(worker, "run", broken)
    with pytest.raises(ConnectionError):
        scan.scan(sqs_event(json.dumps({"kind": "module-scan"}), 1), None)


def test_receive_count_defaults_to_the_first_delivery():
    assert scan.receive_count({}) == 1
    assert scan.receive_count({"attributes": {"ApproximateReceiveCount": "x"}}) == 1
    assert scan.receive_count({"attributes": {"ApproximateReceiveCount": "4"}}) == 4
