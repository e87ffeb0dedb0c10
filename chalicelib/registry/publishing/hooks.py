"""A VCS module's webhook: added, replaced and removed at the VCS host (``vcs.hooks``), and
the deliveries received from it (verified with ``registry.webhooks``)."""

from __future__ import annotations

import logging
from typing import Any

from pynamodb.exceptions import UpdateError

from chalicelib.core import db, secrets
from chalicelib.core.errors import NotFound, Unauthorized, Unprocessable
from chalicelib.registry import queue as jobs
from chalicelib.registry.publishing.sync import find_module, request_sync
from chalicelib.registry.store import ModuleModel
from chalicelib.vcs import deliveries as webhooks
from chalicelib.vcs import hooks
from chalicelib.vcs import service as vcs

log = logging.getLogger("registry.vcs_webhooks")

WEBHOOK_SECRET_PURPOSE = "registry/webhook-secret"


def registered_hook(module: ModuleModel) -> dict[str, Any] | None:
    """Where the module's webhook is registered now: enough to remove it later."""
    hook_id = (module.webhook_registration or {}).get("hook-id")
    if not hook_id or not module.vcs_repo:
        return None
    return {
        "identifier": module.vcs_repo["identifier"],
        "oauth-token-id": module.vcs_repo["oauth-token-id"],
        "hook-id": hook_id,
    }


def register_webhook(module_id: str, previous: dict[str, Any] | None) -> str:
    """Add the module's webhook at the VCS host, first removing ``previous`` (or the hook
    registered before); the outcome is recorded in ``webhook_registration``."""
    module = find_module(module_id)
    if module is None or not module.vcs_repo:
        return "gone"  # deleting a module queues the removal of its webhook itself
    old = previous or registered_hook(module)
    if old:
        remove_webhook(module.organization, old)
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
        registration.update(status="registered", detail=None, **{"hook-id": hook_id})
    except hooks.ManualSetup as exc:
        registration.update(status="manual", detail=str(exc))
    except hooks.HookError as exc:
        registration.update(status="failed", detail=f"adding the webhook failed: {exc}")
    except Unprocessable:
        registration.update(status="failed", detail="the module's VCS connection is gone")
    try:
        module.update(
            actions=[ModuleModel.webhook_registration.set(registration)],
            condition=ModuleModel.id == module.id,
        )
    except UpdateError as exc:
        if not db.conditional_failure(exc):
            raise
        module.webhook_registration = registration
        added = registered_hook(module)
        if added:  # the module was deleted meanwhile: take the new hook away again
            remove_webhook(module.organization, added)
        return "gone"
    return registration["status"]


def remove_webhook(organization: str, previous: dict[str, Any]) -> str:
    """Best effort: a webhook left behind only delivers to a URL that answers 404."""
    try:
        connection = vcs.resolve_connection(organization, previous["oauth-token-id"])
        hooks.unregister(
            connection.client.service_provider,
            connection.client.api_url,
            connection.token,
            previous["identifier"],
            previous["hook-id"],
        )
    except (hooks.HookError, Unprocessable) as exc:
        log.info("could not remove webhook %s: %s", previous.get("hook-id"), exc)
        return "left"
    return "removed"


def unhook_on_delete(module: ModuleModel) -> None:
    """Queue the removal of a deleted module's webhook at the VCS host."""
    previous = registered_hook(module)
    if previous:
        jobs.enqueue(jobs.UNHOOK, organization=module.organization, previous=previous)


def receive_webhook(webhook_id: str, headers: Any, body: bytes) -> tuple[int, dict[str, str]]:
    """Verify a VCS host's delivery and queue a tag sync when it is about tags."""
    module = next(iter(ModuleModel.by_webhook.query(webhook_id)), None)
    if module is None or not module.webhook_secret or not module.vcs_repo:
        raise NotFound(f"webhook {webhook_id} not found")
    provider = module.vcs_repo["service-provider"]
    secret = secrets.unseal(module.webhook_secret, purpose=WEBHOOK_SECRET_PURPOSE)
    if not webhooks.verify(provider, secret, headers, body):
        raise Unauthorized(
            "the webhook delivery is not signed with this module's secret "
            f"({webhooks.SCHEMES.get(webhooks.family(provider), provider)})",
            title="unauthorized",
        )
    event = webhooks.classify(provider, headers, body)
    if event.kind == webhooks.PING:
        return 200, {"status": "ok", "detail": "webhook verified"}
    if event.kind != webhooks.TAGS:
        return 200, {"status": "ignored", "detail": event.detail}
    if module.vcs_repo.get("branch"):
        return 200, {
            "status": "ignored",
            "detail": "branch-based module: versions are created through the API",
        }
    request_sync(module)
    return 202, {"status": "accepted", "detail": f"tag sync queued ({event.detail})"}
