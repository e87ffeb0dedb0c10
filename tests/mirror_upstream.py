"""A local stand-in for a public registry's ``providers.v1`` protocol (never the internet):
one provider, ``hashicorp/fake``, with small zip archives, and a log of every request so
tests can tell whether the cache called it. ``mode`` makes it fail: ``"error"`` (500),
``"slow"`` (answers after ``delay`` seconds), ``"bad-shasum"`` (an archive that is not
what its ``shasum`` says), ``"huge"`` (an archive past any small cap)."""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import threading
import time
import zipfile
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

NAMESPACE, TYPE = "hashicorp", "fake"


def provider_zip(version: str, os_: str, arch: str, binary: bytes | None = None) -> bytes:
    """A provider package: one executable file named as terraform expects."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        info = zipfile.ZipInfo(f"terraform-provider-{TYPE}_v{version}")
        info.external_attr = 0o755 << 16
        content = binary if binary is not None else f"fake {version} {os_}_{arch}\n".encode()
        archive.writestr(info, content)
        archive.writestr("LICENSE", "MIT\n")
    return buffer.getvalue()


def filename(version: str, os_: str, arch: str) -> str:
    return f"terraform-provider-{TYPE}_{version}_{os_}_{arch}.zip"


class Upstream:
    def __init__(self, versions: dict[str, list[str]], binary: bytes | None = None) -> None:
        self.versions = versions
        self.requests: list[str] = []
        self.mode = ""
        self.delay = 2.0
        self.zips = {
            (v, p): provider_zip(v, *p.split("_", 1), binary=binary)
            for v, platforms in versions.items()
            for p in platforms
        }
        upstream = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_GET(self) -> None:  # noqa: N802
                upstream.requests.append(self.path)
                if upstream.mode == "slow":
                    time.sleep(upstream.delay)
                if upstream.mode == "error":
                    return self._send(500, b'{"errors":["boom"]}')
                status, body = upstream.answer(self.path)
                self._send(status, body)

            def _send(self, status: int, body: bytes) -> None:
                self.send_response(status)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                with contextlib.suppress(OSError):
                    self.wfile.write(body)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def answer(self, path: str) -> tuple[int, bytes]:
        base = f"/v1/providers/{NAMESPACE}/{TYPE}/"
        if path == base + "versions":
            listed = [
                {
                    "version": v,
                    "protocols": ["5.0"],
                    "platforms": [
                        dict(zip(("os", "arch"), p.split("_", 1), strict=True)) for p in platforms
                    ],
                }
                for v, platforms in self.versions.items()
            ]
            return 200, json.dumps({"versions": listed}).encode()
        if path.startswith(base) and "/download/" in path:
            version, _, os_, arch = path[len(base) :].split("/")
            archive = self.zips.get((version, f"{os_}_{arch}"))
            if archive is None:
                return 404, b'{"errors":["not found"]}'
            shasum = hashlib.sha256(archive).hexdigest()
            if self.mode == "bad-shasum":
                shasum = "0" * 64
            found = {
                "os": os_,
                "arch": arch,
                "filename": filename(version, os_, arch),
                "download_url": f"/files/{version}/{os_}_{arch}",
                "shasum": shasum,
            }
            return 200, json.dumps(found).encode()
        if path.startswith("/files/"):
            version, platform = path[len("/files/") :].split("/")
            archive = self.zips.get((version, platform))
            if archive is None:
                return 404, b"missing"
            if self.mode == "huge":
                archive += b"\0" * 4096
            return 200, archive
        return 404, b'{"errors":["not found"]}'
