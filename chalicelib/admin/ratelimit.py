"""API rate limiting, shared by every Lambda instance through one DynamoDB counter per window.

A client is its token when it sends a valid one, else its source IP (invalid and made-up
tokens count against their address). Each
request is one conditional UpdateItem on the item ``<client>#<current second>`` (ADD 1 only
while the count is below the limit; the item expires through DynamoDB's TTL). When the
condition fails the request is answered 429 without reaching its handler. The general
settings (switch and limit) are read from a per-instance cache refreshed every few seconds,
so the limiter costs exactly one DynamoDB call per request.

Every response carries ``X-RateLimit-Limit``, ``X-RateLimit-Remaining`` and
``X-RateLimit-Reset`` (float seconds until the window ends); a 429 adds ``Retry-After``.
With ``api-rate-limiting-enabled`` false, no counting happens and no such header is sent.
If DynamoDB cannot be reached the request is let through (and logged): the limiter must not
turn a storage hiccup into an outage.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable
from typing import Any

from chalice import Response

from chalicelib.admin.store import cached_general_settings, count_request
from chalicelib.core.api.errors import (
    TooManyRequests,
    Unauthorized,
    error_response,
    registry_error_response,
)
from chalicelib.core.auth import request_principal

log = logging.getLogger("registry.ratelimit")

WINDOW_SECONDS = 1
COUNTER_TTL_SECONDS = 60
HEADERS = ("X-RateLimit-Limit", "X-RateLimit-Remaining", "X-RateLimit-Reset")

# The time source the windows are cut from, read once per request. Tests set it (the
# ``rate_limited`` fixture holds it still) so that a burst never straddles two windows
# however slow the machine.
clock: Callable[[], float] = time.time


def client_key(request: Any) -> str:
    """A verified token's id, else the source address: keying on whatever token arrives
    would give each made-up token a fresh counter (and a new item)."""
    if request.headers.get("authorization"):
        try:
            return "token:" + request_principal(request, audit_trail=True).token_id
        except Unauthorized:
            pass
    identity = (request.context or {}).get("identity") or {}
    return "ip:" + str(identity.get("sourceIp") or "unknown")


def _limit_settings() -> tuple[bool, int]:
    general = cached_general_settings()
    return bool(general.get("api-rate-limiting-enabled", True)), int(general["api-rate-limit"])


def rate_limit(request: Any, get_response: Callable[[Any], Response]) -> Response:
    """Chalice http middleware: count the request, answer 429 past the limit."""
    try:
        enabled, limit = _limit_settings()
    except Exception:  # noqa: BLE001 - fail open, never fail the API because of the limiter
        log.exception("rate limit settings unavailable; request let through")
        return get_response(request)
    if not enabled:
        return _without_headers(get_response(request))
    moment = clock()
    window = int(moment // WINDOW_SECONDS) * WINDOW_SECONDS
    reset = max(window + WINDOW_SECONDS - moment, 0.0)
    key = f"{client_key(request)}#{window}"
    try:
        count = count_request(key, limit, window + COUNTER_TTL_SECONDS)
    except Exception:  # noqa: BLE001 - same: a storage hiccup must not become an outage
        log.exception("rate limit counter unavailable; request let through")
        return get_response(request)
    if count is None:
        error = TooManyRequests("You have exceeded the API's rate limit.")
        error.headers["Retry-After"] = str(max(1, math.ceil(reset)))
        path = getattr(request, "path", "") or ""
        render = registry_error_response if path.startswith("/api/registry") else error_response
        response = render(error)
        remaining = 0
    else:
        response = get_response(request)
        remaining = max(limit - count, 0)
    response.headers["X-RateLimit-Limit"] = str(limit)
    response.headers["X-RateLimit-Remaining"] = str(remaining)
    response.headers["X-RateLimit-Reset"] = f"{reset:.3f}"
    return response


def _without_headers(response: Response) -> Response:
    for name in HEADERS:
        response.headers.pop(name, None)
    return response
