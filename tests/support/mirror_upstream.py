"""A local stand-in for a public registry's ``providers.v1`` protocol (never the internet):
one provider, ``hashicorp/fake``, with small zip archives, and a log of every request so
tests can tell whether the cache called it. ``mode`` makes it fail: ``"error"`` (500),
``"slow"`` (answers only once ``released`` is set), ``"bad-shasum"`` (an archive that is not
what its ``shasum`` says), ``"huge"`` (an archive past any small cap).

Every version has a SHA256SUMS of its archives, signed (binary, detached) by ``signer``,
whose public key the download answer announces as terraform's registry protocol does. The
modes that break it: ``"forged-signature"`` (the right key signed other bytes),
``"wrong-key"`` (signed by a key the upstream does not announce), ``"unlisted"`` (SHA256SUMS
lists the other archives only), ``"no-signature"`` (the signature file is missing),
``"no-signature-url"`` (the download answer names none), ``"garbage-key"`` (the
announced key is no OpenPGP key), ``"other-archive"`` (SHA256SUMS
lists other bytes under the archive's name). ``redirects`` maps a path to where a 302 sends
it. ``Listener`` stands for a port the registry must never be made to connect to (the cloud's
metadata service, an internal port)."""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import re
import socket
import threading
import zipfile
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit

from tests.support.provider_files import SigningKey, new_signing_key, shasums

NAMESPACE, TYPE = "hashicorp", "fake"
_SIGNERS: dict[str, SigningKey] = {}


