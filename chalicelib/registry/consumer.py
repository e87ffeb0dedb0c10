"""The ingest queue's consumer: each message is an S3 upload event (``ingest``) or a VCS
publishing job (``publishing.worker``). Both sub-rooms are imported on first use, so a
cold start pays only for the kind of message it receives."""

from __future__ import annotations

import json
import logging

from chalicelib.core import observe

log = logging.getLogger("registry.consumer")


def handle_sqs_body(body: str) -> None:
    """One message, in its own scope (its log lines share an id, its DynamoDB calls are
    counted); an exception is logged with its trace (and the message's kind) and raised again,
    so that SQS delivers the message again."""
    observe.configure()
    with observe.scope():
        try:
            _handle(body)
        except Exception:
            kind = _kind(body)
            log.exception("%s message failed; SQS will deliver it again", kind)
            raise


def _kind(body: str) -> str:
    try:
        return str(json.loads(body).get("kind") or "s3 event")
    except (ValueError, AttributeError):
        return "unreadable"


def _handle(body: str) -> None:
    """An S3 event notification (or S3's one-off test event), or a job (``registry.queue``)."""
    event = json.loads(body)
    if "kind" in event:
        from chalicelib.registry.publishing import worker

        worker.run(event)  # logs its outcome
        return
    from chalicelib.registry.ingest.handler import handle_s3_record

    for record in event.get("Records", []):
        if record.get("eventSource") == "aws:s3" and record["eventName"].startswith(
            "ObjectCreated"
        ):
            handle_s3_record(record)
