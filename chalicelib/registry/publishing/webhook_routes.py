"""``POST /webhooks/vcs/<id>``: where VCS hosts deliver push and tag events (no token: the
delivery is verified with the module's webhook secret; see ``vcs.deliveries``)."""

from __future__ import annotations

from chalice import Blueprint, Response

from chalicelib.core.http import Ctx, route
from chalicelib.registry.publishing import hooks

bp = Blueprint(__name__)

WEBHOOK_CONTENT_TYPES = ["application/json", "application/x-www-form-urlencoded"]


@route(
    bp,
    "/webhooks/vcs/{webhook_id}",
    methods=("POST",),
    public=True,
    content_types=WEBHOOK_CONTENT_TYPES,
)
def vcs_webhook(ctx: Ctx, webhook_id: str):
    body = ctx.request.raw_body or b""
    status, outcome = hooks.receive_webhook(webhook_id, ctx.request.headers, body)
    return Response(outcome, status_code=status, headers={"Content-Type": "application/json"})
