"""Run the whole registry on this machine: ``python -m infrastructure.local`` (``make run``).

One process: an embedded moto server (S3, DynamoDB, SQS, KMS, CloudWatch Logs), the resources from
``infrastructure.resources``, an SQS poller handing each S3 event to the same ingest handler
the Lambda runs, another handing each scan job to the scan function's handler, another each
transfers job (bundle jobs, module cache fetches) to the Transfers function's, a DynamoDB
Stream poller keeping the modules' download totals (as the
``DownloadTotals`` function does), another exporting each audit event to the local S3
bucket ``registry-dev-audit`` and log group ``/registry-dev/audit-events`` (as the
``AuditExport`` function does), a second reader of that stream fanning notices out to the
notifications queue and a poller delivering them (as the ``NotificationsFanOut`` and
``NotificationsDelivery`` functions do), a thread sweeping deprecation deadlines (as the
scheduled ``DeprecationDeadlines`` function does), and the API on Chalice's local server.

Environment: HOST (the address both servers listen on and that upload and download links
name, default 127.0.0.1; a LAN address lets a team try it from other machines; 0.0.0.0
listens everywhere and names this machine's host name in links), PORT (API, default 8000),
MOTO_PORT (default 5000), HTTPS_PORT (the same API over HTTPS, default 8443; ``off``: none;
``infrastructure.local_tls``), MAIL_PORT (the local mail catcher's SMTP port on 127.0.0.1,
default 8025; REGISTRY_MAIL_CATCHER=off: no catcher; ``infrastructure.mail_catcher``),
EDITION (self-hosted or hosted), REGISTRY_PUBLIC_URL (the address
mailed links name: reset, confirmation and invitation links, never a request's host; default
the address it prints, ``http://HOST:PORT``), REGISTRY_ADMIN_TOKEN (the initial site admin's
token; one is minted and printed when unset), REGISTRY_DATA_DIR (where the state is kept
across restarts, default ``.data/`` in the checkout; empty: in memory only),
REGISTRY_SNAPSHOT_SECONDS (how often changes are saved, default 5), REGISTRY_TTL_SWEEP_SECONDS
(how often expired DynamoDB items are deleted, as DynamoDB's TTL does and moto does not,
default 60; also before each snapshot), REGISTRY_DEADLINE_SWEEP_SECONDS (how often deprecation
deadlines are swept: versions revoked on their ``revoke-at``, their notices recorded; default
30).
REGISTRY_OUTBOUND_ALLOW has no local default, as deployed: a VCS host or mirror link on this
machine's loopback is refused until it is listed (``chalicelib.core.outbound``; e.g.
``REGISTRY_OUTBOUND_ALLOW=localhost:3000``).

The moto server only serves requests signed with the local credentials (SigV4, header or
presigned query string, checked by ``infrastructure.s3_auth`` as S3 checks them); the state
is saved and restored by ``infrastructure.persistence``.
"""

from __future__ import annotations

import errno
import functools
import gc
import logging
import os
import re
import signal
import socket
import ssl
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from infrastructure import moto_transactions

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_DATA_DIR = ROOT / ".data"
# Where the local stack exports the audit trail (the local S3 and CloudWatch Logs).
LOCAL_AUDIT_BUCKET = "registry-dev-audit"
LOCAL_AUDIT_LOG_GROUP = "/registry-dev/audit-events"
# Where the audit export's stream reader keeps its place, in the data directory.
AUDIT_CHECKPOINT = "audit-export-checkpoint.json"
# Where the notifications' reader of the same stream keeps its own place.
NOTIFY_CHECKPOINT = "notifications-checkpoint.json"
# Listen backlog of both servers: a burst of clients (50 parallel `terraform init`s) must
# queue, not be reset (socketserver's default is 5; the kernel caps it at somaxconn).
BACKLOG = 1024


def data_dir() -> Path | None:
    """REGISTRY_DATA_DIR: unset means ``.data/`` in the checkout, empty means memory only."""
    raw = os.environ.get("REGISTRY_DATA_DIR")
    if raw is None:
        return DEFAULT_DATA_DIR
    raw = raw.strip()
    return Path(raw).expanduser().resolve() if raw else None


def link_host(host: str) -> str:
    """The name that links (presigned uploads and downloads, the printed URLs) carry: the
    listening address, or this machine's host name when it listens on every address."""
    if host in ("0.0.0.0", "::", ""):
        return socket.gethostname()
    return f"[{host}]" if ":" in host else host


