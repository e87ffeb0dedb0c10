"""The module cache's rules: the versions of an allowed upstream namespace's module, and its
archives, fetched once and served from then on.

* ``versions``: the upstream's list, kept with the time and fetched again after
  ``REGISTRY_PUBLIC_CACHE_TTL``; every cached version is listed too (the upstream may have
  dropped it: what was installed keeps installing). When the upstream cannot answer, the
  kept list is served marked ``stale`` (and kept for another TTL, so a dead upstream is not
  waited on at every request); with nothing kept, a 502 (504 when it timed out).
* ``download_url``: the cached archive's presigned link; an archive not cached yet is
  fetched first (``cache_version``): the upstream's download answer, the source it names
  (``fetch``: an allowed source host only), read and parsed as an upload is
  (``modules.ingest.handler.parse_archive``: inputs, outputs, README), stored under its
  SHA-256 (``store``) and recorded, in that order (a record always names stored objects).
* ``detail``: a listed version's inputs, outputs and READMEs (the protocol's detail
  routes): what the cached archive's ingest found, else the upstream's detail, kept as
  the list is kept (fresh for the TTL, served stale when the upstream fails).
* A first install waits at most ``FETCH_SECONDS`` (below terraform's 10 s registry timeout)
  and then answers a clean 504; the fetch runs on, in this instance (a try while it runs
  joins it rather than starting another), and is queued for the Transfers function too
  (``module-cache-fetch``: ``fetch_queued``), since a Lambda instance that answered may be
  frozen before its fetch ends. Whichever ends first caches the version, the other finds it
  cached (by its digest: the same content is the same version, another is a conflict); the
  next try is served from the cache.
* A version recorded already is never replaced: an upstream that serves other content for
  it (another digest; another commit of a git source) is refused, kept as ``conflict`` on
  the cached version, logged and recorded in the audit trail. Seeding fetches even cached
  versions again, to find such changes.
* Last use is bookkeeping: written at most once an hour per version per instance.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from concurrent import futures
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import partial
from typing import Any, TypeVar

from chalicelib.artifacts import objects, queue, semver
from chalicelib.core.api.errors import ApiError, BadGateway, GatewayTimeout, NotFound
from chalicelib.core.audit import events, trail
from chalicelib.core.auth import Principal
from chalicelib.core.settings import get_settings
from chalicelib.modules.cache import fetch, store, upstream
from chalicelib.modules.cache import settings as cache_settings

log = logging.getLogger("registry.module-cache")

# How long a request waits on a fetch: terraform gives a registry request 10 s.
FETCH_SECONDS = 8.0
USE_INTERVAL = 3600.0
RESOURCE = "cached-module"
T = TypeVar("T")


@dataclass(frozen=True)
class Versions:
    versions: list[str]  # newest first
    stale: bool


def allows(namespace: str) -> bool:
    """Whether the cache serves ``namespace`` (the site admins allowed it)."""
    return cache_settings.current().allows(namespace)


# ----- one fetch at a time per version, bounded in time -------------------------------------

_pool = ThreadPoolExecutor(max_workers=4, thread_name_prefix="module-cache")
_lock = threading.Lock()
_running: dict[tuple[str, ...], Future[Any]] = {}
_used: dict[tuple[str, str], float] = {}


def _started(key: tuple[str, ...], work: Callable[[], T]) -> Future[T]:
    """``work`` running in the pool; the one already running for ``key`` when there is
    one (a try while it runs joins it)."""
    with _lock:
        running = _running.get(key)
        started = running is None
        if running is None:
            running = _pool.submit(work)
            _running[key] = running
    # Outside the lock: a future already done (a fast failure, such as no upstream at all)
    # runs the callback here and now, and the callback takes the lock.
    if started:
        running.add_done_callback(lambda _: _forget_running(key))
    return running


class StillFetching(GatewayTimeout):
    """The 504 of a fetch that outlived the request's bound (it runs on)."""


def bounded(key: tuple[str, ...], work: Callable[[], T]) -> T:
    """``work``'s result, waiting at most ``FETCH_SECONDS``. Past the bound: a 504
    (``StillFetching``), the work running on for the next try."""
    running = _started(key, work)
    try:
        return running.result(timeout=FETCH_SECONDS)
    except FutureTimeout:
        raise StillFetching(
            "the upstream registry is slow to answer; the module is being cached, try again"
        ) from None


def _forget_running(key: tuple[str, ...]) -> None:
    with _lock:
        _running.pop(key, None)


def forget() -> None:
    """Forget this instance's bookkeeping (the tests between cases)."""
    with _lock:
        _used.clear()


def gateway_error(exc: upstream.Unavailable) -> ApiError:
    return GatewayTimeout(str(exc)) if exc.timed_out else BadGateway(str(exc))


