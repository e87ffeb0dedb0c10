"""A VCS module's webhook: added, replaced and removed at the VCS host (``vcs.hooks``), and
the deliveries received from it (verified with ``vcs.deliveries``).

A hook is removed by a job (``vcs-unhook``) that carries the host's API URL and the sealed
token string, taken while the module's connection still exists: when an organization is
deleted its connections go right after its modules, before the job runs."""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import Any

from chalicelib.artifacts import queue
from chalicelib.core import secrets
from chalicelib.core.api.errors import NotFound, Unauthorized, Unprocessable
from chalicelib.core.audit.events import SUCCEEDED
from chalicelib.modules import store, writes
from chalicelib.modules.audit import events as audit_events
from chalicelib.modules.publishing.sync import find_module, request_sync
from chalicelib.modules.statuses import HookStatus
from chalicelib.modules.store import ModuleModel
from chalicelib.vcs import deliveries, hooks
from chalicelib.vcs import service as vcs

log = logging.getLogger("registry.publishing.hooks")

WEBHOOK_SECRET_PURPOSE = "registry/webhook-secret"


def registered_hook(module: ModuleModel) -> dict[str, Any] | None:
    """Where the module's webhook is registered now, with what removing it needs (see the
    module docstring); None when there is no hook, or no connection left to remove it with."""
    hook_id = (module.webhook_registration or {}).get("hook-id")
    if not hook_id or not module.vcs_repo:
        return None
    repo = module.vcs_repo
    try:
        access = vcs.hook_access(module.organization, repo["oauth-token-id"])
    except Unprocessable:
        log.info("webhook %s of %s: its connection is gone", hook_id, module.id)
        return None
    return {"identifier": repo["identifier"], "hook-id": hook_id, **access}


def queue_removals(modules: Iterable[ModuleModel]) -> None:
    """Queue the removal of deleted modules' webhooks at the VCS host. Call it before the
    modules' connections are deleted."""
    removals = [hook for module in modules if (hook := registered_hook(module))]
    queue.enqueue_many(queue.UNHOOK, [{"previous": hook} for hook in removals])


def register_webhook(module_id: str, previous: dict[str, Any] | None) -> str:
    """Add the module's webhook at the VCS host, first removing ``previous`` (or the hook
    registered before); the outcome is recorded in ``webhook_registration``."""
    module = find_module(module_id)
    if module is None or not module.vcs_repo:
        return "gone"  # deleting a module queues the removal of its webhook itself
    old = previous or registered_hook(module)
    if old:
        remove_webhook(old)
    registration = dict(module.webhook_registration or {})
    registration.pop("hook-id", None)
    repo = module.vcs_repo
    try:
        connection = vcs.resolve_connection(module.organization, repo["oauth-token-id"])
        secret = secrets.unseal(module.webhook_secret, purpose=WEBHOOK_SECRET_PURPOSE)
        hook_id = hooks.register(
            connection.client.service_provider,
            connection.client.api_url,
            connection.token,
            repo["identifier"],
            registration["url"],
            secret,
        )
        registration.update(status=HookStatus.REGISTERED, detail=None, **{"hook-id": hook_id})
    except hooks.ManualSetup as exc:
        registration.update(status=HookStatus.MANUAL, detail=str(exc))
    except hooks.HookError as exc:
        registration.update(status=HookStatus.FAILED, detail=f"adding the webhook failed: {exc}")
    except Unprocessable:
        registration.update(status=HookStatus.FAILED, detail="the module's VCS connection is gone")
    status = str(registration["status"])
    outcome: dict[str, str] = {
        HookStatus.REGISTERED: SUCCEEDED,
        HookStatus.FAILED: audit_events.FAILED,
    }
    meta = {"vcs-repo": repo["identifier"], "status": status, "detail": registration.get("detail")}
    event = audit_events.of_module(
        None, module, audit_events.WEBHOOK_REGISTERED, meta, outcome=outcome.get(status, status)
    )
    try:
        actions = [ModuleModel.webhook_registration.set(registration)]
        writes.update_module(module, actions, event, read_back=False)
    except writes.ModuleGone:
        module.webhook_registration = registration
        added = registered_hook(module)
        if added:  # the module was deleted meanwhile: take the new hook away again
            remove_webhook(added)
        return "gone"
    return registration["status"]


def remove_webhook(previous: dict[str, Any]) -> str:
    """Best effort: a webhook left behind only delivers to a URL that answers 404."""
    try:
        hooks.unregister(
            previous["service-provider"],
            previous["api-url"],
            vcs.unseal_token(previous["sealed-token"]),
            previous["identifier"],
            previous["hook-id"],
        )
    except hooks.HookError as exc:
        log.info("could not remove webhook %s: %s", previous.get("hook-id"), exc)
        return "left"
    return "removed"


def receive_webhook(webhook_id: str, headers: Any, body: bytes) -> tuple[int, dict[str, str]]:
    """Verify a VCS host's delivery and queue a tag sync when it is about tags."""
    module = store.module_by_webhook(webhook_id)
    if module is None or not module.webhook_secret or not module.vcs_repo:
        raise NotFound(f"webhook {webhook_id} not found")
    provider = module.vcs_repo["service-provider"]
    secret = secrets.unseal(module.webhook_secret, purpose=WEBHOOK_SECRET_PURPOSE)
    if not deliveries.verify(provider, secret, headers, body):
        raise Unauthorized(
            "the webhook delivery is not signed with this module's secret "
            f"({deliveries.SCHEMES.get(deliveries.family(provider), provider)})",
            title="unauthorized",
        )
    event = deliveries.classify(provider, headers, body)
    if event.kind == deliveries.PING:
        return 200, {"status": "ok", "detail": "webhook verified"}
    if event.kind != deliveries.TAGS:
        return 200, {"status": "ignored", "detail": event.detail}
    if module.vcs_repo.get("branch"):
        return 200, {
            "status": "ignored",
            "detail": "branch-based module: versions are created through the API",
        }
    meta = {"via": "webhook", "delivery": event.detail}
    request_sync(module, audit_events.of_module(None, module, audit_events.SYNC_REQUESTED, meta))
    return 202, {"status": "accepted", "detail": f"tag sync queued ({event.detail})"}