def printed_url(host: str, port: int) -> str:
    """The address the stack prints for its API and UI."""
    return f"http://{link_host(host)}:{port}"


def set_public_url(host: str, port: int) -> str:
    """REGISTRY_PUBLIC_URL, set to the printed address when the operator set none: mailed
    links (resets, confirmations, invitations) name only it, as on AWS they name
    InstanceAddress, never a request's Host header (``chalicelib.core.api.links``)."""
    public = os.environ.get("REGISTRY_PUBLIC_URL", "").strip() or printed_url(host, port)
    os.environ["REGISTRY_PUBLIC_URL"] = public
    return public


def ui_origins(host: str, port: int) -> list[str]:
    """The origins a browser opens the local UI at: the printed URL's (``localhost`` too
    for the loopback address) and REGISTRY_PUBLIC_URL's, when set."""
    origins = [printed_url(host, port)]
    if host == "127.0.0.1":
        origins.append(f"http://localhost:{port}")
    public = os.environ.get("REGISTRY_PUBLIC_URL", "").strip()
    if public:
        parts = urlsplit(public)
        origins.append(f"{parts.scheme}://{parts.netloc}")
    return list(dict.fromkeys(origins))


class PortInUse(Exception):
    pass


def check_free(host: str, ports: dict[str, int]) -> None:
    """Refuse early, naming the variable, when a port is taken (instead of a traceback from
    deep inside a server's constructor after half the stack started)."""
    for variable, port in ports.items():
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        with socket.socket(family) as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                probe.bind((host, port))
            except OSError as exc:
                if exc.errno != errno.EADDRINUSE:
                    raise  # HOST is no address of this machine: the caller says so
                raise PortInUse(
                    f"{variable}={port} is not free on {host or '0.0.0.0'} ({exc.strerror}): "
                    f"another program (or registry) uses it; choose another, e.g. "
                    f"{variable}={port + 1} make run"
                ) from None


def https_port() -> int | None:
    """HTTPS_PORT: the HTTPS server's port (default 8443), None when ``off``."""
    raw = os.environ.get("HTTPS_PORT", "8443").strip().lower()
    return None if raw in ("off", "0", "") else int(raw)


def mail_port() -> int | None:
    """MAIL_PORT (default 8025), None when REGISTRY_MAIL_CATCHER is ``off``."""
    if os.environ.get("REGISTRY_MAIL_CATCHER", "on").strip().lower() in ("off", "0", "false"):
        return None
    return int(os.environ.get("MAIL_PORT", "8025"))


def tls_server(base: Any, context: ssl.SSLContext) -> Any:
    """``base`` (a threaded HTTP server class) speaking TLS: each connection's handshake
    runs on its own thread (a slow client holds up no other), then the request as over
    HTTP."""

    class TlsServer(base):
        def finish_request(self, request: Any, client_address: Any) -> None:
            request.settimeout(30)
            try:
                connection = context.wrap_socket(request, server_side=True)
            except (ssl.SSLError, OSError):  # not TLS, or a client that went away
                request.close()
                return
            connection.settimeout(None)
            try:
                super().finish_request(connection, client_address)
            finally:
                connection.close()

    return TlsServer


def _configure_environment(host: str, moto_port: int) -> None:
    # Before any chalicelib import: table and endpoint settings are read at import time.
    os.environ.setdefault("AWS_ACCESS_KEY_ID", "local")
    os.environ.setdefault("AWS_SECRET_ACCESS_KEY", "local")
    os.environ.setdefault("AWS_DEFAULT_REGION", "us-east-1")
    os.environ["AWS_ENDPOINT_URL"] = f"http://{link_host(host)}:{moto_port}"
    os.environ.pop("AWS_PROFILE", None)
    # moto answers every origin's CORS preflight unless told not to; then the bucket's own
    # CORS rules decide, as on S3 (``resources.allow_browser_uploads``).
    os.environ["MOTO_DISABLE_GLOBAL_CORS"] = "true"
    # The audit trail's export, as the AuditExport function's in AWS: the local bucket (with
    # Object Lock) and log group (``chalicelib.audit.export``).
    os.environ.setdefault("REGISTRY_AUDIT_BUCKET", LOCAL_AUDIT_BUCKET)
    os.environ.setdefault("REGISTRY_AUDIT_LOG_GROUP", LOCAL_AUDIT_LOG_GROUP)


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

    DynamoHandler.call_action = call_action  # type: ignore[method-assign]  # serialised
    # A transaction's undo copy holds what it touches, not whole tables (every change is a
    # transaction with its audit event: whole-table copies made each cost the table's size).
    moto_transactions.install()


