"""Background work for VCS publishing, as messages on the ingest queue.

The ingest queue already carries S3 event notifications (``{"Records": [...]}``); publishing
adds messages of its own, told apart by ``kind``. One message is one small, idempotent step,
so SQS retries (and the dead-letter queue) cover a crash in the middle of any of them:

* ``vcs-sync``  (module): read the repository's tags and create a version per new SemVer tag;
* ``vcs-fetch`` (version): fetch the version's commit and put it at the version's upload key,
  which raises the S3 event the ingest handler already processes.
"""

from __future__ import annotations

import json
from typing import Any

from chalicelib.core.aws import client
from chalicelib.core.settings import get_settings

SYNC = "vcs-sync"
FETCH = "vcs-fetch"
KINDS = (SYNC, FETCH)


def enqueue(kind: str, **fields: str) -> None:
    assert kind in KINDS, kind
    sqs = client("sqs")
    url = sqs.get_queue_url(QueueName=get_settings().ingest_queue)["QueueUrl"]
    sqs.send_message(QueueUrl=url, MessageBody=json.dumps({"kind": kind, **fields}))


def handle(message: dict[str, Any]) -> str:
    """Run one job message; returns what happened (for logs and tests)."""
    from chalicelib.registry import publishing

    kind = message.get("kind")
    if kind == SYNC:
        return publishing.sync_tags(message["module_id"])
    if kind == FETCH:
        return publishing.fetch_version(
            message["module_id"], message["version"], message["version_id"]
        )
    return "ignored"
