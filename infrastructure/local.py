"""Run the whole registry on this machine: ``python -m infrastructure.local`` (``make run``).

One process: an embedded moto server (S3, DynamoDB, SQS, KMS), the resources from
``infrastructure.resources``, an SQS poller handing each S3 event to the same ingest handler
the Lambda runs, and the API on Chalice's local server.

Environment: PORT (API, default 8000), MOTO_PORT (default 5000), EDITION (self-hosted or
hosted), REGISTRY_ADMIN_TOKEN (the initial site admin's token; one is minted and printed
when unset).
"""

from __future__ import annotations

import logging
import os
import signal
import sys
import threading
from typing import Any


def _configure_environment(moto_port: int) -> None:
    # Before any chalicelib import: table and endpoint settings are read at import time.
    os.environ.setdefault("AWS_ACCESS_KEY_ID", "local")
    os.environ.setdefault("AWS_SECRET_ACCESS_KEY", "local")
    os.environ.setdefault("AWS_DEFAULT_REGION", "us-east-1")
    os.environ["AWS_ENDPOINT_URL"] = f"http://127.0.0.1:{moto_port}"
    os.environ.pop("AWS_PROFILE", None)


def make_moto_dynamodb_atomic() -> None:
    """Apply each DynamoDB request atomically, as DynamoDB does.

    The moto server runs requests on parallel threads with no such guarantee: a cancelled
    TransactWriteItems restores whole-table snapshots taken before it ran (undoing other
    threads' writes) and an UpdateItem's read-modify-write can interleave with another's.
    API requests still run in parallel; only each DynamoDB operation is serialised.
    """
    from moto.dynamodb.responses import DynamoHandler

    lock = threading.RLock()
    original = DynamoHandler.call_action

    def call_action(self: Any) -> Any:
        with lock:
            return original(self)

    DynamoHandler.call_action = call_action


class Poller(threading.Thread):
    """Drains the ingest queue like the SQS event source mapping does in AWS."""

    def __init__(self, queue_url: str) -> None:
        super().__init__(name="ingest-poller", daemon=True)
        self.queue_url = queue_url
        self.stopping = threading.Event()

    def run(self) -> None:
        from chalicelib.core.aws import client
        from chalicelib.registry.consumer import handle_sqs_body

        sqs = client("sqs")
        log = logging.getLogger("registry.poller")
        while not self.stopping.is_set():
            try:
                messages = sqs.receive_message(
                    QueueUrl=self.queue_url, WaitTimeSeconds=1, MaxNumberOfMessages=10
                ).get("Messages", [])
            except Exception:  # noqa: BLE001 - moto going away at shutdown
                if self.stopping.is_set():
                    return
                log.exception("receiving from the ingest queue failed")
                self.stopping.wait(1)
                continue
            for message in messages:
                try:
                    handle_sqs_body(message["Body"])
                except Exception:  # noqa: BLE001 - left on the queue: SQS retries, then DLQ
                    log.exception("ingest failed; the message will be retried")
                    continue
                sqs.delete_message(QueueUrl=self.queue_url, ReceiptHandle=message["ReceiptHandle"])


def _request_handler() -> Any:
    from chalice.local import ChaliceRequestHandler, ForbiddenError

    from chalicelib.core.errors import NotFound, error_document

    class RegistryRequestHandler(ChaliceRequestHandler):
        """Unknown routes answer a JSON:API 404, not API Gateway's 403."""

        def _send_error_response(self, error: Any) -> None:
            if isinstance(error, ForbiddenError):
                body = error_document(NotFound(f"no route for {self.command} {self.path}"))
                import json

                self._send_http_response(
                    404, {"Content-Type": "application/vnd.api+json"}, json.dumps(body)
                )
                return
            super()._send_error_response(error)

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
            if os.environ.get("REGISTRY_ACCESS_LOG", "1") != "0":
                super().log_message(format, *args)

    return RegistryRequestHandler


def main() -> int:
    port = int(os.environ.get("PORT", "8000"))
    moto_port = int(os.environ.get("MOTO_PORT", "5000"))
    _configure_environment(moto_port)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    logging.getLogger("werkzeug").setLevel(logging.WARNING)

    from chalice.config import Config
    from chalice.local import LocalDevServer
    from moto.server import ThreadedMotoServer

    make_moto_dynamodb_atomic()
    moto = ThreadedMotoServer(ip_address="127.0.0.1", port=moto_port, verbose=False)
    moto.start()

    from app import app
    from chalicelib.accounts.service import bootstrap_admin
    from chalicelib.core.settings import get_settings
    from infrastructure.resources import provision

    queue_url = provision()
    admin, minted = bootstrap_admin(os.environ.get("REGISTRY_ADMIN_TOKEN") or None)
    poller = Poller(queue_url)
    poller.start()

    config = Config.create(chalice_stage="dev", app_name=app.app_name)
    server = LocalDevServer(app, config, "127.0.0.1", port, handler_cls=_request_handler())

    def stop(*_: Any) -> None:
        threading.Thread(target=server.shutdown, daemon=True).start()

    signal.signal(signal.SIGTERM, stop)
    settings = get_settings()
    print(f"Registry ({settings.edition}) listening on http://127.0.0.1:{port}", flush=True)
    print(f"  moto (S3, DynamoDB, SQS, KMS) on {os.environ['AWS_ENDPOINT_URL']}", flush=True)
    if minted:
        print(f"  site admin '{admin.username}' token (shown once): {minted}", flush=True)
    else:
        print(f"  site admin '{admin.username}' uses REGISTRY_ADMIN_TOKEN", flush=True)
    print("READY", flush=True)
    try:
        server.server.serve_forever(poll_interval=0.2)
    except KeyboardInterrupt:
        pass
    finally:
        poller.stopping.set()
        server.server.server_close()
        poller.join(timeout=3)
        moto.stop()
        print("stopped", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