def handle_ingest(body: str, receives: int) -> None:
    """An ingest queue message, as the Ingest function takes it."""
    from chalicelib.entry.ingest import handle_body

    handle_body(body)


def handle_notification(body: str, receives: int) -> None:
    """A notifications queue message, as the NotificationsDelivery function takes it."""
    from chalicelib.entry.notify import handle_body

    handle_body(body)


def handle_scan(body: str, receives: int) -> None:
    """A scan job, as the scan function takes it (which delivery it is, too)."""
    from chalicelib.entry.scan import handle_body

    handle_body(body, receives)


def handle_transfer(body: str, receives: int) -> None:
    """A transfers job (a bundle job, a module cache fetch), as the Transfers function takes
    it (no time budget here: a job runs to its end)."""
    from chalicelib.entry.transfers import handle_body

    handle_body(body)


class Poller(threading.Thread):
    """Drains a queue like the SQS event source mapping does in AWS: each message to
    ``handle`` (its body and which delivery it is), deleted once handled."""

    def __init__(self, queue_url: str, name: str, handle: Callable[[str, int], None]) -> None:
        super().__init__(name=f"{name}-poller", daemon=True)
        self.queue_url = queue_url
        self.queue = name
        self.handle = handle
        self.stopping = threading.Event()

    def run(self) -> None:
        from chalicelib.core.data.aws import client

        sqs = client("sqs")
        log = logging.getLogger("registry.poller")
        while not self.stopping.is_set():
            try:
                messages = sqs.receive_message(
                    QueueUrl=self.queue_url,
                    WaitTimeSeconds=1,
                    MaxNumberOfMessages=10,
                    MessageSystemAttributeNames=["ApproximateReceiveCount"],
                ).get("Messages", [])
            except Exception:  # noqa: BLE001 - moto going away at shutdown
                if self.stopping.is_set():
                    return
                log.exception("receiving from the %s queue failed", self.queue)
                self.stopping.wait(1)
                continue
            for message in messages:
                receives = int(message.get("Attributes", {}).get("ApproximateReceiveCount", 1))
                try:
                    self.handle(message["Body"], receives)
                except Exception:  # noqa: BLE001 - left on the queue: SQS retries, then DLQ
                    log.exception("%s failed; the message will be retried", self.queue)
                    continue
                sqs.delete_message(QueueUrl=self.queue_url, ReceiptHandle=message["ReceiptHandle"])


class DeadlineSweeper(threading.Thread):
    """Runs the deprecation deadline sweep (``chalicelib.entry.deadlines.sweep``, the
    scheduled function's handler) every ``interval`` seconds until ``stopping`` is set."""

    def __init__(self, interval: float) -> None:
        super().__init__(name="deadline-sweeper", daemon=True)
        self.interval = interval
        self.stopping = threading.Event()

    def run(self) -> None:
        from chalicelib.entry.deadlines import sweep

        while not self.stopping.wait(self.interval):
            try:
                sweep()
            except Exception:  # noqa: BLE001 - the stack keeps serving; the next round retries
                logging.getLogger("registry.deadlines").exception("the deadline sweep failed")


class MotoServer:
    """moto's server application on werkzeug's threaded server, behind the signature check
    (and, when the state is kept, the persistence gate)."""

    def __init__(self, host: str, port: int, wrap: Any) -> None:
        from moto.moto_server.werkzeug_app import (
            DomainDispatcherApplication,
            MotoRequestHandler,
            create_backend_app,
        )
        from werkzeug.serving import ThreadedWSGIServer

        class Server(ThreadedWSGIServer):
            request_queue_size = BACKLOG

        dispatcher = DomainDispatcherApplication(create_backend_app)
        # moto looks for each request's backend anew: it lists its package's folders and
        # tries its services' URL patterns (0.3 ms of CPU a request, about a sixth of the
        # stack's work under the suite); a host's backend never changes, so it is kept.
        dispatcher.get_backend_for_host = functools.lru_cache(maxsize=256)(  # type: ignore[method-assign]
            dispatcher.get_backend_for_host
        )
        application = wrap(dispatcher)
        self.server = Server(host, port, application, handler=MotoRequestHandler)
        self.thread = threading.Thread(
            target=self.server.serve_forever, name="moto-server", daemon=True
        )

    def start(self) -> None:
        self.thread.start()

    def stop(self) -> None:
        self.server.shutdown()
        self.thread.join(timeout=10)
        self.server.server_close()


