"""The notifications' functions in the template: a second function on the audit stream
(starting at its newest record, keeping its own place) that may only read configurations
and modules and send to the notifications queue, and the delivery function fed by that
queue (a dead-letter queue and its alarm; each failed message reported on its own)."""

from __future__ import annotations

from chalicelib.entry import notify
from chalicelib.notifications import worker
from infrastructure import resources, template
from infrastructure.groups import ALL_FUNCTIONS, NOTIFY_DELIVERY, NOTIFY_FANOUT
from tests.infrastructure.test_infrastructure import _statements, _tables


def _sends(logical_id: str) -> list[dict]:
    return [s for s in _statements(logical_id) if "sqs:SendMessage" in s["Action"]]


def test_the_fan_out_reads_the_audit_stream_from_its_own_place() -> None:
    merged = template.merge_template()["Resources"]
    function = merged["NotificationsFanOut"]["Properties"]
    assert function["Handler"] == NOTIFY_FANOUT.handler == "chalicelib.entry.notify.stream"
    assert callable(notify.stream)
    (event,) = function["Events"].values()
    assert event["Type"] == "DynamoDB"
    assert event["Properties"]["Stream"] == {"Fn::GetAtt": ["AuditEventsTable", "StreamArn"]}
    assert event["Properties"]["StartingPosition"] == "LATEST"
    # The audit export keeps reading the same stream from its oldest record, its own way.
    export = merged["AuditExport"]["Properties"]["Events"]["Stream"]["Properties"]
    assert export["StartingPosition"] == "TRIM_HORIZON"
    assert _tables("NotificationsFanOut") == {"notification-configurations", "registry-modules"}
    writes = [s for s in _statements("NotificationsFanOut") if "dynamodb:PutItem" in s["Action"]]
    assert writes == []  # it writes no table
    (send,) = _sends("NotificationsFanOut")
    assert send["Resource"] == {"Fn::GetAtt": ["NotifyQueue", "Arn"]}
    assert NOTIFY_FANOUT in ALL_FUNCTIONS


def test_the_delivery_function_takes_its_queue_and_reports_failed_messages() -> None:
    merged = template.merge_template()["Resources"]
    function = merged["NotificationsDelivery"]["Properties"]
    assert function["Handler"] == NOTIFY_DELIVERY.handler == "chalicelib.entry.notify.deliveries"
    assert function["Environment"]["Variables"]["REGISTRY_NOTIFY_QUEUE"] == {
        "Fn::GetAtt": ["NotifyQueue", "QueueName"]
    }
    (event,) = function["Events"].values()
    assert event["Type"] == "SQS"
    assert event["Properties"]["Queue"] == {"Fn::GetAtt": ["NotifyQueue", "Arn"]}
    assert event["Properties"]["FunctionResponseTypes"] == ["ReportBatchItemFailures"]
    queue = merged["NotifyQueue"]["Properties"]
    assert queue["VisibilityTimeout"] >= 6 * function["Timeout"]
    assert queue["RedrivePolicy"]["maxReceiveCount"] == resources.MAX_RECEIVES
    assert queue["RedrivePolicy"]["deadLetterTargetArn"] == {
        "Fn::GetAtt": ["NotifyDeadLetterQueue", "Arn"]
    }
    alarm = merged["NotifyDeadLetterAlarm"]["Properties"]
    assert alarm["Dimensions"][0]["Value"] == {"Fn::GetAtt": ["NotifyDeadLetterQueue", "QueueName"]}
    # A delay SQS accepts (at most 15 minutes) for every retry.
    assert all(0 < delay <= 900 for delay in worker.BACKOFF)
    assert len(worker.BACKOFF) == worker.MAX_ATTEMPTS - 1
    assert _tables("NotificationsDelivery") == {
        "notification-configurations",
        "module-downloads",
        "organizations",
        "teams",
        "users",
        "settings",
    }
    (send,) = _sends("NotificationsDelivery")  # a retry goes back on its own queue
    assert send["Resource"] == {"Fn::GetAtt": ["NotifyQueue", "Arn"]}
