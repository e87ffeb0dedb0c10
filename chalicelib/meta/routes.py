"""``/api/v2/ping``, the service discovery document and the OpenAPI document: public,
tiny, no storage.

The OpenAPI document describes every route group, so building it needs every route module
(``chalicelib.core.api.openapi_build`` builds it from what their ``route()`` calls recorded).
The meta function must not import them: they would cost every cold start of ping, and
registering their blueprints in a second app would take them away from their own. So the
document is generated when the code is packaged (``python -m infrastructure.openapi``, run
by ``make package``) into ``openapi.json`` next to this module, shipped with the code, and
read on its first request (once per process). ``tests/test_openapi.py`` checks the committed
file equals a fresh generation, so it cannot drift from the routes.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path

from chalice import Blueprint, Response

from chalicelib.core.api.access import Public
from chalicelib.core.api.http import Ctx, route
from chalicelib.core.api.openapi import Reply
from chalicelib.core.settings import get_settings

bp = Blueprint(__name__)

DISCOVERY: dict[str, object] = {
    "modules.v1": "/api/registry/v1/modules/",
    "providers.v1": "/api/registry/v1/providers/",
    "tfe.v2": "/api/v2/",
    "tfe.v2.1": "/api/v2/",
    "tfe.v2.2": "/api/v2/",
    # terraform login (chalicelib/web/oauth.py, whose LOGIN_V1 must stay equal to this): an
    # OAuth authorization-code grant with PKCE; the CLI resolves the paths against this URL.
    "login.v1": {
        "client": "terraform-cli",
        "grant_types": ["authz_code"],
        "authz": "/app/oauth/authorize",
        "token": "/oauth/token",
        "ports": [10000, 10010],
    },
}


def discovery_document() -> dict[str, object]:
    """DISCOVERY, with ``modules.v1`` at the protocol function's URL when it has one:
    terraform resolves the services against this document's URL and sends the module host's
    token to whatever URL ``modules.v1`` names (hashicorp/terraform internal/registry
    client.go, ``addRequestCreds(host, ...)``), so ``versions`` and ``download`` can skip
    API Gateway (chalicelib.entry.function_url)."""
    protocol_url = get_settings().protocol_url
    if not protocol_url:
        return DISCOVERY
    return {**DISCOVERY, "modules.v1": protocol_url + str(DISCOVERY["modules.v1"])}


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


PING_HEADERS = {
    "TFP-API-Version": "the TFE API version",
    "TFP-AppName": "Terraform Enterprise, or HCP Terraform on the hosted edition",
    "X-TFE-Version": "the TFE release this API matches",
    "X-TFE-Current-Version": "this registry's version",
}
OPENAPI_FILE = Path(__file__).with_name("openapi.json")
OBJECT = {"type": "object"}


@route(
    bp,
    "/api/v2/ping",
    methods=("GET",),
    auth=Public,
    success=Reply(204, headers=PING_HEADERS),
    summary="Ping: the API's version (and rate limit) headers",
)
def ping(ctx: Ctx) -> Response:
    return Response(body="", status_code=204, headers={**api_headers()})


@route(
    bp,
    "/.well-known/terraform.json",
    auth=Public,
    success=Reply(
        200,
        {
            "type": "object",
            "properties": {"login.v1": {"type": "object"}},
            "additionalProperties": {"type": "string"},
        },
    ),
    summary="Service discovery: where the registry protocol and the API are",
)
def discovery(ctx: Ctx) -> Response:
    return Response(
        body=json.dumps(discovery_document()),
        status_code=200,
        headers={"Content-Type": "application/json"},
    )


@functools.cache
def openapi_document() -> str:
    """The generated document, read once per process."""
    return OPENAPI_FILE.read_text(encoding="utf-8")


@route(
    bp,
    "/api/v2/openapi.json",
    auth=Public,
    success=Reply(200, OBJECT, media_type="application/json"),
)
def openapi(ctx: Ctx) -> Response:
    """This API's OpenAPI 3.1 document"""
    return Response(
        body=openapi_document(), status_code=200, headers={"Content-Type": "application/json"}
    )