# API Gateway's largest request payload.
MAX_BODY = 10 * 1024 * 1024
# After refusing a body it has not read, the server discards what the client still sends for
# at most this long before closing: a close with unread data resets the connection, and a
# client still sending its body would lose the answer.
LINGER_SECONDS = 3.0
_DIGITS = re.compile(r"[0-9]{1,20}")
_CHUNK_SIZE = re.compile(rb"[0-9A-Fa-f]{1,16}")
MAX_TRAILER_LINES = 64


class BadRequestBody(Exception):
    """A request body refused before (or while) it is read: 400, or 413 over ``MAX_BODY``."""

    def __init__(self, message: str, status: int = 400) -> None:
        super().__init__(message)
        self.status = status


def _too_large() -> BadRequestBody:
    return BadRequestBody(f"request body larger than {MAX_BODY} bytes", 413)


def content_length(values: list[str]) -> int:
    """The body length the ``Content-Length`` headers declare (0 without one), checked before
    anything is read: not a number or several that disagree, 400; over ``MAX_BODY``, 413."""
    declared = {value.strip() for value in values}
    if not declared:
        return 0
    if len(declared) > 1:
        raise BadRequestBody("conflicting Content-Length headers")
    (raw,) = declared
    if not _DIGITS.fullmatch(raw):
        raise BadRequestBody("malformed Content-Length header")
    length = int(raw)
    if length > MAX_BODY:
        raise _too_large()
    return length


def _read_chunked(stream: Any) -> bytes:
    """A ``Transfer-Encoding: chunked`` body (RFC 9112 7.1), at most ``MAX_BODY`` bytes: a
    chunk that would pass the limit is refused from its size line, before it is read."""
    body = bytearray()
    while True:
        line = stream.readline(1024)
        size = line.split(b";", 1)[0].strip()
        if not line.endswith(b"\n") or not _CHUNK_SIZE.fullmatch(size):
            raise BadRequestBody("malformed chunked request body")
        length = int(size, 16)
        if len(body) + length > MAX_BODY:
            raise _too_large()
        if length == 0:
            for _ in range(MAX_TRAILER_LINES):
                if stream.readline(1024) in (b"\r\n", b"\n", b""):
                    return bytes(body)
            raise BadRequestBody("malformed chunked request body (too many trailer lines)")
        chunk = stream.read(length)
        if len(chunk) != length or stream.readline(3) not in (b"\r\n", b"\n"):
            raise BadRequestBody("malformed chunked request body")
        body += chunk


def _discard_until_closed(connection: socket.socket, seconds: float) -> None:
    """Half-close (the client sees the end of the answer), then read and drop what it still
    sends until it closes or ``seconds`` pass (Apache's "lingering close")."""
    deadline = time.monotonic() + seconds
    try:
        connection.shutdown(socket.SHUT_WR)
        while (left := deadline - time.monotonic()) > 0:
            connection.settimeout(left)
            if not connection.recv(65536):
                return
    except OSError:  # reset, timed out: nothing more to do
        return


