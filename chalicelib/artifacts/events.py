"""The ingest queue's messages, told apart.

The queue carries S3 event notifications (``{"Records": [...]}``) for archives uploaded to
the bucket, and jobs of our own (``{"kind": ...}``, see ``artifacts.queue``). An upload
belongs to the artifact type that owns its key's prefix; which type owns which prefix, and
who runs jobs, is the caller's to say (``entry.ingest``), so this room imports no artifact
type and a new one is a new entry in that table.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any
from urllib.parse import unquote_plus

Record = dict[str, Any]
UploadHandler = Callable[[Record], object]  # what it returns (e.g. an outcome) is not used
JobRunner = Callable[[dict[str, Any]], Any]


def record_key(record: Record) -> str:
    """The object key an S3 event record names, decoded: S3 sends it URL-encoded (``+`` for
    a space, ``%2F`` for a ``/`` where the client encoded one)."""
    return unquote_plus(record["s3"]["object"]["key"])


def uploaded_keys(event: dict[str, Any]) -> list[tuple[str, Record]]:
    """The object keys an S3 notification reports as created, decoded (S3 sends them
    URL-encoded, ``+`` for a space); S3's one-off test event and other event names report
    none."""
    return [
        (record_key(record), record)
        for record in event.get("Records", [])
        if record.get("eventSource") == "aws:s3"
        and str(record.get("eventName", "")).startswith("ObjectCreated")
    ]


def dispatch(
    body: str, uploads: Mapping[str, Callable[[], UploadHandler]], jobs: Callable[[], JobRunner]
) -> Any:
    """Hand one message to its handler. ``uploads`` maps a key prefix to a loader of the
    handler for keys under it (loaded on first use, so a cold start pays only for the kind
    of message it receives); ``jobs`` loads the job runner. A key no prefix owns is left
    alone (the bucket holds objects the registry wrote itself)."""
    event = json.loads(body)
    if "kind" in event:
        return jobs()(event)
    for key, record in uploaded_keys(event):
        for prefix, load in uploads.items():
            if key.startswith(prefix):
                load()(record)
                break
    return None
