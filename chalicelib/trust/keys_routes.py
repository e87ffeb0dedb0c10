"""``GET /api/registry/v1/signing-keys``: the public keys that verify this registry's signed
provenance, for anyone (no token: a verifier may have none), in PEM with the key id each
envelope's signature names. The key that signs now comes first; the keys that signed before
a rotation stay listed (``trust.provenance.public_keys``)."""

from __future__ import annotations

import json

from chalice import Blueprint, Response

from chalicelib.core.api.access import Public
from chalicelib.core.api.errors import registry_error_response
from chalicelib.core.api.http import Ctx, route
from chalicelib.core.api.openapi import Reply
from chalicelib.trust import provenance

bp = Blueprint(__name__)

SIGNING_KEYS = "/api/registry/v1/signing-keys"
STRING = {"type": "string"}
KEYS_DOCUMENT = {
    "type": "object",
    "required": ["keys"],
    "properties": {
        "keys": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["keyid", "keytype", "scheme", "pem", "current"],
                "properties": {
                    "keyid": STRING,
                    "keytype": STRING,
                    "scheme": STRING,
                    "pem": STRING,
                    "current": {"type": "boolean", "description": "whether it signs now"},
                },
            },
        }
    },
}


@route(
    bp,
    SIGNING_KEYS,
    auth=Public,
    render_error=registry_error_response,
    success=Reply(200, KEYS_DOCUMENT),
)
def signing_keys(ctx: Ctx) -> Response:
    """The public keys that verify provenance envelopes (PEM, by key id)."""
    keys = [
        {
            "keyid": key.key_id,
            "keytype": "ecdsa",
            "scheme": provenance.SCHEME,
            "pem": key.pem,
            "current": current,
        }
        for key, current in provenance.public_keys()
    ]
    return Response(
        body=json.dumps({"keys": keys}),
        status_code=200,
        headers={"Content-Type": "application/json", "Cache-Control": "public, max-age=300"},
    )
