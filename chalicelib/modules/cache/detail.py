"""A cached namespace's version detail, as the registry protocol's detail routes show it:
what the cached archive's ingest found, or, for a version not cached yet, the upstream's
detail, kept for ``REGISTRY_PUBLIC_CACHE_TTL`` and served stale when the upstream fails."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from chalicelib.artifacts import objects, semver
from chalicelib.core.api.errors import GatewayTimeout, NotFound
from chalicelib.core.settings import get_settings
from chalicelib.modules.cache import service, store, upstream

# A kept upstream detail (a table item) is at most this, as JSON: READMEs are cut to fit.
DETAIL_BYTES = 256 * 1024
DIRECTORY_KEYS = (
    "path",
    "name",
    "readme",
    "empty",
    "inputs",
    "outputs",
    "dependencies",
    "provider_dependencies",
    "resources",
)


@dataclass(frozen=True)
class Detail:
    """A version of an allowed namespace's module, as the protocol's detail shows it."""

    version: str
    versions: list[str]  # every version listed, newest first
    metadata: dict[str, Any]  # root, submodules, examples (parse_archive's shape)
    stale: bool  # the list or the upstream's detail could not be fetched again


def latest(namespace: str, name: str, provider: str) -> str:
    """The latest of the module's versions (``semver.latest_of``: a release, else the
    highest pre-release), as ``versions`` lists them."""
    found = latest_of(service.versions(namespace, name, provider).versions)
    assert found is not None  # ``versions`` is never empty
    return found


def latest_of(listed: list[str]) -> str | None:
    found = semver.latest_of(semver.parse(v) for v in listed)
    return found.text if found is not None else None


def detail(namespace: str, name: str, provider: str, version: str | None) -> Detail:
    """A listed version's detail (``None``: the latest): what the cached archive's ingest
    found, or, for a version not cached yet, the upstream's detail kept for
    ``REGISTRY_PUBLIC_CACHE_TTL`` (served stale when the upstream cannot answer again; 502
    or 504 with nothing kept). A version the list does not have is a 404."""
    namespace, name, provider = namespace.lower(), name.lower(), provider.lower()
    where = store.address(namespace, name, provider)
    listed = service.versions(namespace, name, provider)
    wanted = version if version is not None else latest_of(listed.versions)
    if wanted is None or wanted not in listed.versions:
        raise NotFound(f"version {version} of {where} not found")
    item = store.cached_version(where, wanted)
    if item is not None and item.metadata_key:
        try:
            metadata = objects.get_metadata(item.metadata_key)
        except objects.Gone:
            metadata = {}
        return Detail(wanted, listed.versions, metadata, listed.stale)
    metadata, stale = _upstream_detail(where, (namespace, name, provider), wanted)
    return Detail(wanted, listed.versions, metadata, listed.stale or stale)


def _upstream_detail(
    where: str, address: tuple[str, str, str], version: str
) -> tuple[dict[str, Any], bool]:
    now = time.time()
    kept = store.kept_detail(where, version)
    if kept is not None and kept.fresh_until > now:
        return dict(kept.body or {}), False
    ttl = get_settings().public_cache_ttl
    try:
        answer = service.bounded(
            ("detail", where, version), lambda: upstream.detail(*address, version)
        )
    except (upstream.Unavailable, GatewayTimeout) as exc:
        if kept is None:
            if isinstance(exc, upstream.Unavailable):
                raise service.gateway_error(exc) from None
            raise
        service.log.warning(
            "module cache: upstream failed for %s %s (%s): kept", where, version, exc
        )
        store.keep_detail(where, version, dict(kept.body or {}), now + ttl)
        return dict(kept.body or {}), True
    metadata = _directories(answer)
    store.keep_detail(where, version, metadata, now + ttl)
    return metadata, False


def _directories(answer: dict[str, Any]) -> dict[str, Any]:
    """The upstream detail's root, submodules and examples, as ``parse_archive`` shapes
    them (anything else dropped), cut to ``DETAIL_BYTES`` (READMEs first; nothing when
    even that is not enough)."""
    from chalicelib.modules.ingest.limits import MetadataTooLarge, fit_metadata

    def directory(found: Any) -> dict[str, Any] | None:
        if not isinstance(found, dict):
            return None
        kept = {key: found[key] for key in DIRECTORY_KEYS if key in found}
        if not isinstance(kept.get("readme", ""), str):
            kept["readme"] = ""
        return kept

    def directories(found: Any) -> list[dict[str, Any]]:
        listed = found if isinstance(found, list) else []
        return [d for d in map(directory, listed) if d is not None]

    metadata: dict[str, Any] = {
        "submodules": directories(answer.get("submodules")),
        "examples": directories(answer.get("examples")),
    }
    root = directory(answer.get("root"))
    if root is not None:
        metadata["root"] = root
    try:
        fit_metadata(metadata, DETAIL_BYTES)
    except MetadataTooLarge:
        return {}
    return metadata
