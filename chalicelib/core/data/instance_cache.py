"""What one Lambda instance keeps of rarely changing items (the site's settings areas), read
again at most every ``REGISTRY_SETTINGS_CACHE_SECONDS``: the rate limiter, the pages and the
module cache's protocol answers ask on every request, and most answers come from here. A save
on this instance forgets its copy; other instances see it within the TTL."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any, TypeVar, cast

from chalicelib.core.settings import get_settings

T = TypeVar("T")

_lock = threading.Lock()
_held: dict[str, tuple[float, Any]] = {}


def held(name: str, read: Callable[[], T]) -> T:
    """``read()``'s answer for ``name``, re-read at most every REGISTRY_SETTINGS_CACHE_SECONDS."""
    ttl = get_settings().admin_settings_cache_ttl
    moment = time.monotonic()
    with _lock:
        found = _held.get(name)
        if found is not None and moment - found[0] < ttl:
            return cast("T", found[1])
    value = read()
    with _lock:
        _held[name] = (moment, value)
    return value


def forget(name: str | None = None) -> None:
    """Forget one name's copy, or every one."""
    with _lock:
        if name is None:
            _held.clear()
        else:
            _held.pop(name, None)