# ----- versions -----------------------------------------------------------------------------


def versions(namespace: str, name: str, provider: str) -> Versions:
    namespace, name, provider = namespace.lower(), name.lower(), provider.lower()
    where = store.address(namespace, name, provider)
    now = time.time()
    kept = store.kept_versions(where)
    held = dict(kept.body or {}) if kept is not None else {}
    if kept is not None and kept.fresh_until > now:
        listed, stale = list(held.get("versions", [])), bool(held.get("stale"))
    else:
        listed, stale = _refreshed(where, (namespace, name, provider), held, now)
    found = set(listed) | {v.version for v in store.cached_versions(where)}
    valid = []
    for text in found:
        try:
            valid.append(semver.parse(text))
        except semver.InvalidVersion:
            continue
    if not valid:
        raise NotFound(f"module {namespace}/{name}/{provider} not found")
    valid.sort(key=lambda v: v.order_key, reverse=True)
    return Versions([v.text for v in valid], stale)


def _refreshed(
    where: str, address: tuple[str, str, str], held: dict[str, Any], now: float
) -> tuple[list[str], bool]:
    ttl = get_settings().public_cache_ttl
    try:
        listed = bounded(("versions", where), lambda: upstream.versions(*address))
    except NotFound:
        listed = []
    except (upstream.Unavailable, GatewayTimeout) as exc:
        previous = list(held.get("versions", []))
        if not previous and not store.cached_versions(where):
            if isinstance(exc, upstream.Unavailable):
                raise gateway_error(exc) from None
            raise
        log.warning("module cache: upstream failed for %s (%s): serving the kept list", where, exc)
        store.keep_versions(where, {"versions": previous, "stale": True}, now + ttl)
        return previous, True
    store.keep_versions(where, {"versions": listed, "stale": False}, now + ttl)
    return listed, False


# ----- downloads ----------------------------------------------------------------------------


def download_url(namespace: str, name: str, provider: str, version: str) -> str:
    """A short-lived presigned GET of the version's cached archive (go-getter's archive
    hint added), fetching it into the cache first when it is not there. Addresses are
    case-insensitive: asked of the upstream and kept in lower case."""
    namespace, name, provider = namespace.lower(), name.lower(), provider.lower()
    where = store.address(namespace, name, provider)
    item = store.cached_version(where, version)
    if item is None:
        _checked(version)
        try:
            item = bounded(
                ("version", where, version),
                lambda: cache_version(namespace, name, provider, version, None),
            )
        except StillFetching:
            queue.transfer(queue.MODULE_CACHE_FETCH, address=where, version=version)
            raise
    else:
        _mark_used(item)
    return objects.presigned_download_url(str(item.archive_key)) + "&archive=tar.gz"


def fetch_queued(address_: str, version: str) -> str:
    """A first install's fetch that outlived its request (``download_url`` queued it), run by
    the Transfers function; what came of it. Nothing to do when the version is cached already
    (the instance that queued it got there first, or the message came twice) or its
    namespace is no longer allowed; an upstream that fails or refuses is logged (``failed``:
    the next install tries again), never retried from here."""
    parts = address_.lower().split("/")
    if len(parts) != 3 or not all(parts):
        log.warning("module cache: a queued fetch names no module (%r): dropped", address_[:300])
        return "dropped"
    namespace, name, provider = parts
    if not allows(namespace):
        return "not-allowed"
    try:
        _checked(version)
    except NotFound:
        log.warning("module cache: a queued fetch names no version (%r): dropped", version[:64])
        return "dropped"
    if store.cached_version(store.address(namespace, name, provider), version) is not None:
        return "cached"
    try:
        cache_version(namespace, name, provider, version, None)
    except ApiError as exc:
        log.warning("module cache: the queued fetch of %s %s failed: %s", address_, version, exc)
        return "failed"
    return "fetched"


def _checked(version: str) -> None:
    try:
        semver.parse(version)
    except semver.InvalidVersion:
        raise NotFound(f"version {version!r} not found") from None


def _mark_used(item: store.CachedModel) -> None:
    key = (item.address, item.item)
    moment = time.monotonic()
    with _lock:
        last = _used.get(key)
        if last is not None and moment - last < USE_INTERVAL:
            return
        _used[key] = moment
    store.mark_used(item)


def cache_version(
    namespace: str, name: str, provider: str, version: str, principal: Principal | None
) -> store.CachedModel:
    """Fetch the version from the upstream into the cache; the cached version (the one
    recorded before, when there is one: a different one is a conflict, never kept).
    ``principal``: the site admin who seeds it (``seed`` records the event); None: an
    install (the registry's own, recorded here as ``cached``)."""
    where = store.address(namespace, name, provider)
    label = f"{where} {version}"
    try:
        location = upstream.source(namespace, name, provider, version)
        fetched = fetch.fetch(location, cache_settings.current().allowed_source_hosts)
    except upstream.Unavailable as exc:
        log.warning("module cache: fetching %s failed: %s", label, exc)
        raise gateway_error(exc) from None
    except fetch.SourceRefused as exc:
        log.warning("module cache: refused the source of %s: %s", label, exc)
        raise BadGateway(f"the upstream's source of {label}: {exc}") from None
    with fetched.file:
        return _keep(where, name, version, fetched, principal)


