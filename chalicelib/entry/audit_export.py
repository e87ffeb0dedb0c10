"""The audit export function: the ``audit-events`` table's DynamoDB Stream, batch by batch,
into S3 and CloudWatch Logs, one JSON line an event (``chalicelib.audit.export``).

A plain Lambda handler, as ``entry.downloads`` (``infrastructure.template`` subscribes it to
the table's stream). An exception fails the batch, and Lambda delivers it again.
"""

from __future__ import annotations

from typing import Any

from chalicelib.audit import export
from chalicelib.core import observe


def handler(event: dict[str, Any], context: Any) -> None:
    """Lambda's entry point for a DynamoDB Stream event."""
    observe.configure()
    export.handle_batch(event.get("Records") or [])
