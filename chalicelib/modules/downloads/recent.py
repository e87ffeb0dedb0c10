"""Who downloaded one version lately: the consumers the notifications mail when it is
deprecated or nears its revocation (``chalicelib.notifications.consumers``)."""

from __future__ import annotations

from datetime import datetime, timedelta

from chalicelib.core.data.ids import iso
from chalicelib.modules.downloads import store

# How far back a download makes its consumer one to tell.
RECENT_DAYS = 90


def recent_consumers(
    module_id: str, version: str, moment: datetime, days: int = RECENT_DAYS
) -> list[tuple[str, str]]:
    """``(kind, id)`` of each consumer (``user``, ``team``, ``organization``) whose last
    download of ``version`` is within ``days`` before ``moment``, the most recent first: one
    Query of the module's downloads (as the owners' report reads them)."""
    since = iso(moment - timedelta(days=days))
    item = next((i for i in store.module_downloads(module_id) if i.version == version), None)
    if item is None:
        return []
    recent = [(last, key) for key, last in item.consumers.items() if last >= since]
    return [key for _, key in sorted(recent, reverse=True)]
