"""The upstream registry's ``modules.v1`` protocol, as the module cache reads it.

The upstream is ``REGISTRY_MIRROR_UPSTREAM_URL`` (the provider mirror's: one setting names
the registry both caches read; ``off`` for none, an air-gapped site), the public registry
by default. Where it serves modules is what its ``/.well-known/terraform.json`` says
(Terraform's remote service discovery: ``modules.v1``, relative to the document or an
absolute URL on the upstream's own origin; a TFE or a GitLab answers
``/api/registry/v1/modules/``), read once and kept per instance for ``DISCOVERY_TTL``
seconds; ``/v1/modules/`` when the upstream has no such document (404).

Bounded: ``REGISTRY_MIRROR_TIMEOUT`` seconds per network operation, JSON answers at most
``MAX_JSON_BYTES``. Every fetch goes through ``core.outbound`` to the configured upstream's
origin only (a redirect elsewhere is refused). No caller's credential is ever sent. An
upstream that cannot be reached or answers nonsense is an ``Unavailable`` (the caller
decides: a stale answer, or a 502/504); its 404 is ``NotFound``.
"""

from __future__ import annotations

import time
from typing import Any
from urllib.parse import quote, urljoin, urlsplit

from chalicelib.core import outbound
from chalicelib.core.api.errors import NotFound
from chalicelib.core.settings import get_settings

PUBLIC_REGISTRY = "https://registry.terraform.io"
MODULES_PATH = "/v1/modules/"
MAX_JSON_BYTES = 4 * 1024 * 1024
OFF = "off"
DISCOVERY_PATH = "/.well-known/terraform.json"
DISCOVERY_TTL = 3600.0

# base URL -> (its modules.v1 URL, until when it is kept: time.monotonic())
_discovered: dict[str, tuple[str, float]] = {}


class Unavailable(Exception):
    """The upstream could not answer (refused, failed, timed out, nonsense); ``str`` is
    safe to show. ``timed_out``: it did not answer in time."""

    def __init__(self, message: str, *, timed_out: bool = False) -> None:
        super().__init__(message)
        self.timed_out = timed_out


def base_url() -> str | None:
    """The upstream's base URL; None when the operator switched it off."""
    configured = get_settings().mirror_upstream_url
    if configured == OFF:
        return None
    return configured or PUBLIC_REGISTRY


def destinations() -> outbound.Destinations:
    """The configured upstream (trusted: the operator named it); the public registry by
    default (its addresses must be public)."""
    base = base_url() or PUBLIC_REGISTRY
    if get_settings().mirror_upstream_url:
        return outbound.Destinations.of(trusted=[base])
    return outbound.Destinations.of(base)


def forget() -> None:
    """Drop the discovered ``modules.v1`` URLs (tests; a changed upstream)."""
    _discovered.clear()


def modules_url(base: str) -> str:
    """The upstream's ``modules.v1`` URL (ending in ``/``), as its discovery document says."""
    kept = _discovered.get(base)
    if kept is not None and kept[1] > time.monotonic():
        return kept[0]
    parts = urlsplit(base)
    document = f"{parts.scheme}://{parts.netloc}{DISCOVERY_PATH}"
    try:
        _, body = _answer(document)
    except NotFound:
        found = urljoin(document, MODULES_PATH)
    else:
        value = _json(body).get("modules.v1")
        if not isinstance(value, str) or not value:
            raise Unavailable("the upstream's discovery document names no modules.v1")
        found = urljoin(document, value)
        try:
            same_origin = outbound.origin(found) == outbound.origin(base)
        except outbound.Refused:
            same_origin = False
        if not same_origin:
            raise Unavailable("the upstream's modules.v1 is on another origin: refused")
        if not found.endswith("/"):
            found += "/"
    _discovered[base] = (found, time.monotonic() + DISCOVERY_TTL)
    return found


def _url(*parts: str) -> str:
    base = base_url()
    if base is None:
        raise Unavailable("no upstream registry is configured")
    return modules_url(base) + "/".join(quote(p, safe="") for p in parts)


def _open(url: str) -> outbound.Response:
    headers = {"Accept": "application/json", "User-Agent": "terraform-registry-module-cache"}
    try:
        return outbound.fetch(
            url, destinations(), timeout=get_settings().mirror_timeout, headers=headers
        )
    except outbound.TimedOut:
        raise Unavailable("the upstream registry did not answer in time", timed_out=True) from None
    except outbound.OutboundError as exc:
        raise Unavailable(f"the upstream registry could not be reached: {exc}") from None


def _answer(url: str) -> tuple[outbound.Response, bytes]:
    response = _open(url)
    try:
        if response.status == 404:
            raise NotFound("not found at the upstream registry")
        if response.status not in (200, 204):
            raise Unavailable(f"the upstream registry answered {response.status}")
        return response, response.read_at_most(MAX_JSON_BYTES)
    except outbound.TimedOut:
        raise Unavailable("the upstream registry did not answer in time", timed_out=True) from None
    except outbound.Failed as exc:
        raise Unavailable(str(exc)) from None
    finally:
        response.close()


def _json(body: bytes) -> dict[str, Any]:
    return outbound.json_object(body, Unavailable)


def versions(namespace: str, name: str, provider: str) -> list[str]:
    """The version strings of the upstream's ``versions`` document."""
    _, body = _answer(_url(namespace, name, provider, "versions"))
    modules = _json(body).get("modules")
    first = modules[0] if isinstance(modules, list) and modules else {}
    listed = first.get("versions") if isinstance(first, dict) else None
    return [
        entry["version"]
        for entry in (listed if isinstance(listed, list) else [])
        if isinstance(entry, dict) and isinstance(entry.get("version"), str)
    ]


def detail(namespace: str, name: str, provider: str, version: str) -> dict[str, Any]:
    """The upstream's detail document of a version (a JSON object, as it answered it)."""
    _, body = _answer(_url(namespace, name, provider, version))
    return _json(body)


def source(namespace: str, name: str, provider: str, version: str) -> str:
    """Where the upstream says the version's archive is (``X-Terraform-Get``, or a JSON
    ``location``), resolved against the download URL as terraform resolves it."""
    url = _url(namespace, name, provider, version, "download")
    response, body = _answer(url)
    location = response.headers.get("X-Terraform-Get")
    if not location and body.strip():
        found = _json(body).get("location")
        location = found if isinstance(found, str) else None
    if not location:
        raise Unavailable("the upstream's download answer names no source")
    return _resolved(url, location)


def _resolved(url: str, location: str) -> str:
    """A relative location (``./x``, ``/x``) against the download URL; forced getters
    (``git::``) and absolute URLs as given."""
    if location.startswith(("./", "../", "/")) and not location.startswith("//"):
        return urljoin(url, location)
    return location