def signing_key(name: str = "Fake Upstream Signer") -> SigningKey:
    """One throwaway key per name for the whole run (an RSA key takes a while to make)."""
    if name not in _SIGNERS:
        _SIGNERS[name] = new_signing_key(name)
    return _SIGNERS[name]


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
        self.redirects: dict[str, str] = {}
        self.mode = ""
        # "slow" holds each answer until the test sets this (or 30 s pass): slower than any
        # timeout however fast or loaded the machine.
        self.released = threading.Event()
        self.signer = signing_key()
        # modules.v1 (the module cache's upstream): "namespace/name/provider" -> {version:
        # where its download answer points}, with ``files`` (path -> bytes) served as they
        # are (tarballs the answers point to); ``json_locations``: download answers as a
        # JSON ``location`` rather than ``X-Terraform-Get``.
        self.modules: dict[str, dict[str, str]] = {}
        # a version's detail document: "namespace/name/provider/version" -> what it answers
        self.module_details: dict[str, Any] = {}
        self.files: dict[str, bytes] = {}
        self.json_locations = False
        # ``/.well-known/terraform.json``: None answers 404 (the modules under
        # ``/v1/modules/``); else the document, and the modules served under its
        # ``modules.v1`` path (a TFE's, a GitLab's: ``/api/registry/v1/modules/``).
        self.discovery: dict[str, Any] | None = None
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
                    upstream.released.wait(30)
                if upstream.mode == "error":
                    return self._send(500, b'{"errors":["boom"]}')
                if self.path == "/.well-known/terraform.json" and upstream.discovery:
                    return self._send(200, json.dumps(upstream.discovery).encode())
                if self.path in upstream.redirects:
                    return self._send(302, b"", Location=upstream.redirects[self.path])
                if upstream.module_location(self.path) is not None:
                    location = upstream.module_location(self.path) or ""
                    if upstream.json_locations:
                        return self._send(200, json.dumps({"location": location}).encode())
                    return self._send(204, b"", **{"X-Terraform-Get": location})
                status, body = upstream.answer(self.path)
                self._send(status, body)

            def _send(self, status: int, body: bytes, **headers: str) -> None:
                self.send_response(status)
                for name, value in headers.items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                with contextlib.suppress(OSError):
                    self.wfile.write(body)

        self._handler = Handler
        self._serve(0)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"

    def _serve(self, port: int) -> None:
        self.server = ThreadingHTTPServer(("127.0.0.1", port), self._handler)
        threading.Thread(
            target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        ).start()

    def close(self) -> None:
        self.released.set()
        self.server.shutdown()
        self.server.server_close()

    def stop(self) -> None:
        """Stop listening (a connection is refused, as to a registry that is down) until
        ``start``."""
        self.server.shutdown()
        self.server.server_close()

    def start(self) -> None:
        """Listen again, on the same port (the stack keeps the same upstream URL)."""
        self._serve(int(self.url.rsplit(":", 1)[1]))

    def _module_parts(self, path: str) -> list[str]:
        """The path's parts under the modules.v1 prefix; [] outside it."""
        prefix = urlsplit(str((self.discovery or {}).get("modules.v1", "/v1/modules/"))).path
        return path[len(prefix) :].split("/") if path.startswith(prefix) else []

    def module_location(self, path: str) -> str | None:
        """Where a module version's ``download`` answer points; None for any other path."""
        parts = self._module_parts(path)
        if len(parts) != 5 or parts[4] != "download":
            return None
        return self.modules.get("/".join(parts[:3]), {}).get(parts[3])

    def module_versions(self, path: str) -> tuple[int, bytes] | None:
        parts = self._module_parts(path)
        if len(parts) != 4 or parts[3] != "versions":
            return None
        found = self.modules.get("/".join(parts[:3]))
        if found is None:
            return 404, b'{"errors":["not found"]}'
        listed = [{"version": v} for v in found]
        return 200, json.dumps({"modules": [{"versions": listed}]}).encode()

    def module_detail(self, path: str) -> tuple[int, bytes] | None:
        parts = self._module_parts(path)
        found = self.module_details.get("/".join(parts)) if len(parts) == 4 else None
        return None if found is None else (200, json.dumps(found).encode())

    def answer(self, path: str) -> tuple[int, bytes]:
        if (versions := self.module_versions(path)) is not None:
            return versions
        if (detail := self.module_detail(path)) is not None:
            return detail
        if path in self.files:
            return 200, self.files[path]
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
                "shasums_url": f"/files/{version}/SHA256SUMS",
                "shasums_signature_url": f"/files/{version}/SHA256SUMS.sig",
                "signing_keys": {
                    "gpg_public_keys": [
                        {
                            "key_id": self.signer.key_id,
                            "ascii_armor": self.signer.armor,
                            "trust_signature": "",
                            "source": "HashiCorp",
                            "source_url": "https://www.hashicorp.com/security.html",
                        }
                    ]
                },
            }
            if self.mode == "no-signature-url":
                del found["shasums_signature_url"]
            if self.mode == "garbage-key":
                armor = "-----BEGIN PGP PUBLIC KEY BLOCK-----\n\ngarbage\n"
                found["signing_keys"]["gpg_public_keys"][0]["ascii_armor"] = armor
            return 200, json.dumps(found).encode()
        if path.startswith("/files/") and path.endswith(("/SHA256SUMS", "/SHA256SUMS.sig")):
            version, name = path[len("/files/") :].split("/")
            return self.sums(version, signature=name.endswith(".sig"))
        if path.startswith("/files/"):
            version, platform = path[len("/files/") :].split("/")
            archive = self.zips.get((version, platform))
            if archive is None:
                return 404, b"missing"
            if self.mode == "huge":
                archive += b"\0" * 4096
            return 200, archive
        return 404, b'{"errors":["not found"]}'

    def sums(self, version: str, signature: bool) -> tuple[int, bytes]:
        """The version's SHA256SUMS, or its signature, as the mode makes them."""
        if version not in self.versions:
            return 404, b"missing"
        files = {
            filename(version, *p.split("_", 1)): archive
            for (v, p), archive in self.zips.items()
            if v == version
        }
        if self.mode == "unlisted":
            files = {"terraform-provider-fake_manifest.json": b"{}"}
        if self.mode == "other-archive":
            files = {name: archive + b"other" for name, archive in files.items()}
        listed = shasums(files)
        if not signature:
            return 200, listed
        if self.mode == "no-signature":
            return 404, b"missing"
        if self.mode == "forged-signature":
            return 200, self.signer.sign(listed + b"# forged\n")
        if self.mode == "wrong-key":
            return 200, signing_key("Someone Else").sign(listed)
        return 200, self.signer.sign(listed)


class Listener:
    """A TCP port on ``host`` that records every connection made to it and answers each with
    ``ANSWER``, what an internal service might say: a caller must never be told any of it."""

    ANSWER = (
        b"HTTP/1.0 418 internal-secret-banner\r\nContent-Length: 20\r\n\r\nAKIA-INTERNAL-SECRET"
    )

    def __init__(self, host: str = "127.0.0.1") -> None:
        self.connections: list[Any] = []
        self.sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET)
        self.sock.bind((host, 0))
        self.sock.listen(8)
        self.port = self.sock.getsockname()[1]
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                conn, peer = self.sock.accept()
            except OSError:
                return  # closed
            self.connections.append(peer)
            with conn, contextlib.suppress(OSError):
                conn.settimeout(2)
                conn.recv(65536)
                conn.sendall(self.ANSWER)

    @staticmethod
    def told(text: str) -> bool:
        """Whether ``text`` holds anything of ``ANSWER``: its status as a number of its own
        (a random port such as 34187 may hold the digits), its reason or its body."""
        return bool(re.search(r"\b418\b", text)) or any(
            said in text for said in ("internal-secret-banner", "AKIA-INTERNAL-SECRET")
        )

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self.sock.shutdown(socket.SHUT_RDWR)  # wakes the accept() above
        self.sock.close()
