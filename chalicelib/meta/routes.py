"""``/api/v2/ping`` and the service discovery document: public, tiny, no storage."""

from __future__ import annotations

import json

from chalice import Blueprint, Response

from chalicelib.core.http import Ctx, route
from chalicelib.core.settings import get_settings

bp = Blueprint(__name__)

DISCOVERY = {
    "modules.v1": "/api/registry/v1/modules/",
    "tfe.v2": "/api/v2/",
    "tfe.v2.1": "/api/v2/",
    "tfe.v2.2": "/api/v2/",
}


def api_headers() -> dict[str, str]:
    """What go-tfe reads from /ping to learn the API version and the rate limit."""
    settings = get_settings()
    return {
        "TFP-API-Version": "2.6",
        "TFP-AppName": "HCP Terraform" if settings.hosted else "Terraform Enterprise",
        "X-TFE-Version": "v202411-1",
        "X-TFE-Current-Version": settings.app_version,
        # X-RateLimit-Limit/-Remaining/-Reset: added to every response, this one included,
        # by the rate limiter middleware (chalicelib/admin/ratelimit.py), with the real limit.
    }


@route(bp, "/api/v2/ping", methods=("GET",), public=True)
def ping(ctx: Ctx) -> Response:
    return Response(body="", status_code=204, headers=api_headers())


@route(bp, "/.well-known/terraform.json", public=True)
def discovery(ctx: Ctx) -> Response:
    return Response(
        body=json.dumps(DISCOVERY), status_code=200, headers={"Content-Type": "application/json"}
    )
