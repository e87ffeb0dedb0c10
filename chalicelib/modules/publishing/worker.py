"""Runs the VCS publishing jobs that ``registry.queue`` puts on the ingest queue."""

from __future__ import annotations

from typing import Any

from chalicelib.artifacts import queue
from chalicelib.modules.publishing import hooks, sync


def run(message: dict[str, Any]) -> str:
    """Run one job message; returns what happened (for logs and tests)."""
    kind = message.get("kind")
    if kind == queue.SYNC:
        return sync.sync_tags(message["module_id"])
    if kind == queue.FETCH:
        return sync.fetch_version(message["module_id"], message["version"], message["version_id"])
    if kind == queue.HOOK:
        return hooks.register_webhook(message["module_id"], message.get("previous"))
    if kind == queue.UNHOOK:
        return hooks.remove_webhook(message["previous"])
    return "ignored"
