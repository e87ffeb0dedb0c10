"""Runs the VCS publishing jobs that ``registry.queue`` puts on the ingest queue."""

from __future__ import annotations

import logging
from typing import Any

from chalicelib.artifacts import queue, semver
from chalicelib.core import observe
from chalicelib.modules import store
from chalicelib.modules.publishing import hooks, sync

log = logging.getLogger("registry.publishing")

# Outcomes that are a failure the module's owner must fix (the reason is on the module's
# sync report or on the version).
FAILED = {"failed", str(sync.CLONE_FAILED)}


def run(message: dict[str, Any]) -> str:
    """Run one job message; returns what happened (for logs and tests), and logs it."""
    outcome = _run(message)
    _report(message, outcome)
    return outcome


def _report(message: dict[str, Any], outcome: str) -> None:
    """One line per job: its kind, module, version and outcome; a failure also says which
    organization, namespace, name and provider, and why (read back: failures are rare)."""
    module_id = message.get("module_id")
    fields: dict[str, Any] = {"job": message.get("kind"), "outcome": outcome}
    fields.update(module_id=module_id, version=message.get("version"))
    failed = outcome in FAILED
    module = sync.find_module(module_id) if failed and module_id else None
    if module is not None:
        fields.update(
            organization=module.organization,
            registry_name=module.registry_name,
            namespace=module.namespace,
            name=module.name,
            provider=module.provider,
        )
        fields["reason"] = _reason(message, module)
    text = f"publishing job {fields['job']} of {module_id}: {outcome}"
    if fields.get("reason"):
        text += f": {fields['reason']}"
    observe.emit(log, logging.WARNING if failed else logging.INFO, text, fields)


def _reason(message: dict[str, Any], module: Any) -> str | None:
    if message.get("kind") == queue.SYNC:
        return (module.vcs_sync or {}).get("error")
    try:
        order_key = semver.parse(message["version"]).order_key
    except (KeyError, semver.InvalidVersion):
        return None
    version = store.find_version(module.id, order_key)
    return version.error if version is not None else None


def _run(message: dict[str, Any]) -> str:
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
