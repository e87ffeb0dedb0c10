"""API rate limiting: TFE's ``api-rate-limit`` requests per client per second, kept across
Lambda instances by one DynamoDB counter per window that is written only by instances whose
client passed its share of the limit.

A client is its token when it sends a valid one, else its source IP (invalid and made-up
tokens count against their address). Each instance counts its clients' requests of the
current second in memory (``LocalCounts``). Up to the *share* (a third of the limit: 10 of
the default 30) an instance lets a client's requests through without writing anything, so a
client under the share costs no DynamoDB call at all. The request past the share reserves
in one conditional UpdateItem on the item ``<client>#<current second>``: ADD n, where n is
the requests already let through unrecorded plus a batch for the ones to come (at most the
share, at most what is left of the limit as far as this instance knows), only while the
count stays within the limit. The batch is then spent locally, the next one reserved the
same way. If the batch does not fit (other instances counted meanwhile), one more try
reserves only this request; if that fails too, the window is full on this instance, which
answers 429 without reaching the handler and without writing again until the next second.
The counter item expires through DynamoDB's TTL. The general settings (switch and limit)
are read from a per-instance cache refreshed every few seconds.

Tolerance, with L the limit, S = L // 3 the share, and k the instances that serve one client
within one second: the counter never passes L, and each instance lets through at most S
requests it did not record, and only while it has never written (its first write records
them). So at most **L + (k - 1) * S** requests are let through in a second (L exactly on one
instance; 40 of 30 on two; 2 L on four). The other way, batches reserved on one instance
and not spent there may make another refuse early: a client spread over k instances is
refused after at least L - (k - 1) * S requests in a second. Writes: none for a client under
S requests per second per instance; about L / S (3) per second for one at the limit on one
instance, and none for the requests refused past it there.

Every response carries ``X-RateLimit-Limit``, ``X-RateLimit-Remaining`` (the limit less the
client's count as this instance knows it) and ``X-RateLimit-Reset`` (float seconds until the
window ends); a 429 adds ``Retry-After``. With ``api-rate-limiting-enabled`` false, no
counting happens and no such header is sent. If DynamoDB cannot be reached the request is
let through (and logged): the limiter must not turn a storage hiccup into an outage.
"""

from __future__ import annotations

import logging
import math
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
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
# An instance lets a client's requests through unwritten up to limit // SHARE_DIVISOR a
# second, and reserves batches of at most that many past it (see the module docstring).
SHARE_DIVISOR = 3
HEADERS = ("X-RateLimit-Limit", "X-RateLimit-Remaining", "X-RateLimit-Reset")

# The time source the windows are cut from, read once per request. Tests set it (the
# ``rate_limited`` fixture holds it still) so that a burst never straddles two windows
# however slow the machine.
clock: Callable[[], float] = time.time


def share_of(limit: int) -> int:
    """How many requests a second an instance lets through for one client before writing."""
    return max(1, limit // SHARE_DIVISOR)


@dataclass
class ClientWindow:
    """One client's requests in the current window, as this instance knows them."""

    admitted: int = 0  # let through by this instance
    reserved: int = 0  # added to the shared counter by this instance (recorded or batched)
    seen: int = 0  # the shared counter after this instance's last write
    full: bool = False  # the counter refused: no more writes in this window

    @property
    def count(self) -> int:
        """Every instance's requests this one knows of: what the others had counted when it
        last wrote, and its own (not the batch it has yet to spend)."""
        return self.seen - self.reserved + self.admitted

    def admit(self, limit: int, key: str, expires_at: int) -> int | None:
        """Count one request: the client's count after it, or ``None`` when it is refused."""
        if self.full:
            return None
        share = share_of(limit)
        if self.admitted < self.reserved or (self.reserved == 0 and self.admitted < share):
            self.admitted += 1  # within the share, or within a batch already reserved
            return self.count
        unrecorded = self.admitted - self.reserved  # the share let through, before a first write
        room = limit - self.count
        if room >= 1:
            # A batch, else only what this request needs (another instance took the rest).
            for amount in dict.fromkeys((unrecorded + min(share, room), unrecorded + 1)):
                hits = count_request(key, limit, expires_at, amount)
                if hits is not None:
                    self.seen, self.reserved = hits, self.reserved + amount
                    self.admitted += 1
                    return self.count
        self.full = True
        return None


class LocalCounts:
    """This instance's clients in the current window; an earlier window's are dropped."""

    def __init__(self) -> None:
        self.window: int | None = None
        self.clients: dict[str, ClientWindow] = {}
        # Lambda serves one request at a time per instance; the local server may not.
        self.lock = threading.Lock()

    def admit(self, client: str, window: int, limit: int) -> int | None:
        with self.lock:
            if window != self.window:
                self.window, self.clients = window, {}
            counted = self.clients.setdefault(client, ClientWindow())
            return counted.admit(limit, f"{client}#{window}", window + COUNTER_TTL_SECONDS)


# This instance's counts (the tests give each simulated instance its own).
instance_counts = LocalCounts()


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
    client = client_key(request)
    try:
        count = instance_counts.admit(client, window, limit)
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
