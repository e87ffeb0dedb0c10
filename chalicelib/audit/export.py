"""The audit trail delivered where a SIEM reads it: each new event as one JSON line, in S3
and in CloudWatch Logs.

The ``audit-events`` table streams its new items (``NEW_IMAGE``) to the ``AuditExport``
function in AWS (``infrastructure.template``; a poller in the local stack,
``infrastructure.streams``), which hands each batch here. Recording an event (the change's
own transaction) gains no call: delivery happens after, from the stream.

* S3 (``REGISTRY_AUDIT_BUCKET``; the template's bucket has Object Lock, so what is written
  there cannot be changed or deleted before its retention ends): one object per batch and
  hour, ``audit-events/YYYY/MM/DD/HH/<time of its first event>-<digest>.jsonl``, one event a
  line, oldest first. A SIEM lists a day's or an hour's prefix. The key is made from the
  lines themselves, so a batch delivered again writes the same object again.
* CloudWatch Logs (``REGISTRY_AUDIT_LOG_GROUP``): one log event per audit event, its JSON
  as the message and its time as the timestamp, in one log stream a day (``YYYY/MM/DD``).

What is written is the event exactly as the API answers it (HCP Terraform's shape). Each
sink gets every event at least once: a batch that fails is delivered again (Lambda retries
it, the local poller reads it again), so after a failure a line may appear twice in the log
group; the event's ``id`` tells the copies apart. Only new items are exported: an item's
removal by its TTL is no event.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from itertools import groupby
from typing import Any

from chalicelib.core import observe
from chalicelib.core.data.aws import client
from chalicelib.core.settings import get_settings

log = logging.getLogger("registry.audit")

PREFIX = "audit-events/"
# CloudWatch Logs' PutLogEvents: at most 10,000 events and 1,048,576 bytes a call, each
# event counted as its message's UTF-8 bytes plus 26.
LOG_BATCH_EVENTS = 10_000
LOG_BATCH_BYTES = 1_048_576
LOG_EVENT_OVERHEAD = 26


@dataclass(frozen=True)
class Line:
    """One event to deliver: its sort key (``<time>#<id>``, the item's) and its JSON."""

    key: str
    document: str

    @property
    def moment(self) -> datetime:
        return datetime.strptime(self.key.split("#", 1)[0], "%Y-%m-%dT%H:%M:%S.%fZ").replace(
            tzinfo=UTC
        )

    @property
    def hour(self) -> str:
        """``YYYY/MM/DD/HH``: the S3 prefix of its hour."""
        return self.moment.strftime("%Y/%m/%d/%H")

    @property
    def day(self) -> str:
        """``YYYY/MM/DD``: its log stream."""
        return self.moment.strftime("%Y/%m/%d")


def new_lines(records: Iterable[Mapping[str, Any]]) -> list[Line]:
    """The events a stream batch added (its INSERT records), oldest first."""
    found = []
    for record in records:
        if record.get("eventName") != "INSERT":
            continue
        image = (record.get("dynamodb") or {}).get("NewImage") or {}
        key = (image.get("key") or {}).get("S")
        document = (image.get("document") or {}).get("S")
        if key and document:
            found.append(Line(key, document))
    return sorted(found, key=lambda line: line.key)


def object_key(lines: list[Line]) -> str:
    """Where an hour's lines go: under the hour's prefix, named by its first event's time and
    a digest of the lines (the same lines, the same key)."""
    digest = hashlib.sha256("\n".join(line.document for line in lines).encode()).hexdigest()
    first = lines[0].moment.strftime("%Y%m%dT%H%M%S%fZ")
    return f"{PREFIX}{lines[0].hour}/{first}-{digest[:16]}.jsonl"


def to_s3(bucket: str, lines: list[Line]) -> int:
    """One JSON Lines object per hour of ``lines``; how many objects."""
    written = 0
    for _, hour in groupby(lines, key=lambda line: line.hour):
        held = list(hour)
        body = "".join(line.document + "\n" for line in held).encode()
        # A checksum: a bucket with Object Lock refuses a PutObject without one.
        client("s3").put_object(
            Bucket=bucket,
            Key=object_key(held),
            Body=body,
            ContentType="application/x-ndjson",
            ChecksumAlgorithm="SHA256",
        )
        written += 1
    return written


# The log streams this instance made or found (a day's stream is made once).
_streams: set[tuple[str, str]] = set()


def _log_stream(group: str, name: str) -> None:
    if (group, name) in _streams:
        return
    logs = client("logs")
    with contextlib.suppress(logs.exceptions.ResourceAlreadyExistsException):
        logs.create_log_stream(logGroupName=group, logStreamName=name)
    _streams.add((group, name))


def _chunks(lines: list[Line]) -> Iterable[list[Line]]:
    """``lines`` in PutLogEvents-sized calls."""
    chunk: list[Line] = []
    size = 0
    for line in lines:
        cost = len(line.document.encode()) + LOG_EVENT_OVERHEAD
        if chunk and (len(chunk) >= LOG_BATCH_EVENTS or size + cost > LOG_BATCH_BYTES):
            yield chunk
            chunk, size = [], 0
        chunk.append(line)
        size += cost
    if chunk:
        yield chunk


def to_logs(group: str, lines: list[Line]) -> int:
    """One log event per line, in its day's log stream; how many PutLogEvents calls."""
    calls = 0
    for day, held in groupby(lines, key=lambda line: line.day):
        _log_stream(group, day)
        for chunk in _chunks(list(held)):
            answer = client("logs").put_log_events(
                logGroupName=group,
                logStreamName=day,
                logEvents=[
                    {
                        "timestamp": int(line.moment.timestamp() * 1000),
                        "message": line.document,
                    }
                    for line in chunk
                ],
            )
            calls += 1
            rejected = answer.get("rejectedLogEventsInfo")
            if rejected:  # older than the group keeps, or too far ahead: S3 still has them
                log.warning("CloudWatch Logs refused audit events: %s", rejected)
    return calls


def export(records: Iterable[Mapping[str, Any]]) -> tuple[int, int]:
    """Deliver a stream batch's new events to the configured sinks: (events, S3 objects).
    An exception propagates, so that the batch is delivered again."""
    lines = new_lines(records)
    settings = get_settings()
    objects = 0
    if lines and settings.audit_bucket:
        objects = to_s3(settings.audit_bucket, lines)
    if lines and settings.audit_log_group:
        to_logs(settings.audit_log_group, lines)
    return len(lines), objects


def handle_batch(records: list[Mapping[str, Any]]) -> None:
    """One stream batch in its own log scope (its calls counted on its line)."""
    with observe.scope():
        events, objects = export(records)
        observe.emit(
            log,
            logging.INFO,
            f"audit export: {events} events, {objects} objects",
            {"records": len(records), "events": events, "objects": objects},
            [observe.Metric("AuditEventsExported", events)],
        )
