"""The public registries' ``providers.v1`` protocol, as the pull-through cache reads it.

Bounded: every call has ``REGISTRY_MIRROR_TIMEOUT`` seconds per network operation, JSON
answers at most ``MAX_JSON_BYTES``, archives at most ``REGISTRY_MIRROR_MAX_ARCHIVE_BYTES``.
An upstream that cannot be reached or answers nonsense is a 502 (a timeout a 504), never a
500; an upstream 404 is ours. Neither the caller's token nor any other credential is sent.

Every fetch goes through ``core.outbound`` within ``destinations``: the upstream's own
origin (or the configured upstream), never a link or redirect elsewhere unless
REGISTRY_OUTBOUND_ALLOW lists it, never a non-public address the operator did not allow.
"""

from __future__ import annotations

import hashlib
import logging
import re
from dataclasses import dataclass
from typing import IO, Any
from urllib.parse import quote, urljoin

from chalicelib.core import outbound
from chalicelib.core.api.errors import BadGateway, GatewayTimeout, NotFound
from chalicelib.core.settings import get_settings

log = logging.getLogger("registry.mirror")

PROVIDERS_PATH = "/v1/providers/"
MAX_JSON_BYTES = 4 * 1024 * 1024
CHUNK = 1 << 20
FILENAME = re.compile(r"^[0-9A-Za-z+-][0-9A-Za-z._+-]{0,254}\Z")
# Where the public registries' download answers send archives and SHA256SUMS: HashiCorp's
# release site, and GitHub's release downloads (and the hosts GitHub redirects those to) for
# partner and community providers. Used only when no REGISTRY_MIRROR_UPSTREAM_URL is set;
# their addresses must be public as any own origin's.
PUBLIC_DOWNLOAD_ORIGINS = (
    "https://releases.hashicorp.com",
    "https://github.com",
    "https://objects.githubusercontent.com",
    "https://release-assets.githubusercontent.com",
)


@dataclass(frozen=True)
class Download:
    """What ``download/:os/:arch`` says of one platform's archive: its file, the version's
    SHA256SUMS and its signature (links resolved against the answer's URL), and the keys
    the upstream announces for that signature (``(key_id, ascii_armor)``); ``hostname``:
    the public registry asked (its links are fetched within ``destinations(hostname)``)."""

    filename: str
    url: str
    shasum: str
    shasums_url: str = ""
    signature_url: str = ""
    keys: tuple[tuple[str, str], ...] = ()
    hostname: str = ""


def base_url(hostname: str) -> str:
    return get_settings().mirror_upstream_url or f"https://{hostname}"


def _url(hostname: str, *parts: str) -> str:
    return base_url(hostname) + PROVIDERS_PATH + "/".join(quote(p, safe="") for p in parts)


def destinations(hostname: str) -> outbound.Destinations:
    """Where the cache may fetch for ``hostname``: the configured upstream (trusted: the
    operator named it), else the public registry itself and the hosts its download links
    name (both public addresses only); anything else only when REGISTRY_OUTBOUND_ALLOW
    lists it (``core.outbound``)."""
    configured = get_settings().mirror_upstream_url
    if configured:
        return outbound.Destinations.of(trusted=[configured])
    return outbound.Destinations.of(base_url(hostname), *PUBLIC_DOWNLOAD_ORIGINS)


def _open(url: str, accept: str, hostname: str) -> outbound.Response:
    """The upstream's answer at ``url`` (a 2xx: 404 is ours, anything else a 502). The
    caller learns only that a fetch was refused or failed, never what answered where."""
    headers = {"Accept": accept, "User-Agent": "terraform-registry-mirror"}
    try:
        response = outbound.fetch(
            url, destinations(hostname), timeout=get_settings().mirror_timeout, headers=headers
        )
    except outbound.TimedOut:
        raise GatewayTimeout("the upstream registry did not answer in time") from None
    except outbound.Refused as exc:
        if not url.lower().startswith(("http://", "https://")):
            raise BadGateway("the upstream registry gave a link that is not http(s)") from None
        raise BadGateway(f"the upstream registry's link: {exc}") from None
    except outbound.Failed:
        raise BadGateway("the upstream registry could not be reached") from None
    if 200 <= response.status < 300:
        return response
    response.close()
    if response.status == 404:
        raise NotFound("not found at the upstream registry")
    raise BadGateway(f"the upstream registry answered {response.status}")


