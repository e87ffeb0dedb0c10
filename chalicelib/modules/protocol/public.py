"""The public-registry proxy of the hosted edition: three read operations forwarded to an
upstream registry (default the public Terraform registry), with answers cached in DynamoDB
so every Lambda instance shares them.

A version's detail never changes, so it is cached for a day; version lists and "latest"
for ``REGISTRY_PUBLIC_CACHE_TTL`` seconds. When the upstream cannot be reached a stale
cached answer is served if there is one, otherwise a 502 that names the upstream.
"""

from __future__ import annotations

import json
import logging
import time
from dataclasses import dataclass
from urllib.parse import quote

from chalicelib.core import outbound
from chalicelib.core.api.errors import BadGateway, NotFound
from chalicelib.core.settings import get_settings
from chalicelib.modules.protocol import store

log = logging.getLogger("registry.public")

IMMUTABLE_TTL = 24 * 3600
TIMEOUT_SECONDS = 5
MAX_ANSWER_BYTES = 4 * 1024 * 1024


@dataclass(frozen=True)
class Answer:
    status: int
    body: str
    cached: bool


def _path(*parts: str) -> str:
    return "/v1/modules/" + "/".join(quote(p, safe="") for p in parts)


def versions(namespace: str, name: str, provider: str) -> Answer:
    return fetch(_path(namespace, name, provider, "versions"), get_settings().public_cache_ttl)


def latest(namespace: str, name: str, provider: str) -> Answer:
    return fetch(_path(namespace, name, provider), get_settings().public_cache_ttl)


def version(namespace: str, name: str, provider: str, wanted: str) -> Answer:
    return fetch(_path(namespace, name, provider, wanted), IMMUTABLE_TTL)


def fetch(path: str, ttl: int) -> Answer:
    """The upstream's answer for ``path``: from the cache while fresh, else fetched."""
    now = time.time()
    cached = store.cached(path)
    if cached is not None and cached.fresh_until > now:
        return _answer(cached, cached=True)
    base = get_settings().public_registry_url
    try:
        status, body = _get(base + path)
    except outbound.OutboundError as exc:
        if cached is not None:
            log.warning(
                "upstream %s unreachable (%s); serving a stale answer for %s", base, exc, path
            )
            return _answer(cached, cached=True)
        raise BadGateway(f"the public registry at {base} could not be reached") from None
    if status >= 500:
        if cached is not None:
            return _answer(cached, cached=True)
        raise BadGateway(f"the public registry at {base} answered {status}")
    if status in (200, 404):
        store.keep(path, status, body, fresh_until=now + ttl, expires_in=ttl + IMMUTABLE_TTL)
    return Answer(status, body, cached=False)


def _answer(item: store.PublicCacheModel, *, cached: bool) -> Answer:
    return Answer(int(item.status), item.body, cached)


def _get(url: str) -> tuple[int, str]:
    """The answer at ``url`` of the configured upstream (``core.outbound``: that origin only,
    the operator's setting counting as allowed; redirects elsewhere refused)."""
    where = outbound.Destinations.of(trusted=[get_settings().public_registry_url])
    headers = {"Accept": "application/json"}
    with outbound.fetch(url, where, timeout=TIMEOUT_SECONDS, headers=headers) as response:
        return response.status, response.read_at_most(MAX_ANSWER_BYTES).decode("utf-8", "replace")


def decode(answer: Answer) -> dict:
    """The upstream JSON, or 404 when the upstream does not know the module."""
    if answer.status == 404:
        raise NotFound("module not found in the public registry")
    if answer.status != 200:
        raise BadGateway(f"the public registry answered {answer.status}")
    try:
        return json.loads(answer.body)
    except ValueError:
        raise BadGateway("the public registry answered with invalid JSON") from None