def _request_handler() -> Any:
    from chalice.local import ChaliceRequestHandler, ForbiddenError

    from chalicelib.core.api.errors import NotFound, error_document

    class RegistryRequestHandler(ChaliceRequestHandler):
        """Unknown routes answer a JSON:API 404, not API Gateway's 403; bodies API Gateway
        would refuse are refused (413, 400) before they are read."""

        # Reply segments go out at once: with Nagle's algorithm each response waited ~40 ms
        # for the client's delayed ACK.
        disable_nagle_algorithm = True
        request_version: str  # BaseHTTPRequestHandler's (annotated: mypy loses it here)
        # A refusal left (part of) the body in the socket: the connection closes after it.
        body_left_unread = False

        def _send_error_response(self, error: Any) -> None:
            if isinstance(error, ForbiddenError) and self.path.startswith("/app/"):
                from chalicelib.web.view import HTML, unknown_page_html

                page = unknown_page_html(self.headers.get("cookie") or "")
                self._send_http_response(404, {"Content-Type": HTML}, page)
                return
            if isinstance(error, ForbiddenError):
                body = error_document(NotFound(f"no route for {self.command} {self.path}"))
                import json

                self._send_http_response(
                    404, {"Content-Type": "application/vnd.api+json"}, json.dumps(body)
                )
                return
            super()._send_error_response(error)

        def _is_chunked(self) -> bool:
            return "chunked" in (self.headers.get("transfer-encoding") or "").lower()

        def _parse_payload(self) -> tuple[dict[str, str], bytes | None]:
            """The body, read only once its declared size is within ``MAX_BODY`` (Chalice's
            own reader read any Content-Length whole). A chunked body (which API Gateway
            accepts) is handed on with its length: Chalice knows only Content-Length and left
            the chunks in the stream, where the next request on the connection tripped."""
            if not self._is_chunked():
                length = content_length(self.headers.get_all("content-length") or [])
                return dict(self.headers), (self.rfile.read(length) if length else None)
            body = _read_chunked(self.rfile)
            headers = {k: v for k, v in self.headers.items() if k.lower() != "transfer-encoding"}
            headers["Content-Length"] = str(len(body))
            return headers, body or None

        def _generic_handle(self) -> None:
            try:
                super()._generic_handle()
            except BadRequestBody as refused:
                self.body_left_unread = True
                self.send_error(refused.status, str(refused))

        # Chalice's class body binds these names to its own _generic_handle: without binding
        # them again here, the override above never ran (a refused body got no answer).
        do_GET = do_PUT = do_POST = do_HEAD = do_DELETE = do_PATCH = do_OPTIONS = _generic_handle

        def handle_expect_100(self) -> bool:
            """``Expect: 100-continue``: a body that would be refused is refused before the
            client sends it, not invited."""
            if not self._is_chunked():
                try:
                    content_length(self.headers.get_all("content-length") or [])
                except BadRequestBody as refused:
                    self.body_left_unread = True
                    self.send_error(refused.status, str(refused))
                    return False
            return super().handle_expect_100()

        def finish(self) -> None:
            super().finish()
            if self.body_left_unread:
                _discard_until_closed(self.connection, LINGER_SECONDS)

        def send_error(self, code: int, message: str | None = None, explain: str | None = None):
            """http.server's own refusals (an unknown method, a malformed request line, headers
            too long) and ours as JSON:API documents; an unknown method is a 405, not an HTML
            501, and an HTTP version it does not speak a 400, not a 505: no request is
            answered 5xx for what the client sent. The connection closes after it."""
            import json
            from http import HTTPStatus

            from chalicelib.core.api.errors import ApiError, MethodNotAllowed

            if code == HTTPStatus.NOT_IMPLEMENTED:
                error: ApiError = MethodNotAllowed(f"method {self.command!r} is not supported")
            else:
                status = 400 if code == HTTPStatus.HTTP_VERSION_NOT_SUPPORTED else int(code)
                try:  # `code in HTTPStatus` raises TypeError for an int on Python 3.11
                    phrase: str | None = HTTPStatus(status).phrase.lower()
                except ValueError:
                    phrase = None
                error = ApiError(message or "the request could not be read", title=phrase)
                error.status = status
            body = json.dumps(error_document(error)).encode()
            # An unreadable request line leaves http.server assuming HTTP/0.9, whose replies
            # have no status line or headers; the client gets a proper HTTP reply.
            if self.request_version == "HTTP/0.9":
                self.request_version = "HTTP/1.1"
            self.close_connection = True
            self.send_response(error.status)  # the standard phrase; the detail is in the body
            self.send_header("Content-Type", "application/vnd.api+json")
            self.send_header("Content-Length", str(len(body)))
            self.send_header("Connection", "close")
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
            if os.environ.get("REGISTRY_ACCESS_LOG", "1") != "0":
                super().log_message(format, *args)

        def log_request(self, code: Any = "-", size: Any = "-") -> None:
            """The app logs each request itself (chalicelib.core.observe: one short line,
            ``GET /path 200 12 ms 3 calls``); errors the server answers alone still print."""

    return RegistryRequestHandler


