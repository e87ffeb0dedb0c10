"""terraform's Provider Network Mirror Protocol at ``/api/registry/mirror/v1/``, and the
admin's seed upload.

``:hostname/:namespace/:type/index.json`` lists versions, ``:version.json`` their archives
with presigned S3 links (terraform sends no credentials to archive links) and ``h1:`` and
``zh:`` hashes. The caller's bearer token is the API's (terraform sends the credentials of
the mirror's host). Errors are the registry protocol's ``{"errors": [...]}``.
"""

from __future__ import annotations

import json
from typing import Any

from chalice import Blueprint, Response

from chalicelib.accounts import authorization
from chalicelib.artifacts import objects
from chalicelib.core.api.access import Bearer
from chalicelib.core.api.errors import NotFound, registry_error_response
from chalicelib.core.api.http import Ctx, route
from chalicelib.core.api.openapi import Payload, Reply
from chalicelib.providers.mirror import service

bp = Blueprint(__name__)

BASE = "/api/registry/mirror/v1"
FILE = BASE + "/{hostname}/{namespace}/{type}/{file}"
SEED = BASE + "/seed"
INDEX = "index.json"
UPSTREAM_ERRORS = {
    502: "the upstream registry failed, or its archive did not match its shasum, or its "
    "SHA256SUMS is not signed by a key it announces or does not list the archive",
    504: "the upstream registry did not answer in time",
}

STRING = {"type": "string"}
MIRROR_DOCUMENT = {
    "type": "object",
    "description": "index.json: {versions: {version: {}}}; <version>.json: {archives: "
    "{os_arch: {url, hashes}}}",
    "properties": {
        "versions": {"type": "object", "additionalProperties": {"type": "object"}},
        "archives": {
            "type": "object",
            "additionalProperties": {
                "type": "object",
                "required": ["url"],
                "properties": {"url": STRING, "hashes": {"type": "array", "items": STRING}},
            },
        },
    },
}
SEED_RESULT = {
    "type": "object",
    "required": ["archives", "skipped"],
    "properties": {
        "archives": {"type": "array", "items": {"type": "object"}},
        "skipped": {"type": "array", "items": STRING},
    },
}


def reply(body: dict[str, Any], status: int = 200) -> Response:
    return Response(
        body=json.dumps(body), status_code=status, headers={"Content-Type": "application/json"}
    )


@route(
    bp,
    FILE,
    auth=Bearer,
    render_error=registry_error_response,
    tag="providers",
    success=Reply(200, MIRROR_DOCUMENT),
    errors=UPSTREAM_ERRORS,
)
def mirror_file(ctx: Ctx, hostname: str, namespace: str, type: str, file: str):  # noqa: A002
    """A provider's versions (index.json) or one version's archives (<version>.json)."""
    where = service.address(hostname, namespace, type)
    if file == INDEX:
        found = service.versions(ctx.user, where)
        return reply({"versions": {v: {} for v in found}})
    if not file.endswith(".json"):
        raise NotFound(f"{file} not found: ask index.json or <version>.json")
    archives = service.archives(ctx.user, where, file[: -len(".json")])
    return reply(
        {
            "archives": {
                platform: {
                    "url": objects.presigned_download_url(archive.key),
                    "hashes": list(archive.hashes),
                }
                for platform, archive in archives.items()
            }
        }
    )


@route(
    bp,
    SEED,
    auth=Bearer,
    methods=("PUT",),
    render_error=registry_error_response,
    tag="providers",
    content_types=["application/octet-stream"],
    body=Payload(("application/octet-stream",), "terraform providers mirror's output, .tar.gz"),
    success=Reply(200, SEED_RESULT),
)
def seed_mirror(ctx: Ctx):
    """Seed the cache with ``terraform providers mirror``'s output (site admins only)."""
    if not authorization.is_site_admin(ctx.user):
        raise NotFound("not found: seeding the mirror is for site admins")
    # tarfile loads with the first seed, not with every cold start of the function.
    from chalicelib.providers.mirror import seed

    body = ctx.request.raw_body or b""
    return reply(seed.seed(ctx.user, body.encode() if isinstance(body, str) else body))
