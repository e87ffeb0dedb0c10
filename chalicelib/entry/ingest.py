"""The ingest function: S3 ObjectCreated notifications, VCS publishing jobs and password
reset mails (``accounts.resets.deliver``), from SQS.

Which artifact type owns which upload prefix is said here, once: ``app.py`` (the whole
registry as one app) registers the same handler.
"""

from __future__ import annotations

import json
import logging
from typing import Any, TypedDict

from chalice import Chalice

from chalicelib.artifacts import events, queue
from chalicelib.core import observe
from chalicelib.core.audit import check
from chalicelib.core.settings import get_settings
from chalicelib.entry.wiring import Uses, wire
from chalicelib.modules.keys import UPLOAD_PREFIX
from chalicelib.providers.keys import UPLOAD_PREFIX as PROVIDER_UPLOAD_PREFIX

log = logging.getLogger("registry.consumer")


def _module_uploads() -> events.UploadHandler:
    from chalicelib.modules.ingest.handler import handle_s3_record

    return handle_s3_record


def _provider_uploads() -> events.UploadHandler:
    from chalicelib.providers.uploads import handle_s3_record

    return handle_s3_record


def _jobs() -> events.JobRunner:
    return _run_job


def _run_job(job: dict[str, Any]) -> object:
    """A password reset mail, or a publishing job (each loaded with the first of its kind)."""
    if job.get("kind") == queue.PASSWORD_RESET:
        from chalicelib.accounts import resets

        resets.deliver(job)  # logs its outcome
        return None
    from chalicelib.modules.publishing import worker

    return worker.run(job)  # logs its outcome


# Password reset links are mailed (this function is no HTTP app: it wires for itself).
wire(Uses(mail=True))


UPLOADS = {UPLOAD_PREFIX: _module_uploads, PROVIDER_UPLOAD_PREFIX: _provider_uploads}


def handle_body(body: str) -> None:
    """One SQS message (an S3 event, S3's one-off test event, or a job) in its own scope: its
    log lines share an id and its DynamoDB calls are counted. An exception is logged with its
    trace (and the message's kind) and raised again, so that SQS delivers the message again."""
    observe.configure()
    with observe.scope() as state:
        try:
            events.dispatch(body, UPLOADS, _jobs)
        except Exception:
            log.exception("%s message failed; SQS will deliver it again", _kind(body))
            raise
        finally:
            check.hold(state, _kind(body))


def _kind(body: str) -> str:
    try:
        return str(json.loads(body).get("kind") or "s3 event")
    except (ValueError, AttributeError):
        return "unreadable"


def handle_messages(event: Any) -> None:
    """Each SQS message is one S3 event or one publishing job; a failure leaves it for SQS
    to retry."""
    for message in event:
        handle_body(message.body)


class Subscription(TypedDict):
    """``on_sqs_message``'s arguments (``app.py`` subscribes the same handler)."""

    queue: str
    batch_size: int
    name: str


QUEUE: Subscription = {"queue": get_settings().ingest_queue, "batch_size": 1, "name": "ingest"}

app = Chalice(app_name="registry-ingest")
ingest = app.on_sqs_message(**QUEUE)(handle_messages)  # the Lambda handler
