"""The Transfers function in the template: its own function (15 minutes, disk for what it
moves) fed by its own queue (visible again only after the function's timeout, a dead-letter
queue and its alarm), the only one with a bundle's grants; the Ingest function keeps none."""

from __future__ import annotations

from typing import Any

from chalicelib.bundles import jobs
from chalicelib.entry import transfers
from infrastructure import resources, template
from infrastructure.groups import ALL_FUNCTIONS, TRANSFERS
from tests.infrastructure.test_infrastructure import _allows, _statements

BUNDLE = "bundles/files/bexp-0123456789abcdef.tar"
JOB = "bundles/jobs/bexp-0123456789abcdef.json"


def _queue_statements(logical_id: str, queue: str) -> list[dict[str, Any]]:
    return [
        s
        for s in _statements(logical_id)
        if any(a.startswith("sqs:") for a in s["Action"])
        and s["Resource"] == {"Fn::GetAtt": [queue, "Arn"]}
    ]


def test_the_transfers_function_runs_the_transfers_queue_one_job_at_a_time():
    merged = template.merge_template()["Resources"]
    function = merged["Transfers"]["Properties"]
    assert function["Handler"] == "chalicelib.entry.transfers.handler" == TRANSFERS.handler
    assert callable(transfers.handler)
    assert function["Timeout"] == 900  # Lambda's most
    assert function["EphemeralStorage"]["Size"] >= 2048
    assert function["Environment"]["Variables"]["REGISTRY_TRANSFERS_QUEUE"] == {
        "Fn::GetAtt": ["TransfersQueue", "QueueName"]
    }
    (event,) = function["Events"].values()
    assert event["Type"] == "SQS"
    assert event["Properties"] == {
        "Queue": {"Fn::GetAtt": ["TransfersQueue", "Arn"]},
        "BatchSize": 1,
    }
    assert TRANSFERS in ALL_FUNCTIONS  # its errors alarm, its cold-start import check


def test_the_transfers_queue_outlasts_a_run_retries_then_keeps_what_failed():
    merged = template.merge_template()["Resources"]
    queue = merged["TransfersQueue"]["Properties"]
    assert queue["VisibilityTimeout"] > 900  # never delivered again while a run may still go
    assert queue["RedrivePolicy"] == {
        "deadLetterTargetArn": {"Fn::GetAtt": ["TransfersDeadLetterQueue", "Arn"]},
        "maxReceiveCount": resources.MAX_RECEIVES,
    }
    alarm = merged["TransfersDeadLetterAlarm"]["Properties"]
    assert alarm["Dimensions"][0]["Value"] == {
        "Fn::GetAtt": ["TransfersDeadLetterQueue", "QueueName"]
    }


def test_only_the_transfers_function_writes_bundles_and_ingest_keeps_no_bundle_grant():
    for action in ("s3:GetObject", "s3:PutObject", "s3:AbortMultipartUpload"):
        assert _allows("Transfers", action, BUNDLE), action
        assert not _allows("Ingest", action, BUNDLE), action
        assert not _allows("Ingest", action, JOB), action
    writers = {f.logical_id for f in ALL_FUNCTIONS if _allows(f.logical_id, "s3:PutObject", BUNDLE)}
    # The admin routes write a job's state and presign a bundle's upload.
    assert writers == {"Transfers", "AdminFunction"}
    assert not _allows("Transfers", "s3:DeleteObject", BUNDLE)
    # It consumes its queue, and only it.
    (consumed,) = _queue_statements("Transfers", "TransfersQueue")[:1]
    assert "sqs:ReceiveMessage" in consumed["Action"]
    assert not _queue_statements("Ingest", "TransfersQueue")
    assert not any(
        "sqs:ReceiveMessage" in s["Action"] for s in _queue_statements("Transfers", "IngestQueue")
    )


def test_who_queues_transfers():
    """The bundle routes (a job), the protocol's cache routes (a fetch past its bound) and
    the function itself (an export queued again); no other."""
    senders = {
        f.logical_id
        for f in ALL_FUNCTIONS
        if any(
            "sqs:SendMessage" in s["Action"]
            for s in _queue_statements(f.logical_id, "TransfersQueue")
        )
    }
    assert senders == {"AdminFunction", "ProtocolFunction", "Transfers"}
    # The admin routes queue nothing on the ingest queue any more.
    assert not any(
        "sqs:SendMessage" in s["Action"] for s in _queue_statements("AdminFunction", "IngestQueue")
    )


class Context:
    """Lambda's context, with the time left that a test says."""

    def __init__(self, remaining_ms: int) -> None:
        self.remaining_ms = remaining_ms

    def get_remaining_time_in_millis(self) -> int:
        return self.remaining_ms


def test_the_budget_stops_a_job_only_when_its_time_is_nearly_spent():
    assert transfers.budget(Context(transfers.RESERVE_MS + 1))(1) is False
    assert transfers.budget(Context(transfers.RESERVE_MS - 1))(1) is True
    assert jobs.never(10_000) is False  # the local stack's: no bound


def test_a_message_that_is_no_transfers_job_is_ignored(aws: Any) -> None:
    for body in ("not json", "[]", '{"kind": "vcs-sync"}', '{"kind": "module-scan"}'):
        assert transfers.handle_body(body) is None


def test_an_export_upload_its_job_never_resumed_is_dropped_after_a_week():
    bucket = template.merge_template()["Resources"]["ArchiveBucket"]["Properties"]
    rules = {rule["Id"]: rule for rule in bucket["LifecycleConfiguration"]["Rules"]}
    rule = rules["abandoned-bundle-exports"]
    assert rule["Prefix"] == "bundles/files/" and rule["Status"] == "Enabled"
    assert rule["AbortIncompleteMultipartUpload"] == {"DaysAfterInitiation": 7}
    assert "ExpirationInDays" not in rule  # finished bundles stay until deleted
