"""A local HTTP destination for notifications: records every request (headers, body) and
answers ``status``, so a test can check what a destination received and how the registry
keeps a failing one."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

ANSWER = b'{"ok":true}'


@dataclass
class Receiver:
    status: int = 202
    received: list[tuple[dict[str, str], bytes]] = field(default_factory=list)
    port: int = 0

    def url(self, host: str = "127.0.0.1") -> str:
        return f"http://{host}:{self.port}/hook"


@contextmanager
def receiver() -> Iterator[Receiver]:
    state = Receiver()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 - http.server's name
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            state.received.append((dict(self.headers.items()), body))
            self.send_response(state.status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(ANSWER)))
            self.end_headers()
            self.wfile.write(ANSWER)

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    state.port = server.server_address[1]
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield state
    finally:
        server.shutdown()
        server.server_close()
