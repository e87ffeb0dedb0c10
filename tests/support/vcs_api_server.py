"""A stand-in for VCS hosts' REST APIs on 127.0.0.1, for the webhook registration tests.

It records every request (method, path, headers, JSON body) and answers as GitHub, GitLab
and Bitbucket do for webhooks: a POST to a hooks collection creates one (201 with its id,
``uuid`` for Bitbucket Cloud), a DELETE removes it (204), an unknown hook is 404. Setting
``refuse`` makes every request answer that status instead.
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Recorded:
    method: str
    path: str
    headers: dict[str, str]
    body: Any


@dataclass
class VcsApi:
    requests: list[Recorded] = field(default_factory=list)
    hooks: dict[str, dict[str, Any]] = field(default_factory=dict)
    refuse: int | None = None
    created: int = 0

    def __post_init__(self) -> None:
        api = self

        class Handler(BaseHTTPRequestHandler):
            def _answer(self, status: int, body: Any = None) -> None:
                data = json.dumps(body).encode() if body is not None else b""
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _record(self) -> Recorded:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                entry = Recorded(
                    self.command,
                    self.path,
                    {k.lower(): v for k, v in self.headers.items()},
                    json.loads(raw) if raw else None,
                )
                api.requests.append(entry)
                return entry

            def do_POST(self) -> None:  # noqa: N802 - http.server's naming
                entry = self._record()
                if api.refuse:
                    return self._answer(api.refuse, {"message": "refused"})
                api.created += 1
                hook_id = str(api.created)
                api.hooks[hook_id] = {"path": entry.path, "body": entry.body}
                key = "uuid" if entry.path.startswith("/2.0/") else "id"
                self._answer(201, {key: hook_id if key == "uuid" else int(hook_id)})

            def do_DELETE(self) -> None:  # noqa: N802
                entry = self._record()
                if api.refuse:
                    return self._answer(api.refuse, {"message": "refused"})
                hook_id = entry.path.rsplit("/", 1)[-1]
                if api.hooks.pop(hook_id, None) is None:
                    return self._answer(404, {"message": "Not Found"})
                self._answer(204)

            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_port}"
        self.thread = threading.Thread(
            target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )

    def __enter__(self) -> VcsApi:
        self.thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.server.shutdown()
        self.server.server_close()