def _scanner_line() -> str:
    """What scans each uploaded module version here (the scan function's poller)."""
    from chalicelib.trust import trivy

    try:
        binary = trivy.locate_trivy()
    except trivy.TrivyUnavailable as missing:
        return f"  scans: none ({missing}): every version's scan is recorded failed"
    version, _ = trivy.identify(binary)
    return (
        f"  scans: Trivy {version or '(version unknown)'} at {binary}, offline, after each upload"
    )


def main() -> int:
    gc.disable()  # starting allocates much and frees little: collected once, before READY
    host = os.environ.get("HOST", "").strip() or "127.0.0.1"
    try:
        port = int(os.environ.get("PORT", "8000"))
        moto_port = int(os.environ.get("MOTO_PORT", "5000"))
        secure_port, catcher_port = https_port(), mail_port()
        ports = {"PORT": port, "MOTO_PORT": moto_port}
        if secure_port is not None:
            ports["HTTPS_PORT"] = secure_port
        check_free(host, ports)
        if catcher_port is not None:
            check_free("127.0.0.1", {"MAIL_PORT": catcher_port})
    except (ValueError, PortInUse) as exc:
        message = (
            str(exc)
            if isinstance(exc, PortInUse)
            else f"PORT, MOTO_PORT, HTTPS_PORT and MAIL_PORT: {exc}"
        )
        print(f"error: {message}", file=sys.stderr, flush=True)
        return 1
    except OSError as exc:  # HOST is not an address of this machine
        print(f"error: HOST={host}: {exc.strerror}", file=sys.stderr, flush=True)
        return 1
    _configure_environment(host, moto_port)
    public = set_public_url(host, port)  # before the settings are first read
    from chalicelib.core.observe import ReadableFormatter

    # The lines CloudWatch gets as JSON, readable: a request is `GET /path 200 12 ms 3 calls`.
    logging.basicConfig(level=logging.INFO)
    logging.getLogger().handlers[0].setFormatter(ReadableFormatter())
    # Library chatter a newcomer need not read at every start (one line per AWS client made).
    for noisy in ("werkzeug", "botocore.credentials", "pynamodb.settings", "mail.log"):
        logging.getLogger(noisy).setLevel(logging.WARNING)

    from chalice.config import Config
    from chalice.local import LocalDevServer, ThreadedHTTPServer

    from infrastructure import persistence
    from infrastructure.expiry import Sweeper, sweep_logged
    from infrastructure.s3_auth import SigV4Check, Verifier

    directory = data_dir()
    lock = restored = gate = saver = None
    if directory is not None:
        try:
            lock = persistence.lock_data_dir(directory)
            restored = persistence.restore(directory)  # before anything is provisioned
        except (
            persistence.DataDirInUse,
            persistence.DataDirNotPrivate,
            persistence.SnapshotError,
        ) as exc:
            print(f"error: {exc}", file=sys.stderr, flush=True)
            return 1

    make_moto_dynamodb_atomic()
    verifier = Verifier({os.environ["AWS_ACCESS_KEY_ID"]: os.environ["AWS_SECRET_ACCESS_KEY"]})

    def wrap(moto_app: Any) -> Any:
        nonlocal gate
        if directory is not None:
            gate = persistence.Gate(moto_app)
            moto_app = gate
        return SigV4Check(moto_app, verifier)

    moto = MotoServer(host, moto_port, wrap)
    moto.start()

    from app import app
    from chalicelib.accounts.users.service import bootstrap_admin
    from chalicelib.core.data.aws import client
    from chalicelib.core.settings import get_settings
    from infrastructure.resources import allow_browser_uploads, provision

    queue_url = provision()  # idempotent: a restored state already has it all
    origins = ui_origins(host, port)
    if secure_port is not None:  # the UI over HTTPS uploads from these origins
        origins.append(f"https://{link_host(host)}:{secure_port}")
        if host == "127.0.0.1":
            origins.append(f"https://localhost:{secure_port}")
        origins = list(dict.fromkeys(origins))
    allow_browser_uploads(origins)  # the web UI's upload page, as on AWS
    if restored is not None:
        # State saved before the lists kept counts and entries gets them (idempotent).
        from infrastructure.backfill import backfill_all

        backfill_all()
    admin, minted = bootstrap_admin(os.environ.get("REGISTRY_ADMIN_TOKEN") or None)
    from infrastructure import local_tls, mail_catcher

    catcher = None
    if catcher_port is not None:
        try:
            catcher = mail_catcher.MailCatcher(
                "127.0.0.1", catcher_port, page_url=printed_url(host, port) + mail_catcher.PAGE
            )
        except ImportError:  # aiosmtpd comes with requirements-dev.txt, which make run installs
            print("  (no mail catcher: aiosmtpd is not installed; see requirements-dev.txt)")
        else:
            catcher.start()
            mail_catcher.install(app, catcher)
    mail_line = mail_catcher.adopt_smtp_settings(catcher, directory)
    tls = scratch = None
    if secure_port is not None:
        if directory is None:  # memory only: the certificates last as long as the process
            scratch = tempfile.TemporaryDirectory(prefix="registry-tls-")
        kept = Path(scratch.name) if scratch is not None else directory
        assert kept is not None
        tls = local_tls.ensure(kept / "tls", host)
    if directory is not None and gate is not None:
        interval = float(os.environ.get("REGISTRY_SNAPSHOT_SECONDS") or 5)
        saver = persistence.Saver(directory, gate, interval=interval, before_save=sweep_logged)
        saver.save(force=True)
        saver.start()
    sweeper = Sweeper(float(os.environ.get("REGISTRY_TTL_SWEEP_SECONDS") or 60))
    sweeper.start()
    deadline_sweeper = DeadlineSweeper(
        float(os.environ.get("REGISTRY_DEADLINE_SWEEP_SECONDS") or 30)
    )
    deadline_sweeper.start()
    poller = Poller(queue_url, "ingest", handle_ingest)
    poller.start()
    # Scan jobs, as the ScanFunction in AWS (the scanner: Trivy, found beside the venv's
    # Python or on PATH).
    scan_url = client("sqs").get_queue_url(QueueName=get_settings().scan_queue)["QueueUrl"]
    scan_poller = Poller(scan_url, "scan", handle_scan)
    scan_poller.start()
    # Bundle jobs and the module cache's background fetches, as the Transfers function.
    transfers_url = client("sqs").get_queue_url(QueueName=get_settings().transfers_queue)[
        "QueueUrl"
    ]
    transfers_poller = Poller(transfers_url, "transfers", handle_transfer)
    transfers_poller.start()
    # The module-downloads stream into the modules' kept totals, as the DownloadTotals
    # function in AWS.
    from infrastructure.streams import StreamPoller, download_totals_reader

    totals_poller = StreamPoller(download_totals_reader())
    totals_poller.start()
    # The audit-events stream into the local bucket and log group, as the AuditExport
    # function in AWS; where it stopped is kept beside the state, so a restart (which brings
    # the stream back with the tables) exports nothing twice.
    from infrastructure.streams import audit_export_reader

    checkpoint = directory / AUDIT_CHECKPOINT if directory is not None else None
    audit_poller = StreamPoller(audit_export_reader(checkpoint=checkpoint))
    audit_poller.start()
    # The same stream read a second time, with its own place, into the notifications queue
    # (as the NotificationsFanOut function in AWS), and that queue's deliveries and mail (as
    # the NotificationsDelivery function).
    from infrastructure.streams import notifications_reader

    notify_checkpoint = directory / NOTIFY_CHECKPOINT if directory is not None else None
    # A restored state first read by this reader (kept before it existed) is read from now
    # on, as the function's mapping starts at LATEST: past changes are not told again.
    first_time = notify_checkpoint is not None and not notify_checkpoint.exists()
    start = "LATEST" if restored is not None and first_time else "TRIM_HORIZON"
    notify_reader = notifications_reader(start, checkpoint=notify_checkpoint)
    notify_reader.open()  # its place taken now, before the API serves a request
    notify_poller = StreamPoller(notify_reader)
    notify_poller.start()
    notify_url = client("sqs").get_queue_url(QueueName=get_settings().notify_queue)["QueueUrl"]
    delivery_poller = Poller(notify_url, "notify", handle_notification)
    delivery_poller.start()

    class ApiServer(ThreadedHTTPServer):
        request_queue_size = BACKLOG

    config = Config.create(chalice_stage="dev", app_name=app.app_name)
    server = LocalDevServer(
        app, config, host, port, handler_cls=_request_handler(), server_cls=ApiServer
    )

    secure = secure_thread = None
    if tls is not None and secure_port is not None:
        secure = LocalDevServer(
            app,
            config,
            host,
            secure_port,
            handler_cls=_request_handler(),
            server_cls=tls_server(ApiServer, tls.server_context()),
        )
        secure_thread = threading.Thread(
            target=secure.server.serve_forever, name="https-server", daemon=True
        )
        secure_thread.start()

    def stop(*_: Any) -> None:
        threading.Thread(target=server.shutdown, daemon=True).start()

    signal.signal(signal.SIGTERM, stop)
    settings = get_settings()
    url = printed_url(host, port)
    print(f"Registry ({settings.edition}) listening on {url}", flush=True)
    print(f"  web UI: {url}/ (sign in with the token below)", flush=True)
    if tls is not None:
        secure_url = f"https://{link_host(host)}:{secure_port}"
        print(f"  HTTPS: {secure_url} (certificate from the local CA {tls.ca_cert})", flush=True)
        print(
            f"  terraform trusts it after: export SSL_CERT_FILE={tls.bundle}"
            " (the system's CAs plus the local CA)",
            flush=True,
        )
        print(
            f"  terraform host: {link_host(host)}:{secure_port} (module sources"
            f" {link_host(host)}:{secure_port}/ORG/NAME/PROVIDER, terraform login"
            f" {link_host(host)}:{secure_port}; no CLI configuration needed)",
            flush=True,
        )
    print(f"  mailed links name {public} (REGISTRY_PUBLIC_URL)", flush=True)
    print(mail_line, flush=True)
    print(
        f"  moto (S3, DynamoDB, SQS, KMS, CloudWatch Logs) on {os.environ['AWS_ENDPOINT_URL']}"
        " (SigV4-signed requests only)",
        flush=True,
    )
    print(_scanner_line(), flush=True)
    if directory is None:
        print("  state: in memory only (REGISTRY_DATA_DIR is empty)", flush=True)
    elif restored is not None:
        print(
            f"  state: {directory} (restored, saved {restored:%Y-%m-%d %H:%M:%S} UTC)", flush=True
        )
    else:
        print(f"  state: {directory} (new)", flush=True)
    if minted:
        print(f"  site admin '{admin.username}' token (shown once): {minted}", flush=True)
    elif os.environ.get("REGISTRY_ADMIN_TOKEN"):
        print(f"  site admin '{admin.username}' uses REGISTRY_ADMIN_TOKEN", flush=True)
    else:
        print(
            f"  site admin '{admin.username}' keeps the token shown at its first start", flush=True
        )
    # What is alive now (modules, botocore's models, moto's backends) lives as long as the
    # process: the collector need not scan it again at each full collection.
    gc.collect()
    gc.freeze()
    gc.enable()
    try:
        print("READY", flush=True)  # inside: a Ctrl-C right after it stops cleanly too
        server.server.serve_forever(poll_interval=0.2)
    except KeyboardInterrupt:
        pass
    finally:
        poller.stopping.set()
        scan_poller.stopping.set()
        transfers_poller.stopping.set()
        totals_poller.stopping.set()
        audit_poller.stopping.set()
        notify_poller.stopping.set()
        delivery_poller.stopping.set()
        sweeper.stopping.set()
        deadline_sweeper.stopping.set()
        server.server.server_close()
        if secure is not None and secure_thread is not None:
            secure.server.shutdown()
            secure_thread.join(timeout=5)
            secure.server.server_close()
        if catcher is not None:
            catcher.stop()
        if scratch is not None:
            scratch.cleanup()
        poller.join(timeout=3)
        scan_poller.join(timeout=3)
        transfers_poller.join(timeout=3)
        totals_poller.join(timeout=3)
        audit_poller.join(timeout=3)
        notify_poller.join(timeout=3)
        delivery_poller.join(timeout=3)
        try:
            audit_poller.reader.drain()  # the events of the last moments, before moto goes
        except Exception:  # noqa: BLE001 - report, and still stop (they go at the next start)
            logging.getLogger("registry.streams").exception("exporting audit events failed")
        sweeper.join(timeout=10)
        deadline_sweeper.join(timeout=10)
        if saver is not None:
            try:
                saver.stop()  # the last changes, before moto goes away
            except Exception:  # noqa: BLE001 - report, and still stop
                logging.getLogger("registry.persistence").exception("saving the state failed")
        moto.stop()
        if lock is not None:
            lock.close()
        print("stopped", flush=True)
        # Everything still alive (moto's state, botocore's models) dies with the process: the
        # interpreter's last full collection over it took seconds for nothing.
        gc.freeze()
    return 0


if __name__ == "__main__":
    sys.exit(main())
