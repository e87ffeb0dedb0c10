"""What the publishing pages share: their blueprint and URLs, the caller who may publish,
and the Content-Security-Policy of the upload page.

Every read and write goes through the registry's services (``modules.service``), as
``/api/v2/organizations/:org/registry-modules`` does: the same permissions (owners and teams
with manage-modules publish; deleting is for owners), the same 404 for anyone else, the same
422 messages. A handler catches ``Unprocessable`` only to show its form again with the
message; anything else reaches ``view.page``'s error pages. Forms are the people pages'
(``view.posted``: CSRF checked first, nothing changes without it).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from chalice import Blueprint, Response

from chalicelib.accounts import authorization
from chalicelib.core.auth import Principal
from chalicelib.modules import service as registry
from chalicelib.modules.service import ModuleRef
from chalicelib.web.view import WebCtx

if TYPE_CHECKING:  # the registry's records, read only through its service
    from chalicelib.modules.store import ModuleModel

bp = Blueprint(__name__)

PUBLISH = "/app/{organization}/registry/publish"
MODULE = PUBLISH + "/{registry}/{namespace}/{name}/{provider}"
VERSION = MODULE + "/{version}"
# An origin as CSP source expressions take it: scheme, host, optional port, nothing else.
_ORIGIN = re.compile(r"https?://[A-Za-z0-9.-]+(?::[0-9]{1,5})?")


def module_url(ref: ModuleRef, version: str | None = None) -> str:
    """The publishing page of a module (or of one of its versions)."""
    path = (
        f"/app/{ref.organization}/registry/publish/{ref.registry}/{ref.namespace}/"
        f"{ref.name}/{ref.provider}"
    )
    return f"{path}/{version}" if version else path


def publisher(ctx: WebCtx, organization: str) -> tuple[Principal, authorization.OrgAccess]:
    """The caller and their rights, who must be allowed to publish in ``organization``
    (owners, manage-modules teams): anyone else gets the API's 404."""
    principal = ctx.principal_or_sign_in()
    rights = authorization.organization_access(principal, organization)
    registry.require_rights(rights, "publishing a module")
    return principal, rights


def connections(principal: Principal, organization: str) -> list[dict[str, str]]:
    """The organization's VCS connections a module can publish from: each OAuth token, named
    by its client (``vcs.service``, as ``GET /organizations/:org/oauth-clients`` lists)."""
    # The new-module page only: the VCS room (its git client) stays out of the cold start.
    from chalicelib.vcs import service as vcs

    return [
        {"id": token.id, "label": f"{client.name or client.service_provider} ({client.http_url})"}
        for client in sorted(vcs.list_clients(principal, organization), key=lambda c: c.id)
        for token in vcs.client_tokens(client)
    ]


def publishable(
    ctx: WebCtx, ref: ModuleRef, *, owner: bool = False
) -> tuple[ModuleModel, authorization.OrgAccess]:
    """The module and the caller's rights, who must be allowed to publish it (``owner``:
    to delete it, which is the owners'): anyone else gets the API's 404."""
    module, rights = registry.get_module(ctx.principal_or_sign_in(), ref)
    what = "deleting a module" if owner else "publishing a module"
    registry.require_rights(rights, what, owner=owner)
    return module, rights


def connect_origin(url: str) -> str | None:
    """The origin of a presigned upload link (``https://bucket.s3.eu-west-1.amazonaws.com``,
    or the local stack's moto), when it is one a CSP can name safely; else None."""
    parts = urlsplit(url)
    origin = f"{parts.scheme}://{parts.netloc}"
    return origin if _ORIGIN.fullmatch(origin) else None


def allow_connect(response: Response, origin: str | None) -> Response:
    """This response's CSP with ``connect-src`` allowing ``origin`` too (the upload page's
    script PUTs the archive there); every other directive stays as ``view`` sets it."""
    if origin:
        policy = str(response.headers["Content-Security-Policy"])
        response.headers["Content-Security-Policy"] = policy.replace(
            "connect-src 'self'", f"connect-src 'self' {origin}"
        )
    return response
