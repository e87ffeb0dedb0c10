"""The provider network mirror's rules: which providers a host name in the path means,
who may read them, and the pull-through cache of public providers.

* Under a public registry's host name (``PUBLIC_HOSTS``) the mirror serves the public
  provider from its cache, filling it from the upstream registry on first use: the version
  list for ``REGISTRY_MIRROR_CACHE_TTL`` seconds, archives for good (checked against the
  upstream's ``shasum`` and its SHA256SUMS signed by a key the upstream announces, kept
  in S3 with their ``zh:`` and ``h1:`` hashes). Any authenticated caller of the registry
  may use it. Archives seeded from an upload of ``terraform providers mirror`` are served
  the same way; with
  ``REGISTRY_MIRROR_UPSTREAM_URL=off`` the cache serves only those (air-gapped).
* Under any other host name (a registry is reached under several names) it serves the
  registry's own private providers of the organization ``:namespace``: exactly what
  ``providers.v1`` serves (``providers.protocol``: the versions whose SHA256SUMS signature
  verified, the platforms checked against it). Members read; anyone else gets a 404.
"""

from __future__ import annotations

import logging
import re
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import IO, Any

from chalicelib.artifacts import objects, semver
from chalicelib.core.api.errors import ApiError, BadGateway, NotFound
from chalicelib.core.auth import Principal
from chalicelib.core.settings import get_settings
from chalicelib.providers import keys
from chalicelib.providers.mirror import hashes, signed, store, upstream
from chalicelib.providers.protocol import service as protocol

log = logging.getLogger("registry.mirror")

PUBLIC_HOSTS = ("registry.terraform.io", "registry.opentofu.org")
HOSTNAME = re.compile(r"^[0-9a-z](?:[0-9a-z.-]{0,251}[0-9a-z])?(?::[0-9]{1,5})?\Z")
NAME = re.compile(r"^[0-9a-z](?:[0-9a-z_-]{0,62}[0-9a-z])?\Z")
PLATFORM = re.compile(r"^[0-9a-z]{1,32}_[0-9a-z]{1,32}\Z")
OFF = "off"
FETCH_THREADS = 4


@dataclass(frozen=True)
class Address:
    hostname: str
    namespace: str
    type: str

    @property
    def public(self) -> bool:
        return self.hostname in PUBLIC_HOSTS

    @property
    def key(self) -> str:
        return store.address(self.hostname, self.namespace, self.type)


@dataclass(frozen=True)
class Archive:
    """One platform's archive: the S3 key it is served from and its hashes."""

    key: str
    hashes: tuple[str, ...]


def address(hostname: str, namespace: str, type_: str) -> Address:
    """The provider address of a mirror path, lower case as terraform normalizes it; a
    404 for anything that cannot be one."""
    found = Address(hostname.lower(), namespace.lower(), type_.lower())
    if not (
        HOSTNAME.match(found.hostname) and NAME.match(found.namespace) and NAME.match(found.type)
    ):
        raise NotFound(f"provider {hostname}/{namespace}/{type_} not found")
    return found


def checked_version(version: str) -> str:
    try:
        semver.parse(version)
    except semver.InvalidVersion:
        raise NotFound(f"version {version!r} not found") from None
    return version


def _upstream_on() -> bool:
    return get_settings().mirror_upstream_url != OFF


# ----- index.json and :version.json -----------------------------------------------------------


def versions(principal: Principal, where: Address) -> list[str]:
    """The versions the mirror can serve, newest first."""
    found = _public_versions(where) if where.public else _private_versions(principal, where)
    return sorted(found, key=lambda v: semver.parse(v).order_key, reverse=True)


def archives(principal: Principal, where: Address, version: str) -> dict[str, Archive]:
    """``{os_arch: Archive}`` of one version."""
    checked_version(version)
    if where.public:
        return _public_archives(where, version)
    return _private_archives(principal, where, version)


# ----- private providers (read through providers.service) -------------------------------------


def _served(principal: Principal, where: Address) -> protocol.Served:
    """What ``providers.v1`` serves of the provider (one rule: only what verified), or 404."""
    return protocol.find_provider(principal, where.namespace, where.type)


def _private_versions(principal: Principal, where: Address) -> list[str]:
    return list(_served(principal, where).versions)


def _private_archives(principal: Principal, where: Address, version: str) -> dict[str, Archive]:
    found = _served(principal, where)
    served = found.versions.get(version)
    out: dict[str, Archive] = {}
    for (os_, arch), platform in (served[1] if served else {}).items():
        key = keys.binary_key(found.provider.id, version, os_, arch, platform["filename"])
        # Verification checked the archive against SHA256SUMS: its sha256 is the zh: hash.
        cache = f"{found.provider.id}/{version}/{os_}_{arch}"
        h1 = _private_h1(cache, f"{platform['sums']}#{platform['shasum']}", key)
        if h1 is not None:
            out[f"{os_}_{arch}"] = Archive(key, (h1, hashes.zh(platform["shasum"])))
    return out