def _keep(
    where: str,
    name: str,
    version: str,
    fetched: fetch.Fetched,
    principal: Principal | None,
) -> store.CachedModel:
    from chalicelib.artifacts.pipeline import Refused
    from chalicelib.modules.ingest.handler import parse_archive

    label = f"{where} {version}"
    existing = store.cached_version(where, version)
    if existing is not None:
        return _compared(existing, fetched, principal)
    try:
        parsed = parse_archive(fetched.file, name)
    except Refused as exc:
        log.warning("module cache: the archive of %s is refused: %s", label, exc.reason)
        raise BadGateway(f"the upstream's archive of {label}: {exc.reason}") from None
    fetched.file.seek(0)
    objects.upload(fetched.file, store.archive_key(fetched.sha256), "application/x-gzip")
    objects.put_metadata(store.metadata_key(fetched.sha256), parsed.metadata)
    now = datetime.now(UTC)
    fields = {
        "sha256": fetched.sha256,
        "size": fetched.size,
        "identity": fetched.identity,
        "archive_key": store.archive_key(fetched.sha256),
        "metadata_key": store.metadata_key(fetched.sha256),
        "source_host": fetched.host,
        "fetched_at": now,
        "last_used": now,
    }
    if not store.add_version(where, version, **fields):
        # Another fetch recorded it meanwhile: that one stays (the objects are by digest).
        raced = store.cached_version(where, version)
        assert raced is not None
        return _compared(raced, fetched, principal)
    if principal is None:  # an install's fetch; a seed records its own event
        meta = {"sha256": fetched.sha256, "size": fetched.size, "source-host": fetched.host}
        trail.record(_event(None, where, version, "cached", meta))
    log.info("module cache: cached %s (%d bytes from %s)", label, fetched.size, fetched.host)
    found = store.cached_version(where, version)
    assert found is not None
    return found


def _compared(
    existing: store.CachedModel, fetched: fetch.Fetched, principal: Principal | None
) -> store.CachedModel:
    """The cached version, unchanged; a conflict recorded when the upstream's content is
    not what was cached."""
    if (existing.identity or existing.sha256) == fetched.identity:
        return existing
    found = {
        "sha256": fetched.sha256,
        "identity": fetched.identity,
        "size": fetched.size,
        "source-host": fetched.host,
        "seen-at": datetime.now(UTC).isoformat(),
    }
    log.warning(
        "module cache: the upstream changed %s %s in place (cached %s, now %s): refused",
        existing.address,
        existing.version,
        existing.identity or existing.sha256,
        fetched.identity,
    )
    store.mark_conflict(existing, found)
    meta = {"cached": existing.identity or existing.sha256, "upstream": fetched.identity}
    trail.record(
        _event(principal, existing.address, existing.version, "conflict", meta, refused=True)
    )
    existing.conflict = found
    return existing


def _event(
    principal: Principal | None,
    where: str,
    version: str,
    action: str,
    meta: dict[str, Any],
    *,
    refused: bool = False,
) -> events.Event:
    return events.event(
        principal,
        organization=None,
        resource_type=RESOURCE,
        resource_id=f"{where}/{version}" if version else where,
        action=action,
        meta=meta,
        outcome="refused" if refused else events.SUCCEEDED,
    )


# ----- the site admins' seed and list -------------------------------------------------------

MAX_SEED_VERSIONS = 10
SEED_SECONDS = 15.0


@dataclass(frozen=True)
class Seeded:
    version: str
    outcome: str  # cached, unchanged, conflict, failed, pending
    detail: str = ""


