"""Seeding the cache from ``terraform providers mirror``'s output, for an air-gapped site.

The upload is that directory as a ``.tar.gz``: ``<hostname>/<namespace>/<type>/`` holding
``terraform-provider-<type>_<version>_<os>_<arch>.zip`` archives beside ``index.json`` and
``<version>.json``. Every archive of a public registry's provider goes into the cache as if
the pull-through had fetched it; when its ``<version>.json`` lists hashes for it, one of
them must be the archive's own (a mismatch refuses the whole upload before anything is
kept). Anything else in the tree is listed as skipped. A seed that kept archives records one
site-wide audit event (``seeded``, by the site admin) naming them, after they are kept.
"""

from __future__ import annotations

import hashlib
import io
import json
import re
import tarfile
import tempfile
from dataclasses import dataclass
from typing import IO, Any

from chalicelib.core.api.errors import Unprocessable
from chalicelib.core.audit import events, trail
from chalicelib.core.auth import Principal
from chalicelib.core.settings import get_settings
from chalicelib.providers.mirror import hashes
from chalicelib.providers.mirror.service import (
    PUBLIC_HOSTS,
    Address,
    address,
    checked_version,
    keep_archive,
)

ARCHIVE = re.compile(
    r"^(?P<host>[^/]+)/(?P<ns>[^/]+)/(?P<type>[^/]+)/"
    r"terraform-provider-(?P=type)_(?P<version>[^_/]+)_(?P<os>[0-9a-z]+)_(?P<arch>[0-9a-z]+)\.zip$"
)
VERSION_DOC = re.compile(r"^(?P<dir>[^/]+/[^/]+/[^/]+)/(?P<version>[^/]+)\.json\Z")
MAX_JSON_BYTES = 1024 * 1024
MAX_ENTRIES = 10_000


@dataclass
class Found:
    where: Address
    version: str
    platform: str
    filename: str
    spool: IO[bytes]
    sha256: str
    size: int


def seed(principal: Principal, upload: bytes) -> dict[str, Any]:
    """Keep every archive of the upload; what was kept and what skipped."""
    settings = get_settings()
    if len(upload) > settings.mirror_max_seed_bytes:
        raise Unprocessable(f"the upload is larger than {settings.mirror_max_seed_bytes} bytes")
    found: list[Found] = []
    documented: dict[tuple[str, str], dict[str, Any]] = {}
    skipped: list[str] = []
    unpacked = 0
    try:
        with tarfile.open(fileobj=io.BytesIO(upload), mode="r:gz") as tar:
            for count, member in enumerate(tar):
                if count >= MAX_ENTRIES:
                    raise Unprocessable(f"the upload holds more than {MAX_ENTRIES} entries")
                name = member.name.removeprefix("./")
                if member.isdir():
                    continue
                if not member.isfile():
                    skipped.append(name)
                    continue
                unpacked += member.size
                if unpacked > settings.max_unpacked_bytes:
                    raise Unprocessable(
                        f"the upload unpacks to more than {settings.max_unpacked_bytes} bytes"
                    )
                stream = tar.extractfile(member)
                assert stream is not None
                if (doc := VERSION_DOC.match(name)) and member.size <= MAX_JSON_BYTES:
                    documented[(doc["dir"], doc["version"])] = _json(stream.read(), name)
                elif (match := ARCHIVE.match(name)) and match["host"] in PUBLIC_HOSTS:
                    found.append(_spool(match, stream, name, member.size))
                elif not name.endswith("/index.json"):
                    skipped.append(name)
    except (tarfile.TarError, EOFError, OSError) as exc:
        raise Unprocessable(f"the upload is not a .tar.gz: {exc}") from None
    try:
        outcome = _keep(found, documented, skipped)
    finally:
        for item in found:
            item.spool.close()
    if outcome["archives"]:
        trail.record(_seeded(principal, outcome))
    return outcome


def _seeded(principal: Principal, outcome: dict[str, Any]) -> events.Event:
    """The seed's event: how many archives, and which (the first ones: meta is bounded)."""
    archives = outcome["archives"]
    return events.event(
        principal,
        organization=None,
        resource_type="provider-mirror",
        resource_id="seed",
        action="seeded",
        meta={
            "archive-count": len(archives),
            "archives": [f"{a['provider']} {a['version']} {a['platform']}" for a in archives],
        },
    )


def _json(body: bytes, name: str) -> dict[str, Any]:
    try:
        parsed = json.loads(body)
    except ValueError:
        raise Unprocessable(f"{name} is not JSON") from None
    return parsed if isinstance(parsed, dict) else {}


def _spool(match: re.Match[str], stream: IO[bytes], name: str, size: int) -> Found:
    try:
        where = address(match["host"], match["ns"], match["type"])
        version = checked_version(match["version"])
    except Exception:  # noqa: BLE001 - a NotFound of the path rules: a bad name here
        raise Unprocessable(f"{name} does not name a provider archive") from None
    if size > get_settings().mirror_max_archive_bytes:
        raise Unprocessable(f"{name} is larger than the archive cap")
    spool = tempfile.TemporaryFile()  # noqa: SIM115 - closed by seed() once kept
    digest = hashlib.sha256()
    while chunk := stream.read(1 << 20):
        digest.update(chunk)
        spool.write(chunk)
    spool.seek(0)
    platform = f"{match['os']}_{match['arch']}"
    filename = name.rsplit("/", 1)[1]
    return Found(where, version, platform, filename, spool, digest.hexdigest(), size)


def _keep(
    found: list[Found], documented: dict[tuple[str, str], dict[str, Any]], skipped: list[str]
) -> dict[str, Any]:
    # Every check first: a refused upload keeps nothing.
    for item in found:
        try:
            h1 = hashes.h1(item.spool)
        except hashes.NotAZip as exc:
            raise Unprocessable(f"{item.filename}: {exc}") from None
        item.spool.seek(0)
        doc = documented.get((item.where.key, item.version), {})
        listed = ((doc.get("archives") or {}).get(item.platform) or {}).get("hashes") or []
        if listed and not {h1, hashes.zh(item.sha256)} & set(listed):
            raise Unprocessable(
                f"{item.filename} matches none of the hashes its {item.version}.json lists"
            )
    kept = []
    for item in found:
        entry = keep_archive(
            item.where,
            item.version,
            item.platform,
            item.filename,
            item.spool,
            item.sha256,
            item.size,
        )
        kept.append(
            {
                "provider": item.where.key,
                "version": item.version,
                "platform": item.platform,
                "hashes": [entry["h1"], hashes.zh(entry["zh"])],
            }
        )
    return {"archives": kept, "skipped": sorted(skipped)}
