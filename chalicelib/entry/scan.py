"""The scan function: scan jobs from the scan queue (``artifacts.queue.request_scan``), one
at a time (``modules.scanning.worker``).

Its own Lambda, the only one that carries the scanner (Trivy, from its layer): no other
function's package or cold start pays for it. ``infrastructure.template`` makes it whole
(Chalice packages only ``app.py``'s handlers) and subscribes it to the scan queue; the local
stack's poller calls ``handle_body`` as the Lambda does.
"""

from __future__ import annotations

import json
import logging
from typing import Any

from chalice import Chalice

from chalicelib.artifacts import queue
from chalicelib.core import observe
from chalicelib.core.audit import check
from chalicelib.core.settings import get_settings

log = logging.getLogger("registry.consumer")


def handle_body(body: str, receives: int = 1) -> None:
    """One scan job (``receives``: its delivery, SQS's ApproximateReceiveCount) in its own
    scope. An exception is logged with its trace and raised again, so that SQS delivers the
    job again (the worker records a failed scan on its last attempts instead of scanning)."""
    observe.configure()
    with observe.scope() as state:
        try:
            _scan(body, receives)
        finally:
            check.hold(state, "scan job")


def _scan(body: str, receives: int) -> None:
    try:
        job = json.loads(body)
    except ValueError:
        job = None
    if not isinstance(job, dict) or job.get("kind") not in queue.SCAN_KINDS:
        log.warning("ignoring a message of the scan queue that is no scan job")
        return
    try:
        from chalicelib.modules.scanning import worker

        worker.run(job, attempt=receives)  # logs its outcome
    except Exception:
        log.exception("scan job failed; SQS will deliver it again")
        raise


def receive_count(record: dict[str, Any]) -> int:
    """Which delivery of its message an SQS record is (1 when SQS does not say)."""
    try:
        return max(1, int(record.get("attributes", {}).get("ApproximateReceiveCount", 1)))
    except (TypeError, ValueError):
        return 1


def handle_messages(event: Any) -> None:
    """Each SQS message is one scan job; a failure leaves it for SQS to retry."""
    for message in event:
        handle_body(message.body, receive_count(message.to_dict()))


app = Chalice(app_name="registry-scan")
scan = app.on_sqs_message(queue=get_settings().scan_queue, batch_size=1, name="scan")(
    handle_messages
)  # the Lambda handler