def _read(
    response: outbound.Response, limit: int, sink: IO[bytes] | None = None
) -> tuple[bytes, int]:
    """The body (or its size, written to ``sink``), refused past ``limit`` bytes."""
    declared = response.headers.get("Content-Length")
    if declared and declared.isdigit() and int(declared) > limit:
        raise BadGateway(f"the upstream's answer is larger than {limit} bytes")
    parts: list[bytes] = []
    size = 0
    try:
        while chunk := response.read(CHUNK):
            size += len(chunk)
            if size > limit:
                raise BadGateway(f"the upstream's answer is larger than {limit} bytes")
            if sink is not None:
                sink.write(chunk)
            else:
                parts.append(chunk)
    except outbound.TimedOut:
        raise GatewayTimeout("the upstream registry did not answer in time") from None
    except outbound.Failed:
        raise BadGateway("the upstream registry's answer broke off") from None
    return b"".join(parts), size


def _json(url: str, hostname: str) -> dict[str, Any]:
    with _open(url, "application/json", hostname) as response:
        body, _ = _read(response, MAX_JSON_BYTES)
    return outbound.json_object(body, BadGateway)


def versions(hostname: str, namespace: str, type_: str) -> dict[str, list[str]]:
    """``{version: ["os_arch", ...]}`` of the upstream's ``versions`` document."""
    found = _json(_url(hostname, namespace, type_, "versions"), hostname)
    out: dict[str, list[str]] = {}
    for entry in found.get("versions") or []:
        if not isinstance(entry, dict) or not isinstance(entry.get("version"), str):
            continue
        platforms = [
            f"{p['os']}_{p['arch']}"
            for p in entry.get("platforms") or []
            if isinstance(p, dict)
            and isinstance(p.get("os"), str)
            and isinstance(p.get("arch"), str)
        ]
        out[entry["version"]] = platforms
    return out


def download(
    hostname: str, namespace: str, type_: str, version: str, os_: str, arch: str
) -> Download:
    url = _url(hostname, namespace, type_, version, "download", os_, arch)
    found = _json(url, hostname)
    filename, link, shasum = (found.get(k) for k in ("filename", "download_url", "shasum"))
    if not (isinstance(filename, str) and isinstance(link, str) and isinstance(shasum, str)):
        raise BadGateway("the upstream's download answer lacks filename, download_url or shasum")
    if not FILENAME.match(filename):
        raise BadGateway(f"the upstream named the archive {filename!r}")
    sums, signature = found.get("shasums_url"), found.get("shasums_signature_url")
    return Download(
        filename,
        urljoin(url, link),
        shasum.lower(),
        urljoin(url, sums) if isinstance(sums, str) and sums else "",
        urljoin(url, signature) if isinstance(signature, str) and signature else "",
        _keys(found.get("signing_keys")),
        hostname,
    )


def _keys(signing_keys: Any) -> tuple[tuple[str, str], ...]:
    """``(key_id, ascii_armor)`` of each of ``signing_keys.gpg_public_keys``."""
    listed = signing_keys.get("gpg_public_keys") if isinstance(signing_keys, dict) else None
    return tuple(
        (str(key.get("key_id") or ""), key["ascii_armor"])
        for key in (listed if isinstance(listed, list) else [])
        if isinstance(key, dict) and isinstance(key.get("ascii_armor"), str)
    )


def fetch_small(url: str, limit: int, hostname: str) -> bytes:
    """A small file of the upstream (SHA256SUMS, its signature), refused past ``limit``."""
    with _open(url, "application/octet-stream, text/plain", hostname) as response:
        body, _ = _read(response, limit)
    return body


def fetch_archive(url: str, sink: IO[bytes], hostname: str) -> tuple[str, int]:
    """The archive at ``url`` written to ``sink``: (its SHA-256 in hex, its size)."""
    digest = hashlib.sha256()

    class Hashing:
        def write(self, chunk: bytes) -> None:
            digest.update(chunk)
            sink.write(chunk)

    with _open(url, "application/zip, application/octet-stream", hostname) as response:
        _, size = _read(response, get_settings().mirror_max_archive_bytes, Hashing())  # type: ignore[arg-type]
    return digest.hexdigest(), size
