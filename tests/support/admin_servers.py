"""Local stand-ins for the outside world of the admin settings: SMTP servers and an SMS API.

All listen on 127.0.0.1 at a free port and stop when their ``with`` block ends.
"""

from __future__ import annotations

import asyncio
import base64
import json
import socket
import threading
import urllib.parse
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from email import message_from_bytes
from email.message import Message
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from aiosmtpd.controller import Controller
from aiosmtpd.smtp import AuthResult, LoginPassword

SMTP_USER = "mailer"
SMTP_PASSWORD = "smtp-pa55-word-never-shown"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@dataclass
class Mailbox:
    """What an SMTP server received: parsed messages and the logins it saw."""

    messages: list[Message] = field(default_factory=list)
    envelopes: list[tuple[str, list[str]]] = field(default_factory=list)
    logins: list[str] = field(default_factory=list)
    reject_data: bool = False
    delay: float = 0.0  # seconds to wait before answering DATA (a slow mail server)

    async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:  # noqa: N802
        if self.delay:
            await asyncio.sleep(self.delay)
        if self.reject_data:
            return "554 5.6.0 message rejected by policy"
        self.envelopes.append((envelope.mail_from, list(envelope.rcpt_tos)))
        self.messages.append(message_from_bytes(envelope.content))
        return "250 OK"


def _authenticator(mailbox: Mailbox, accept: bool) -> Any:
    def authenticate(server: Any, session: Any, envelope: Any, mechanism: str, data: Any) -> Any:
        ok = (
            accept
            and isinstance(data, LoginPassword)
            and data.login.decode() == SMTP_USER
            and data.password.decode() == SMTP_PASSWORD
        )
        if ok:
            mailbox.logins.append(mechanism)
        return AuthResult(success=ok, handled=False)

    return authenticate


@contextmanager
def smtp_server(*, accept_credentials: bool = True) -> Iterator[tuple[int, Mailbox]]:
    """A real SMTP server (aiosmtpd) offering AUTH PLAIN/LOGIN without TLS."""
    mailbox = Mailbox()
    port = free_port()
    controller = Controller(
        mailbox,
        hostname="127.0.0.1",
        port=port,
        authenticator=_authenticator(mailbox, accept_credentials),
        auth_require_tls=False,
    )
    controller.start()
    try:
        yield port, mailbox
    finally:
        controller.stop()


def use_smtp(api: Any, port: int) -> None:
    """Point the site's SMTP settings (through the admin API of ``api``, a tests.conftest.Api
    as the site admin) at the local server on ``port``, without authentication."""
    settings = {
        "data": {
            "type": "smtp-settings",
            "attributes": {
                "enabled": True,
                "host": "127.0.0.1",
                "port": port,
                "sender": "registry@example.com",
                "auth": "none",
                "test-email-address": "ops@example.com",
            },
        }
    }
    assert api.patch("/api/v2/admin/smtp-settings", settings).status == 200


@contextmanager
def silent_server() -> Iterator[int]:
    """Accepts TCP connections and never says a word (an SMTP server that hangs)."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    held: list[socket.socket] = []
    stopping = threading.Event()

    def accept() -> None:
        listener.settimeout(0.1)
        while not stopping.is_set():
            try:
                conn, _ = listener.accept()
                held.append(conn)
            except OSError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        yield listener.getsockname()[1]
    finally:
        stopping.set()
        thread.join(timeout=2)
        for conn in held:
            conn.close()
        listener.close()


@dataclass
class SmsProvider:
    """What the fake SMS API received, and the credentials it accepts."""

    url: str
    account_sid: str
    auth_token: str
    sent: list[dict[str, Any]] = field(default_factory=list)


@contextmanager
def sms_provider(account_sid: str, auth_token: str) -> Iterator[SmsProvider]:
    """The provider's messages API: ``POST /2010-04-01/Accounts/{sid}/Messages.json``."""
    state = SmsProvider("", account_sid, auth_token)

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802
            length = int(self.headers.get("Content-Length") or 0)
            form = dict(urllib.parse.parse_qsl(self.rfile.read(length).decode()))
            expected = "Basic " + base64.b64encode(f"{account_sid}:{auth_token}".encode()).decode()
            path_ok = self.path == f"/2010-04-01/Accounts/{account_sid}/Messages.json"
            if self.headers.get("Authorization") != expected or not path_ok:
                self._reply(401, {"code": 20003, "message": "Authenticate"})
                return
            state.sent.append({"path": self.path, **form})
            self._reply(201, {"sid": "SM" + "0" * 32, "status": "queued", "to": form.get("To")})

        def _reply(self, status: int, body: dict[str, Any]) -> None:
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    state.url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05})
    thread.daemon = True
    thread.start()
    try:
        yield state
    finally:
        server.shutdown()
        server.server_close()


def self_signed_certificate(common_name: str = "idp.example.test") -> str:
    """A fresh PEM X.509 certificate (what an identity provider hands out)."""
    from datetime import UTC, datetime, timedelta

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])
    moment = datetime.now(UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(moment - timedelta(days=1))
        .not_valid_after(moment + timedelta(days=365))
        .sign(key, hashes.SHA256())
    )
    return cert.public_bytes(serialization.Encoding.PEM).decode()


def text_of(message: Message) -> str:
    parts = message.walk() if message.is_multipart() else [message]
    found = []
    for part in parts:
        if part.get_content_type() == "text/plain":
            payload = part.get_payload(decode=True)
            assert isinstance(payload, bytes)
            found.append(payload.decode(part.get_content_charset() or "utf-8"))
    return "\n".join(found)
