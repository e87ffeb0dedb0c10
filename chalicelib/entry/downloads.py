"""The download-totals function: the ``module-downloads`` table's DynamoDB Stream, batch by
batch, into each module's kept totals (``chalicelib.modules.downloads.totals``).

A plain Lambda handler (no Chalice app: Chalice would need the stream's ARN when packaging;
``infrastructure.template`` subscribes it to the table's stream). An exception fails the
batch, and Lambda delivers it again: applying a batch twice changes nothing.
"""

from __future__ import annotations

from typing import Any

from chalicelib.core import observe
from chalicelib.modules.downloads import totals


def handler(event: dict[str, Any], context: Any) -> None:
    """Lambda's entry point for a DynamoDB Stream event."""
    observe.configure()
    totals.handle_batch(event.get("Records") or [])
