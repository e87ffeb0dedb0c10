"""A local HTTP listener standing in for a notification destination (a generic webhook):
it keeps every request it receives and answers each with the next status of its script
(the last one repeated). Listens on 127.0.0.1 at a free port; stops when its block ends."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Received:
    path: str
    headers: dict[str, str]
    body: bytes


@dataclass
class Listener:
    url: str = ""
    answers: list[int] = field(default_factory=lambda: [202])
    received: list[Received] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def next_status(self) -> int:
        with self.lock:
            return self.answers.pop(0) if len(self.answers) > 1 else self.answers[0]


@contextmanager
def listener(*answers: int, name: str = "127.0.0.1") -> Iterator[Listener]:
    """``answers``: the statuses to answer, in order; ``name``: the host the URL names (the
    shared e2e stack allows ``localhost`` only)."""
    state = Listener(answers=list(answers) or [202])

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length)
            with state.lock:
                state.received.append(Received(self.path, dict(self.headers.items()), body))
            status = state.next_status()
            answer = b'{"ok":true}' if status < 300 else b"destination failed"
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(answer)))
            self.end_headers()
            self.wfile.write(answer)

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    state.url = f"http://{name}:{server.server_address[1]}/hook"
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05})
    thread.daemon = True
    thread.start()
    try:
        yield state
    finally:
        server.shutdown()
        server.server_close()
