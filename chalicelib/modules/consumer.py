"""The ingest queue's consumer: each message is an S3 upload event (``ingest``) or a VCS
publishing job (``publishing.worker``). Both sub-rooms are imported on first use, so a
cold start pays only for the kind of message it receives."""

from __future__ import annotations

import json
import logging

log = logging.getLogger("registry.consumer")


def handle_sqs_body(body: str) -> None:
    """An S3 event notification (or S3's one-off test event), or a job (``registry.queue``)."""
    event = json.loads(body)
    if "kind" in event:
        from chalicelib.modules.publishing import worker

        log.info("job %s: %s", event.get("kind"), worker.run(event))
        return
    from chalicelib.modules.ingest.handler import handle_s3_record

    for record in event.get("Records", []):
        if record.get("eventSource") == "aws:s3" and record["eventName"].startswith(
            "ObjectCreated"
        ):
            handle_s3_record(record)
