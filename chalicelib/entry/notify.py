"""The notifications' two functions: the ``audit-events`` stream fanned out to the
notifications queue (``stream``: ``notifications.fanout``), and that queue's messages
delivered (``deliveries``: ``notifications.worker``).

Plain Lambda handlers, as ``entry.downloads`` and ``entry.audit_export``:
``infrastructure.template`` subscribes ``stream`` to the audit table's stream (beside the
``AuditExport`` function: each has its own place in it) and ``deliveries`` to the queue,
reporting each failed message on its own (``batchItemFailures``) so that SQS delivers only
those again. The local stack's pollers call ``handle_records`` and ``handle_body``. Each runs
in its own scope, checked by ``core.audit.check`` (nothing here is a person's change).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from chalicelib.core import observe
from chalicelib.core.audit import check
from chalicelib.notifications import fanout, worker

log = logging.getLogger("registry.consumer")


def handle_records(records: list[Mapping[str, Any]]) -> int:
    """One batch of the audit stream; an exception fails it (it comes again)."""
    with observe.scope() as state:
        try:
            return fanout.handle_batch(records)
        finally:
            check.hold(state, "notifications fan-out")


def handle_body(body: str) -> str:
    """One message of the notifications queue; an exception is logged and raised again, so
    that SQS delivers it again (and, past its receives, to the dead-letter queue)."""
    with observe.scope() as state:
        try:
            outcome = worker.handle_body(body)
            log.info("notification message: %s", outcome)
            return outcome
        except Exception:
            log.exception("notification message failed; SQS will deliver it again")
            raise
        finally:
            check.hold(state, "notification message")


def stream(event: dict[str, Any], context: Any) -> None:
    """Lambda's entry point for the audit table's DynamoDB Stream."""
    observe.configure()
    handle_records(event.get("Records") or [])


def deliveries(event: dict[str, Any], context: Any) -> dict[str, Any]:
    """Lambda's entry point for the notifications queue: the messages that failed are
    reported by id, the others are done."""
    observe.configure()
    failed = []
    for record in event.get("Records") or []:
        try:
            handle_body(record.get("body") or "")
        except Exception:  # noqa: BLE001 - logged; SQS delivers this one again
            failed.append({"itemIdentifier": record.get("messageId")})
    return {"batchItemFailures": failed}
