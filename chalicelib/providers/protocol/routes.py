"""Routes of the provider registry protocol (``providers.v1``): ``versions`` and
``download`` at ``/api/registry/v1/providers/:namespace/:type/...``, with the organization
name as namespace and the same bearer tokens as the API (terraform sends the host's
credentials). Errors use the protocol's ``{"errors": [...]}``."""

from __future__ import annotations

import json
from typing import Any

from chalice import Blueprint, Response

from chalicelib.core.api.access import Bearer
from chalicelib.core.api.errors import registry_error_response
from chalicelib.core.api.http import Ctx, route
from chalicelib.core.api.openapi import Reply
from chalicelib.providers.protocol import service

bp = Blueprint(__name__)

BASE = "/api/registry/v1/providers"
PROVIDER = BASE + "/{namespace}/{type}"

STRING = {"type": "string"}
STRINGS = {"type": "array", "items": STRING}
VERSIONS = {
    "type": "object",
    "required": ["versions"],
    "properties": {
        "versions": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["version", "protocols", "platforms"],
                "properties": {
                    "version": STRING,
                    "protocols": STRINGS,
                    "platforms": {
                        "type": "array",
                        "items": {
                            "type": "object",
                            "properties": {"os": STRING, "arch": STRING},
                        },
                    },
                },
            },
        },
        "warnings": {"type": ["array", "null"], "items": STRING},
    },
}
DOWNLOAD = {
    "type": "object",
    "required": [
        "protocols",
        "os",
        "arch",
        "filename",
        "download_url",
        "shasums_url",
        "shasums_signature_url",
        "shasum",
        "signing_keys",
    ],
    "properties": {
        "protocols": STRINGS,
        **{
            name: STRING
            for name in (
                "os",
                "arch",
                "filename",
                "download_url",
                "shasums_url",
                "shasums_signature_url",
                "shasum",
            )
        },
        "signing_keys": {
            "type": "object",
            "properties": {
                "gpg_public_keys": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "properties": {"key_id": STRING, "ascii_armor": STRING},
                    },
                }
            },
        },
    },
}


def reply(body: dict[str, Any]) -> Response:
    return Response(
        body=json.dumps(body), status_code=200, headers={"Content-Type": "application/json"}
    )


@route(
    bp,
    PROVIDER + "/versions",
    auth=Bearer,
    render_error=registry_error_response,
    success=Reply(200, VERSIONS),
)
def versions(ctx: Ctx, namespace: str, type: str):
    """The provider's verified versions, with their protocols and platforms."""
    return reply(service.versions_document(service.find_provider(ctx.user, namespace, type)))


@route(
    bp,
    PROVIDER + "/{version}/download/{os}/{arch}",
    auth=Bearer,
    render_error=registry_error_response,
    success=Reply(200, DOWNLOAD),
)
def download(ctx: Ctx, namespace: str, type: str, version: str, os: str, arch: str):
    """Where one platform's archive, SHA256SUMS and signature are (presigned), and the key
    that signed them."""
    found = service.find_provider(ctx.user, namespace, type)
    return reply(service.download_document(found, version, os, arch))
