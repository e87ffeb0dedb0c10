"""A local HTTP destination for notifications (a generic webhook): it records every request
(headers, body) and answers each with the next status of its script, the last one
repeated, so a test can check what a destination received and how the registry keeps a
failing one. Listens on 127.0.0.1 at a free port; stops when its block ends."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, NamedTuple

ANSWER = b'{"ok":true}'


class Received(NamedTuple):
    headers: dict[str, str]
    body: bytes


@dataclass
class Receiver:
    answers: list[int] = field(default_factory=lambda: [202])
    received: list[Received] = field(default_factory=list)
    port: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def status(self) -> int:
        return self.answers[0]

    @status.setter
    def status(self, value: int) -> None:
        """Answer ``value`` from now on."""
        with self.lock:
            self.answers = [value]

    def url(self, host: str = "127.0.0.1") -> str:
        """Its URL naming ``host`` (the shared e2e stack allows ``localhost``, not loopback
        addresses)."""
        return f"http://{host}:{self.port}/hook"

    def next_status(self) -> int:
        with self.lock:
            return self.answers.pop(0) if len(self.answers) > 1 else self.answers[0]


@contextmanager
def receiver(*answers: int) -> Iterator[Receiver]:
    """``answers``: the statuses to answer, in order (202 by default)."""
    state = Receiver(answers=list(answers) or [202])

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 - http.server's name
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            with state.lock:
                state.received.append(Received(dict(self.headers.items()), body))
            status = state.next_status()
            answer = ANSWER if status < 300 else b"destination failed"
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(answer)))
            self.end_headers()
            self.wfile.write(answer)

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    state.port = server.server_address[1]
    threading.Thread(
        target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
    ).start()
    try:
        yield state
    finally:
        server.shutdown()
        server.server_close()
