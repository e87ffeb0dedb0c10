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
(``store.read_page`` says what the count costs). Beyond HCP's: ``until`` (events before it)
and the bounded filters ``filter[actor]``, ``filter[resource-type]``, ``filter[action]``
(``reading``: an unknown or overlong one is a 422; a filtered page reads the events of its
time range once, at most ``store.MAX_FILTERED`` of them). The organization's trail begins at
the organization's creation (``reading.organization_page``).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from chalice import Blueprint, Response

from chalicelib.accounts.authorization import SiteAuditor
from chalicelib.audit import reading
from chalicelib.core import observe
from chalicelib.core.api import bounds
from chalicelib.core.api.access import Access
from chalicelib.core.api.errors import NotFound
from chalicelib.core.api.http import Ctx, route
from chalicelib.core.api.openapi import Param, Reply
from chalicelib.core.api.pagination import int_param
from chalicelib.core.audit import trail
from chalicelib.core.auth import AUDIT_TRAILS, Principal, request_principal

bp = Blueprint(__name__)

ORGANIZATION_TRAIL = "/api/v2/organization/audit-trail"
ADMIN_TRAIL = "/api/v2/admin/audit-trail"

MOMENT = {"type": "string", "maxLength": bounds.TIMESTAMP}
WORD = {"type": "string", "maxLength": reading.MAX_WORD, "pattern": "^[a-z][a-z0-9-]*$"}
QUERY = (
    Param("since", "only events after this moment (ISO 8601, UTC)", MOMENT),
    Param("until", "only events before this moment (ISO 8601, UTC)", MOMENT),
    Param(
        "filter[actor]",
        "only the events of this actor (its id, or a user's username)",
        {"type": "string", "maxLength": reading.MAX_ACTOR},
    ),
    Param("filter[resource-type]", "only events of this resource type (registry-module...)", WORD),
    Param("filter[action]", "only events of this action (created, deprecated...)", WORD),
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


Reader = Callable[[reading.Criteria, int, int], tuple[list[dict[str, Any]], int]]


def _trail(ctx: Ctx, read: Reader, also: tuple[str, ...] = ()) -> Response:
    query = ctx.query
    wanted = reading.criteria(query, api=True, also=also)
    number = max(1, int_param(query, "page[number]", 1))
    size = min(trail.MAX_PAGE_SIZE, max(1, int_param(query, "page[size]", trail.DEFAULT_PAGE_SIZE)))
    data, total = read(wanted, number, size)
    body = {"data": data, "pagination": reading.pagination(number, size, total)}
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
    (HCP's audit trail API), from the organization's creation on; user and team tokens get a
    404, as HCP refuses them."""
    principal = ctx.user
    name = principal.organization
    if principal.kind not in TRAIL_READERS or not name:
        raise NotFound(NOT_FOUND)
    return _trail(ctx, lambda wanted, n, size: reading.organization_page(name, wanted, n, size))


@route(
    bp,
    ADMIN_TRAIL,
    auth=SiteAuditor,
    query=ADMIN_QUERY,
    success=TRAIL,
    summary="List audit events",
)
def admin_trail(ctx: Ctx) -> Response:
    """Any organization's audit events (``filter[organization]``: every event kept under that
    name, a deleted organization's of that name too), or the site-wide ones: for site admins
    and site auditors."""
    query = ctx.query
    organization = query.get("filter[organization]") or query.get("organization") or None
    return _trail(
        ctx,
        lambda wanted, n, size: reading.any_page(organization, wanted, n, size),
        also=(reading.ORGANIZATION,),
    )
