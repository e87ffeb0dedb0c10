"""The audit trail's API, in HCP Terraform's shape (not JSON:API, as HCP's is not):

* ``GET /api/v2/organization/audit-trail``: the calling organization token's (or its audit
  trail token's) organization's events (HCP: "cannot be accessed with a user token or team
  token"; here they get the 404 of a thing they cannot see). The audit trail token is
  admitted here and refused everywhere else (``core.auth``).
* ``GET /api/v2/admin/audit-trail``: a site admin, or a site auditor, reads any
  organization's events (``filter[organization]``, or ``organization``) or, without one, the
  site-wide ones (``SiteAuditor``: the only route of the admin API a site auditor may call).

Both take ``since`` (events after it, ISO 8601), ``page[number]`` and ``page[size]`` (HCP's
default 1,000, at most 1,000) and answer ``data[]`` oldest first with ``pagination``
{``current_page``, ``prev_page``, ``next_page``, ``total_pages``, ``total_count``}
(``store.read_page`` says what the count costs).
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from chalice import Blueprint, Response

from chalicelib.accounts.authorization import SiteAuditor
from chalicelib.core import observe
from chalicelib.core.api import bounds
from chalicelib.core.api.access import Access
from chalicelib.core.api.errors import NotFound, Unprocessable
from chalicelib.core.api.http import Ctx, route
from chalicelib.core.api.openapi import Param, Reply
from chalicelib.core.api.pagination import int_param
from chalicelib.core.audit import trail
from chalicelib.core.auth import AUDIT_TRAILS, Principal, request_principal

bp = Blueprint(__name__)

ORGANIZATION_TRAIL = "/api/v2/organization/audit-trail"
ADMIN_TRAIL = "/api/v2/admin/audit-trail"

QUERY = (
    Param("since", "only events after this moment (ISO 8601, UTC)", {"type": "string"}),
    Param("page[number]", "page number (from 1)", {"type": "integer", "minimum": 1}),
    Param(
        "page[size]",
        f"events per page (default {trail.DEFAULT_PAGE_SIZE}, at most {trail.MAX_PAGE_SIZE})",
        {"type": "integer", "minimum": 1, "maximum": trail.MAX_PAGE_SIZE},
    ),
)
ORGANIZATION_FILTER = {"type": "string", "maxLength": bounds.NAME}
ADMIN_QUERY = (
    *QUERY,
    Param("filter[organization]", "the organization's events", ORGANIZATION_FILTER),
    Param("organization", "the same as filter[organization]", ORGANIZATION_FILTER),
)
NOT_FOUND = "not found: the audit trail is read with an organization token"
# The tokens that read an organization's trail: its organization token, its audit trail token.
TRAIL_READERS = ("organization", AUDIT_TRAILS)


def _trail_reader(request: Any) -> Principal:
    """Any valid token, the audit trail token included (the one route that admits it); the
    handler answers 404 to the kinds that do not read a trail."""
    principal = request_principal(request, audit_trail=True)
    observe.note_principal(principal.kind, principal.id)
    return principal


AuditTrailReader = Access(
    "audit-trail",
    _trail_reader,
    scheme="bearerAuth",
    description="an organization token or the organization's audit trail token (404 for "
    "user and team tokens); the only route an audit trail token may call",
)


def _since(query: dict[str, str]) -> datetime | None:
    raw = query.get("since")
    if not raw:
        return None
    try:
        moment = datetime.fromisoformat(raw)
    except ValueError:
        raise Unprocessable(
            f"since must be an ISO 8601 time (2020-05-30T17:52:46.000Z), not {raw[:40]!r}",
            parameter="since",
        ) from None
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def _trail(ctx: Ctx, organization: str | None) -> Response:
    query = ctx.query
    since = _since(query)
    number = max(1, int_param(query, "page[number]", 1))
    size = min(trail.MAX_PAGE_SIZE, max(1, int_param(query, "page[size]", trail.DEFAULT_PAGE_SIZE)))
    data, total = trail.read_page(organization, since, number, size)
    pages = max(1, -(-total // size))
    pagination: dict[str, Any] = {
        "current_page": number,
        "prev_page": number - 1 if number > 1 else None,
        "next_page": number + 1 if number < pages else None,
        "total_pages": pages,
        "total_count": total,
    }
    body = {"data": data, "pagination": pagination}
    return Response(json.dumps(body), status_code=200, headers={"Content-Type": "application/json"})


# HCP's audit trail is plain JSON (``data`` and ``pagination``), not a JSON:API document.
TRAIL = Reply(
    200,
    {
        "type": "object",
        "required": ["data", "pagination"],
        "properties": {"data": {"type": "array"}, "pagination": {"type": "object"}},
    },
    media_type="application/json",
    description="HCP Terraform's audit trail: data[] and pagination",
)


@route(
    bp,
    ORGANIZATION_TRAIL,
    auth=AuditTrailReader,
    query=QUERY,
    success=TRAIL,
    summary="List the audit events",
)
def organization_trail(ctx: Ctx) -> Response:
    """The calling organization token's (or audit trail token's) organization's audit events
    (HCP's audit trail API); user and team tokens get a 404, as HCP refuses them."""
    principal = ctx.user
    if principal.kind not in TRAIL_READERS or not principal.organization:
        raise NotFound(NOT_FOUND)
    return _trail(ctx, principal.organization)


@route(
    bp,
    ADMIN_TRAIL,
    auth=SiteAuditor,
    query=ADMIN_QUERY,
    success=TRAIL,
    summary="List audit events",
)
def admin_trail(ctx: Ctx) -> Response:
    """Any organization's audit events (``filter[organization]``), or the site-wide ones:
    for site admins and site auditors."""
    query = ctx.query
    organization = query.get("filter[organization]") or query.get("organization") or None
    return _trail(ctx, organization)
