"""From the audit trail to the notifications queue: each batch of the ``audit-events``
stream's new events, told as notices (``triggers.of_event``) and fanned out.

A notice becomes one queued delivery per configuration of its organization that is enabled
and subscribed to its trigger (``worker`` sends it, and retries it); a deprecation and an
approaching deadline also queue one ``consumers`` message (``worker`` mails the version's
recent consumers). Cost: one Query of the configurations per organization per batch (of the
organizations with an event that fires a trigger), one GetItem per module per batch, only
for a notice someone gets (the version's latest servable version, its id), and one
SendMessageBatch per ten messages; the change that was recorded paid for none of it.

At least once: a batch that fails (a queue refusing a message) fails the stream batch, and
the batch comes again whole, so a destination may get a notice twice (its payload's
``occurred_at`` and resource tell the copies apart, as TFE's do not promise otherwise).
"""

from __future__ import annotations

import json
import logging
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import asdict
from functools import cache
from typing import Any

from chalicelib.core import observe
from chalicelib.core.data.aws import client
from chalicelib.core.settings import get_settings
from chalicelib.notifications import store, triggers
from chalicelib.notifications.triggers import Notice, Trigger

log = logging.getLogger("registry.notifications")

DELIVERY = "delivery"
CONSUMERS = "consumers"
KINDS = (DELIVERY, CONSUMERS)
# The triggers whose version's consumers are mailed (besides the destinations).
TELL_CONSUMERS = (Trigger.MODULE_DEPRECATED, Trigger.MODULE_DEADLINE)
# SendMessageBatch: at most ten messages and 256 KiB in all (kept below it).
BATCH = 10
BATCH_BYTES = 200 * 1024


def new_documents(records: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The events a stream batch added (its INSERT records' documents), oldest first."""
    found = []
    for record in records:
        if record.get("eventName") != "INSERT":
            continue
        image = (record.get("dynamodb") or {}).get("NewImage") or {}
        key = (image.get("key") or {}).get("S") or ""
        try:
            document = json.loads((image.get("document") or {}).get("S") or "")
        except ValueError:
            continue
        if isinstance(document, dict):
            found.append((key, document))
    return [document for _, document in sorted(found, key=lambda pair: pair[0])]


def subscribed(configuration: store.NotificationConfigurationModel, trigger: str) -> bool:
    """Whether the configuration asked for notices of ``trigger`` (and is on)."""
    return bool(configuration.enabled) and trigger in (configuration.triggers or [])


def delivery_message(
    configuration: store.NotificationConfigurationModel, notice: Notice
) -> dict[str, Any]:
    return {
        "kind": DELIVERY,
        "configuration": {"organization": configuration.organization, "id": configuration.id},
        "notice": asdict(notice),
        "attempt": 1,
    }


def messages(records: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The queue messages a stream batch gives (``PARTS38``'s two kinds). An event whose
    organization has no configuration asking for its trigger (and that tells no consumers)
    costs nothing more than its organization's Query."""
    modules = cache(triggers.read_module)  # one read of a module per batch
    fired: dict[str, list[tuple[Trigger, dict[str, Any]]]] = defaultdict(list)
    for document in new_documents(records):
        found = triggers.fired_by(document)
        if found is not None:
            fired[found[0]].append((found[1], document))
    queued: list[dict[str, Any]] = []
    for organization, documents in fired.items():
        configurations = store.in_organization(organization, consistent=False)
        for trigger, document in documents:
            wanted = [c for c in configurations if subscribed(c, trigger)]
            if not wanted and trigger not in TELL_CONSUMERS:
                continue
            notice = triggers.of_event(document, modules)
            if notice is None:
                continue
            queued += [delivery_message(c, notice) for c in wanted]
            if trigger in TELL_CONSUMERS:
                queued += _consumers_message(notice, document, modules)
    return queued


def _consumers_message(
    notice: Notice, document: dict[str, Any], modules: triggers.ReadModule
) -> list[dict[str, Any]]:
    meta = (document.get("resource") or {}).get("meta") or {}
    key = triggers.module_key_of(meta)
    module = modules(notice.organization, key) if key else None
    if module is None:
        return []
    return [
        {
            "kind": CONSUMERS,
            "notice": asdict(notice),
            "module-id": module.id,
            "version": notice.resource["version"],
        }
    ]


@cache
def _queue_url(sqs: Any, queue_name: str) -> str:
    """One GetQueueUrl per client."""
    return sqs.get_queue_url(QueueName=queue_name)["QueueUrl"]


def enqueue(bodies: list[dict[str, Any]], delay: int = 0) -> None:
    """Put ``bodies`` on the notifications queue, ten (or 200 KiB) a call, each after
    ``delay`` seconds. A message the queue refuses raises (the caller's batch comes again)."""
    sqs = client("sqs")
    url = _queue_url(sqs, get_settings().notify_queue)
    chunk: list[str] = []
    for text in (json.dumps(body, separators=(",", ":")) for body in bodies):
        if chunk and (len(chunk) >= BATCH or sum(map(len, chunk)) + len(text) > BATCH_BYTES):
            _send(sqs, url, chunk, delay)
            chunk = []
        chunk.append(text)
    if chunk:
        _send(sqs, url, chunk, delay)


def _send(sqs: Any, url: str, chunk: list[str], delay: int) -> None:
    entries = [
        {"Id": str(i), "MessageBody": text, "DelaySeconds": delay} for i, text in enumerate(chunk)
    ]
    failed = sqs.send_message_batch(QueueUrl=url, Entries=entries).get("Failed") or []
    if failed:
        raise RuntimeError(f"the notifications queue refused {len(failed)} messages: {failed[0]}")


def handle_batch(records: list[Mapping[str, Any]]) -> int:
    """One stream batch (in the caller's log scope: ``entry.notify``): its notices queued;
    how many messages."""
    queued = messages(records)
    if queued:
        enqueue(queued)
    observe.emit(
        log,
        logging.INFO,
        f"notifications fan-out: {len(queued)} messages",
        {"records": len(records), "messages": len(queued)},
        [observe.Metric("NotificationsQueued", len(queued))],
    )
    return len(queued)