def _private_h1(cache: str, stamp: str, key: str) -> str | None:
    """The verified archive's ``h1:``, read once per verified upload (``stamp`` names it);
    None when it is gone or too large to read."""
    kept = store.private_check(cache)
    if kept is not None and kept.stamp == stamp:
        return str(kept.body["h1"]) if kept.body else None
    found: dict[str, str] = {}
    try:
        with objects.fetch(key, get_settings().mirror_max_archive_bytes) as archive:
            found = {"h1": hashes.h1(archive.file)}
    except objects.Gone:
        return None  # deleted meanwhile: nothing to serve, nothing to keep
    except objects.TooLarge:
        pass  # kept as unreadable: served without its h1
    except hashes.NotAZip as exc:
        log.warning("private provider archive %s is no zip: %s", cache, exc)
    store.keep_private_check(cache, stamp, found)
    return found.get("h1")


# ----- public providers: the pull-through cache -----------------------------------------------


def _upstream_versions(where: Address) -> dict[str, list[str]]:
    """The upstream's version list, cached for the TTL. When the upstream fails, a stale
    list (or none, when the cache holds seeded archives) is kept for another TTL so an
    air-gapped site does not wait on the upstream at every request; else the error."""
    now = time.time()
    cached = store.cached_versions(where.key)
    if cached is not None and cached.fresh_until > now:
        return dict(cached.body)
    if not _upstream_on():
        return {}
    ttl = get_settings().mirror_cache_ttl
    try:
        found = upstream.versions(where.hostname, where.namespace, where.type)
    except NotFound:
        found = {}
    except ApiError as exc:
        held = dict(cached.body) if cached is not None else {}
        if not held and not store.known_versions(where.key):
            raise
        log.warning("upstream failed for %s (%s): serving the cache", where.key, exc)
        store.keep_versions(where.key, held, int(now + ttl))
        return held
    store.keep_versions(where.key, found, int(now + ttl))
    return found


def _public_versions(where: Address) -> list[str]:
    found = set(_upstream_versions(where)) | set(store.known_versions(where.key))
    valid = []
    for version in found:
        try:
            semver.parse(version)
        except semver.InvalidVersion:
            continue
        valid.append(version)
    if not valid:
        raise NotFound(f"provider {where.key} not found")
    return valid


def _public_archives(where: Address, version: str) -> dict[str, Archive]:
    held = store.archives(where.key, version)
    wanted = set(_upstream_versions(where).get(version, ()))
    only = get_settings().mirror_platforms
    if only:
        wanted &= set(only)
    missing = sorted(p for p in wanted - set(held) if PLATFORM.match(p))
    if missing:
        with ThreadPoolExecutor(max_workers=min(FETCH_THREADS, len(missing))) as pool:
            fetched = list(pool.map(lambda p: _fetch(where, version, p), missing))
        held.update(zip(missing, fetched, strict=True))
    if not held:
        raise NotFound(f"version {version} of {where.key} not found")
    return {platform: _archive(entry) for platform, entry in sorted(held.items())}


def _archive(entry: dict[str, Any]) -> Archive:
    return Archive(entry["key"], (entry["h1"], hashes.zh(entry["zh"])))


def _fetch(where: Address, version: str, platform: str) -> dict[str, Any]:
    """One platform's archive from the upstream into the cache, checked against the
    upstream's ``shasum`` and its signed SHA256SUMS (``signed``), as terraform would."""
    os_, arch = platform.split("_", 1)
    try:
        found = upstream.download(where.hostname, where.namespace, where.type, version, os_, arch)
    except NotFound:
        raise BadGateway(
            f"the upstream lists {platform} of {version} but has no download"
        ) from None
    with tempfile.TemporaryFile() as spool:
        try:
            sha256, size = upstream.fetch_archive(found.url, spool, found.hostname)
        except NotFound:
            raise BadGateway(f"the upstream's archive of {platform} is missing") from None
        if sha256 != found.shasum:
            raise BadGateway(
                f"the upstream's archive of {where.key} {version} {platform} does not match "
                "its shasum"
            )
        signed.check(found, sha256, f"{where.key} {version} {platform}")
        spool.seek(0)
        entry = keep_archive(where, version, platform, found.filename, spool, sha256, size)
    log.info("mirror cached %s %s %s (%d bytes)", where.key, version, platform, size)
    return entry


def keep_archive(
    where: Address,
    version: str,
    platform: str,
    filename: str,
    archive: IO[bytes],
    sha256: str,
    size: int,
) -> dict[str, Any]:
    """An archive in hand (seekable, at its start) into the cache: its ``h1:`` computed, the
    object put in S3, its item written last (so an item always names a stored object)."""
    try:
        h1 = hashes.h1(archive)
    except hashes.NotAZip as exc:
        raise BadGateway(f"the archive of {where.key} {version} {platform}: {exc}") from None
    archive.seek(0)
    key = store.archive_key(where.hostname, where.namespace, where.type, version, filename)
    objects.upload(archive, key, "application/zip")
    entry = {"key": key, "filename": filename, "zh": sha256, "h1": h1, "size": size}
    store.add_archive(where.key, version, platform, entry)
    return entry
