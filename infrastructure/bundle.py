"""Export an air-gapped bundle from one registry, import it into another, through each
registry's site-admin API (``chalicelib.bundles``) with a site admin's token:

    python -m infrastructure.bundle export --url https://registry-a.example --token $A \\
        --module acme/acme/vpc/aws@">= 1.0" --provider acme/acme/mycloud@"~> 2.1" \\
        --platform linux_amd64 -o bundle.tar
    python -m infrastructure.bundle import --url https://registry-b.example --token $B bundle.tar

The token may come from ``REGISTRY_TOKEN`` instead. The bundle itself moves through
presigned S3 links (never through the API), streamed in 1 MiB chunks both ways. Each step
prints a progress line. ``import`` prints each entry's outcome and exits 0 when all were
created or skipped, 1 when some were refused, 2 when the bundle was refused as a whole
(or the job failed).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

CHUNK = 1024 * 1024
EXPORTS = "/api/v2/admin/bundle-exports"
IMPORTS = "/api/v2/admin/bundle-imports"
JSONAPI = "application/vnd.api+json"


class Failed(Exception):
    pass


def say(line: str) -> None:
    print(line, flush=True)


class Registry:
    def __init__(self, url: str, token: str) -> None:
        self.url = url.rstrip("/")
        self.token = token

    def call(self, method: str, path: str, body: Any = None) -> dict[str, Any]:
        data = json.dumps(body).encode() if body is not None else None
        request = urllib.request.Request(self.url + path, data=data, method=method)
        request.add_header("Authorization", f"Bearer {self.token}")
        request.add_header("Content-Type", JSONAPI)
        try:
            with urllib.request.urlopen(request, timeout=60) as answer:  # noqa: S310 - an operator's URL
                return json.loads(answer.read() or b"{}")
        except urllib.error.HTTPError as exc:
            detail = exc.read()[:2000].decode("utf-8", "replace")
            raise Failed(f"{method} {path}: {exc.code} {detail}") from None

    def wait(self, path: str, poll: float, timeout: float) -> dict[str, Any]:
        """The job once it is finished or failed, with a line at each change."""
        deadline = time.monotonic() + timeout
        last = None
        while True:
            job = self.call("GET", path)["data"]
            attributes = job["attributes"]
            seen = (attributes["status"], len(attributes.get("report") or []))
            if seen != last:
                say(f"  {job['id']}: {seen[0]} ({seen[1]} entries so far)")
                last = seen
            if attributes["status"] in ("finished", "failed"):
                return job
            if time.monotonic() > deadline:
                raise Failed(f"{job['id']} is still {attributes['status']} after {timeout} s")
            time.sleep(poll)


def _choice(text: str, platforms: list[str] | None = None) -> dict[str, Any]:
    address, _, constraint = text.partition("@")
    out: dict[str, Any] = {"address": address, "version": constraint}
    if platforms is not None:
        out["platforms"] = platforms
    return out


def _download(url: str, target: Path) -> tuple[int, str]:
    digest, size, reported = hashlib.sha256(), 0, 0
    with urllib.request.urlopen(url, timeout=60) as answer, target.open("wb") as out:  # noqa: S310
        while chunk := answer.read(CHUNK):
            out.write(chunk)
            digest.update(chunk)
            size += len(chunk)
            if size - reported >= 64 * CHUNK:
                say(f"  downloaded {size // CHUNK} MiB")
                reported = size
    return size, digest.hexdigest()


def _upload(url: str, source: Path) -> None:
    size = source.stat().st_size
    with source.open("rb") as body:
        request = urllib.request.Request(url, data=body, method="PUT")
        request.add_header("Content-Length", str(size))
        # Not urllib's default (a form): a server would try to parse the bundle as one.
        request.add_header("Content-Type", "application/x-tar")
        with urllib.request.urlopen(request, timeout=600) as answer:  # noqa: S310
            answer.read()
    say(f"  uploaded {size} bytes")


def export(args: argparse.Namespace) -> int:
    registry = Registry(args.url, args.token)
    platforms = list(args.platform or [])
    selection = {
        "modules": [_choice(m) for m in args.module or []],
        "providers": [_choice(p, platforms) for p in args.provider or []],
    }
    job = registry.call(
        "POST", EXPORTS, {"data": {"type": "bundle-exports", "attributes": selection}}
    )
    say(f"export {job['data']['id']} started on {registry.url}")
    done = registry.wait(f"{EXPORTS}/{job['data']['id']}", args.poll, args.timeout)
    if done["attributes"]["status"] != "finished":
        say(f"export failed: {done['attributes']['error']}")
        return 2
    for entry in done["attributes"]["report"]:
        say(f"  {entry['kind']} {entry['address']} {entry.get('version', '')}".rstrip())
    size, digest = _download(done["links"]["download"], Path(args.output))
    say(f"wrote {args.output}: {size} bytes, sha256 {digest}")
    return 0


def import_(args: argparse.Namespace) -> int:
    registry = Registry(args.url, args.token)
    source = Path(args.bundle)
    if not source.is_file():
        raise Failed(f"{source} is not a file")
    job = registry.call("POST", IMPORTS)["data"]
    say(f"import {job['id']} created on {registry.url}")
    _upload(job["links"]["upload"], source)
    registry.call("POST", f"{IMPORTS}/{job['id']}/actions/start")
    say(f"import {job['id']} started")
    done = registry.wait(f"{IMPORTS}/{job['id']}", args.poll, args.timeout)
    attributes = done["attributes"]
    for entry in attributes.get("report") or []:
        what = f"{entry.get('kind', '')} {entry.get('address', '')} {entry.get('version', '')}"
        reason = f": {entry['reason']}" if entry.get("reason") else ""
        say(f"  {entry['result']}: {' '.join(what.split())}{reason}")
    if attributes["status"] != "finished":
        say(f"import failed: {attributes['error']}")
        return 2
    return 1 if any(e["result"] == "refused" for e in attributes["report"]) else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    for name in ("export", "import"):
        command = commands.add_parser(name)
        command.add_argument("--url", required=True, help="the registry's base URL")
        command.add_argument("--token", default=os.environ.get("REGISTRY_TOKEN"))
        command.add_argument("--poll", type=float, default=2.0, help="seconds between checks")
        command.add_argument("--timeout", type=float, default=3600.0)
        if name == "export":
            command.add_argument(
                "--module", action="append", help="org/ns/name/provider[@constraint]"
            )
            command.add_argument("--provider", action="append", help="org/ns/name[@constraint]")
            command.add_argument("--platform", action="append", help="os_arch (default: all)")
            command.add_argument("-o", "--output", required=True)
        else:
            command.add_argument("bundle")
    args = parser.parse_args(argv)
    if not args.token:
        parser.error("--token (or REGISTRY_TOKEN) is required")
    try:
        return export(args) if args.command == "export" else import_(args)
    except Failed as exc:
        say(f"error: {exc}")
        return 2


if __name__ == "__main__":
    sys.exit(main())
