"""The scan function in the template: its own function, the only one with the scanner's
layer, fed by its own queue (with a dead-letter queue and its alarm), with a role that
reads what it scans and writes only what it makes."""

from __future__ import annotations

from chalicelib.entry import scan
from chalicelib.modules.keys import UploadKey
from chalicelib.modules.scanning import worker
from infrastructure import resources, template
from infrastructure.groups import ALL_FUNCTIONS, SCAN
from tests.infrastructure.test_infrastructure import _allows, _statements, _tables

KEY = UploadKey("mod-1", "1.0.0", "modver-1")


def test_only_the_scan_function_carries_the_scanner():
    merged = template.merge_template()["Resources"]
    layer = merged["ScannerLayer"]
    assert layer["Type"] == "AWS::Serverless::LayerVersion"
    assert layer["Properties"]["ContentUri"] == "./scanner-layer.zip"  # out/, by P1's builder
    with_layers = [
        name for name, r in merged.items() if r.get("Properties", {}).get("Layers") is not None
    ]
    assert with_layers == ["ScanFunction"]
    function = merged["ScanFunction"]["Properties"]
    assert function["Layers"] == [{"Ref": "ScannerLayer"}]
    assert function["Handler"] == "chalicelib.entry.scan.scan" == SCAN.handler
    assert callable(scan.scan)
    assert (function["MemorySize"], function["Timeout"]) == (1536, 120)
    assert function["EphemeralStorage"] == {"Size": 1024}
    assert function["Environment"]["Variables"]["REGISTRY_SCAN_QUEUE"] == {
        "Fn::GetAtt": ["ScanQueue", "QueueName"]
    }
    (event,) = function["Events"].values()
    assert event["Type"] == "SQS"
    assert event["Properties"]["Queue"] == {"Fn::GetAtt": ["ScanQueue", "Arn"]}
    assert event["Properties"]["BatchSize"] == 1
    assert event["Properties"]["ScalingConfig"] == {
        "MaximumConcurrency": {"Ref": "ScanConcurrency"}
    }
    assert SCAN in ALL_FUNCTIONS  # its errors alarm, its cold-start import check


def test_the_scan_queue_retries_then_keeps_what_failed():
    merged = template.merge_template()["Resources"]
    queue = merged["ScanQueue"]["Properties"]
    # Lambda's advice for an SQS source: six times the function's timeout.
    assert queue["VisibilityTimeout"] >= 6 * merged["ScanFunction"]["Properties"]["Timeout"]
    assert queue["RedrivePolicy"]["deadLetterTargetArn"] == {
        "Fn::GetAtt": ["ScanDeadLetterQueue", "Arn"]
    }
    # The worker records a failed scan before the queue gives the job up.
    assert queue["RedrivePolicy"]["maxReceiveCount"] > worker.MAX_ATTEMPTS
    assert queue["RedrivePolicy"]["maxReceiveCount"] == resources.MAX_RECEIVES
    alarm = merged["ScanDeadLetterAlarm"]["Properties"]
    assert alarm["Dimensions"][0]["Value"] == {"Fn::GetAtt": ["ScanDeadLetterQueue", "QueueName"]}


def test_the_scan_role_reads_what_it_scans_and_writes_only_what_it_makes():
    for key in (KEY.archive_key, KEY.metadata_key):
        assert _allows("ScanFunction", "s3:GetObject", key), key
        assert not _allows("ScanFunction", "s3:PutObject", key), key
    for key in (KEY.findings_key, KEY.sbom_key, KEY.provenance_key):
        assert _allows("ScanFunction", "s3:PutObject", key), key
    assert not _allows("ScanFunction", "s3:GetObject", KEY.key)  # no upload
    assert not _allows("ScanFunction", "s3:PutObject", KEY.key)
    assert not any(
        _allows("ScanFunction", "s3:DeleteObject", key)
        for key in (KEY.key, KEY.archive_key, KEY.findings_key)
    )
    assert _tables("ScanFunction") == {
        "registry-modules",
        "registry-module-versions",
        "registry-protocol-list",
        "registry-policies",  # read: does the policy hold the version back?
    }
    sqs = [s for s in _statements("ScanFunction") if any(a.startswith("sqs:") for a in s["Action"])]
    assert sqs == [
        {
            "Effect": "Allow",
            "Action": [
                "sqs:ReceiveMessage",
                "sqs:DeleteMessage",
                "sqs:GetQueueAttributes",
                "sqs:ChangeMessageVisibility",
            ],
            "Resource": {"Fn::GetAtt": ["ScanQueue", "Arn"]},
        }
    ]


def test_only_the_ingest_function_sends_scan_jobs():
    senders = {
        function.logical_id
        for function in ALL_FUNCTIONS
        if any(
            "sqs:SendMessage" in s["Action"]
            and s["Resource"] == {"Fn::GetAtt": ["ScanQueue", "Arn"]}
            for s in _statements(function.logical_id)
        )
    }
    assert senders == {"Ingest"}