def seed(
    principal: Principal, namespace: str, name: str, provider: str, constraint: str
) -> list[Seeded]:
    """Fetch now the versions of an allowed namespace's module that ``constraint`` allows
    (at most ``MAX_SEED_VERSIONS``; 422 for more), even those cached already (a changed one
    is a conflict). Waits at most ``SEED_SECONDS``: the rest go on (``pending``). One
    event (``seeded``, by the site admin) when anything was fetched or found changed."""
    from chalicelib.artifacts import constraints
    from chalicelib.core.api.errors import Unprocessable

    namespace, name, provider = namespace.lower(), name.lower(), provider.lower()
    if not allows(namespace):
        raise Unprocessable(
            f"{namespace} is not an allowed namespace of the module cache",
            pointer="/data/attributes/namespace",
        )
    try:
        wanted = constraints.parse(constraint)
    except constraints.InvalidConstraint as exc:
        raise Unprocessable(str(exc), pointer="/data/attributes/version-constraint") from None
    if wanted.allows_every_release:
        raise Unprocessable(
            "name the versions to seed (a version constraint, not empty or '*')",
            pointer="/data/attributes/version-constraint",
        )
    where = store.address(namespace, name, provider)
    try:
        listed = bounded(("versions", where), lambda: upstream.versions(namespace, name, provider))
    except upstream.Unavailable as exc:
        raise gateway_error(exc) from None
    matching = []
    for text in listed:
        try:
            parsed = semver.parse(text)
        except semver.InvalidVersion:
            continue
        if wanted.allows(parsed):
            matching.append(parsed)
    matching.sort(key=lambda v: v.order_key, reverse=True)
    if not matching:
        raise NotFound(f"the upstream has no version of {where} that {constraint!r} allows")
    if len(matching) > MAX_SEED_VERSIONS:
        raise Unprocessable(
            f"{len(matching)} versions of {where} match: seed at most {MAX_SEED_VERSIONS} at "
            "once (narrow the constraint)",
            pointer="/data/attributes/version-constraint",
        )
    before = {v.version: v for v in store.cached_versions(where)}
    runs = {
        v.text: _started(
            ("seed", where, v.text),
            partial(cache_version, namespace, name, provider, v.text, principal),
        )
        for v in matching
    }
    futures.wait(runs.values(), timeout=SEED_SECONDS)
    outcomes = [_outcome(text, run, before.get(text)) for text, run in runs.items()]
    if any(o.outcome in ("cached", "conflict") for o in outcomes):
        meta = {
            "constraint": constraint,
            "versions": [f"{o.version} {o.outcome}" for o in outcomes],
        }
        trail.record(_event(principal, where, "", "seeded", meta))
    return outcomes


def _outcome(
    version: str, run: Future[store.CachedModel], before: store.CachedModel | None
) -> Seeded:
    if not run.done():
        return Seeded(version, "pending", "still fetching: it lands in the cache when done")
    error = run.exception()
    if error is not None:
        detail = error.detail or "" if isinstance(error, ApiError) else "the fetch failed"
        return Seeded(version, "failed", detail)
    item = run.result()
    if item.conflict and (before is None or before.conflict != item.conflict):
        return Seeded(version, "conflict", "the upstream changed it in place: kept as cached")
    return Seeded(version, "unchanged" if before is not None else "cached")


def cached_page(size: int, after: dict[str, Any] | None) -> tuple[list[store.CachedModel], Any]:
    """A page of the cached versions (site admins), and where the next one starts."""
    return store.every_version(after, size)


# ----- bundles: the cached versions they carry ---------------------------------------------


class ImportRefused(Exception):
    """A bundle's cached version that this cache does not take (the message says why)."""


def cached_archives(namespace: str, name: str, provider: str) -> list[store.CachedModel]:
    """Every cached version of an upstream module (a bundle's export reads their archives)."""
    return store.cached_versions(store.address(namespace, name, provider))


def cached_digest(namespace: str, name: str, provider: str, version: str) -> str | None:
    """The SHA-256 of the version's cached archive; None when it is not cached."""
    item = store.cached_version(store.address(namespace, name, provider), version)
    return item.sha256 if item is not None else None


def import_archive(
    principal: Principal,
    namespace: str,
    name: str,
    provider: str,
    version: str,
    fetched: fetch.Fetched,
) -> str:
    """Cache a version a bundle brought (its archive's digest checked by the caller), as a
    fetch caches it (object under its digest, metadata ingested, the version's item);
    ``skipped`` when the same archive is cached, ``ImportRefused`` when another is (never
    replaced) or the archive is no module. Recorded as ``imported``."""
    namespace, name, provider = namespace.lower(), name.lower(), provider.lower()
    where = store.address(namespace, name, provider)
    try:
        semver.parse(version)
    except semver.InvalidVersion:
        raise ImportRefused(f"{version!r} is not a version") from None
    there = store.cached_version(where, version)
    if there is not None and there.sha256 != fetched.sha256:
        raise ImportRefused(f"version {version} is cached here with other content")
    if there is not None:
        return "skipped"
    try:
        item = _keep(where, name, version, fetched, principal)
    except BadGateway as exc:
        raise ImportRefused(exc.detail or "the archive is refused") from None
    if item.sha256 != fetched.sha256:  # another one was cached meanwhile
        raise ImportRefused(f"version {version} is cached here with other content")
    meta = {"sha256": fetched.sha256, "size": fetched.size, "source-host": fetched.host}
    trail.record(_event(principal, where, version, "imported", meta))
    return "created"
