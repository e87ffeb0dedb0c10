"""``POST /webhooks/vcs/<id>``: where VCS hosts deliver push and tag events (no token: the
delivery is verified with the module's webhook secret; see ``vcs.deliveries``)."""

from __future__ import annotations

from chalice import Blueprint, Response

from chalicelib.core.api.access import Signed
from chalicelib.core.api.http import Ctx, route
from chalicelib.core.api.openapi import Payload, Reply
from chalicelib.modules.publishing import hooks

bp = Blueprint(__name__)

WEBHOOK_CONTENT_TYPES = ["application/json", "application/x-www-form-urlencoded"]
OUTCOME = {
    "type": "object",
    "required": ["status"],
    "properties": {"status": {"type": "string"}, "detail": {"type": "string"}},
}


@route(
    bp,
    "/webhooks/vcs/{webhook_id}",
    methods=("POST",),
    auth=Signed,
    content_types=WEBHOOK_CONTENT_TYPES,
    body=Payload(tuple(WEBHOOK_CONTENT_TYPES), "the VCS host's event, signed with the secret"),
    success=(
        Reply(200, OUTCOME, description="verified; not about tags (ignored) or a ping"),
        Reply(202, OUTCOME, description="verified; a tag sync is queued"),
    ),
    errors={401: "the signature (or secret) is wrong or missing"},
    summary="Receive a VCS host's webhook delivery",
)
def vcs_webhook(ctx: Ctx, webhook_id: str):
    body = ctx.request.raw_body or b""
    assert isinstance(body, bytes)  # Chalice types raw_body str | bytes; it is always bytes
    status, outcome = hooks.receive_webhook(webhook_id, ctx.request.headers, body)
    return Response(outcome, status_code=status, headers={"Content-Type": "application/json"})
