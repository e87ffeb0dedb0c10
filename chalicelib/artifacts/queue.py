"""Putting work on the ingest queue: re-sent upload events and VCS publishing jobs.

The ingest queue already carries S3 event notifications (``{"Records": [...]}``); publishing
adds messages of its own, told apart by ``kind``. One message is one small, idempotent step,
so SQS retries (and the dead-letter queue) cover a crash in the middle of any of them:

* ``vcs-sync``  (module): read the repository's tags and create a version per new SemVer tag;
* ``vcs-fetch`` (version): fetch the version's commit and put it at the version's upload key,
  which raises the S3 event the ingest handler already processes;
* ``vcs-hook`` (module): add the module's webhook at the VCS host (replacing the one added
  before, or the one named in ``previous``);
* ``vcs-unhook``: remove a webhook of a deleted module (or a re-pointed one) at the host;
  the job carries the host, the repository and the sealed token, so it still works after
  the module's connection is gone.

The jobs are run by ``registry.publishing.worker``. One more kind is not publishing's:

* ``password-reset``: mail a password reset link (``accounts.resets.deliver``), queued for
  every request alike so that the request takes as long whether or not the account exists.

Scan jobs go to a queue of their own, the scan queue (``request_scan``): only the scan
function, the one that carries the scanner, reads it.

* ``module-scan`` (version): scan a module version's accepted archive and record the result
  (``modules.scanning.worker``).

Long transfers go to the transfers queue (``transfer``): only the Transfers function
(``entry.transfers``; 15 minutes, disk for what it moves) reads it.

* ``bundle-export`` / ``bundle-import`` (job): write an export, check and import a bundle
  (``bundles.jobs``; an export near its time budget queues itself again and resumes);
* ``module-cache-fetch`` (address, version): fetch a version into the module cache, queued
  when a first install's fetch outlived its bound (``modules.cache.service``).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from functools import cache
from typing import Any

from chalicelib.core.data.aws import client
from chalicelib.core.settings import get_settings

SYNC = "vcs-sync"
FETCH = "vcs-fetch"
HOOK = "vcs-hook"
UNHOOK = "vcs-unhook"
PASSWORD_RESET = "password-reset"
KINDS = (SYNC, FETCH, HOOK, UNHOOK, PASSWORD_RESET)
MODULE_SCAN = "module-scan"
SCAN_KINDS = (MODULE_SCAN,)
# Air-gapped bundles' jobs (``bundles.jobs``) and the module cache's background fetches.
BUNDLE_EXPORT = "bundle-export"
BUNDLE_IMPORT = "bundle-import"
MODULE_CACHE_FETCH = "module-cache-fetch"
TRANSFER_KINDS = (BUNDLE_EXPORT, BUNDLE_IMPORT, MODULE_CACHE_FETCH)


BATCH = 10  # SendMessageBatch's limit


@cache
def _queue_url(sqs: Any, queue_name: str) -> str:
    """One GetQueueUrl per client (a new client, e.g. another endpoint, asks again)."""
    return sqs.get_queue_url(QueueName=queue_name)["QueueUrl"]


def enqueue_upload_events(keys: Iterable[str]) -> None:
    """An S3 ObjectCreated notification per key, as S3 sends it: the ingest handler runs on
    those uploaded archives again (their event was lost or dead-lettered)."""
    _send(
        {
            "Records": [
                {
                    "eventSource": "aws:s3",
                    "eventName": "ObjectCreated:Put",
                    "s3": {"object": {"key": key}},
                }
            ]
        }
        for key in keys
    )


def enqueue(kind: str, **fields: Any) -> None:
    enqueue_many(kind, [fields])


def enqueue_many(kind: str, items: Iterable[dict[str, Any]]) -> None:
    """One ``kind`` job per item."""
    assert kind in KINDS, kind
    _send({"kind": kind, **fields} for fields in items)


def request_scan(kind: str, **fields: Any) -> None:
    """One ``kind`` scan job on the scan queue (SQS delivers it at least once: the job is
    safe to run twice)."""
    assert kind in SCAN_KINDS, kind
    _send([{"kind": kind, **fields}], get_settings().scan_queue)


def transfer(kind: str, **fields: Any) -> None:
    """One ``kind`` job on the transfers queue (delivered at least once: safe to run twice)."""
    assert kind in TRANSFER_KINDS, kind
    _send([{"kind": kind, **fields}], get_settings().transfers_queue)


def _send(messages: Iterable[dict[str, Any]], queue_name: str | None = None) -> None:
    """Put the messages on the ingest queue (or ``queue_name``), ten to a request."""
    bodies = [json.dumps(message) for message in messages]
    if not bodies:
        return
    sqs = client("sqs")
    url = _queue_url(sqs, queue_name or get_settings().ingest_queue)
    for start in range(0, len(bodies), BATCH):
        entries = [
            {"Id": str(index), "MessageBody": body}
            for index, body in enumerate(bodies[start : start + BATCH])
        ]
        result = sqs.send_message_batch(QueueUrl=url, Entries=entries)
        if result.get("Failed"):
            failed = result["Failed"][0]
            raise RuntimeError(f"SQS refused a message: {failed.get('Message')}")
