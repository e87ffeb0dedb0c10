"""The trail's pages: ``/app/<org>/audit-trail`` for the organization's owners (and site
admins: ``reading.owners_page``; anyone else gets the not-found page), from the
organization's creation on; ``/app/admin/audit-trail`` for site admins: the site-wide
events, or any organization's (``?organization=``), a deleted one's of that name too.

Both take the API's filters under the form's names (``actor``, ``resource-type``,
``action``, ``since``, ``until``; ``chalicelib.audit.reading`` bounds them) and ``page``
(``PER_PAGE`` events, newest last as the API answers). A refused filter shows the form again
with the reason (400), nothing read.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from chalice import Blueprint, Response

from chalicelib.audit import reading
from chalicelib.core.api import bounds
from chalicelib.core.api.errors import NotFound, Unprocessable
from chalicelib.core.api.openapi import Param, Reply
from chalicelib.web.audit.rows import row
from chalicelib.web.view import SignedIn, SiteAdminPage, WebCtx, page, page_number

bp = Blueprint(__name__)

ORGANIZATION_TRAIL = "/app/{organization}/audit-trail"
ADMIN_TRAIL = "/app/admin/audit-trail"
PER_PAGE = 50
WORD = {"type": "string", "maxLength": reading.MAX_WORD}
MOMENT = {"type": "string", "maxLength": bounds.TIMESTAMP}
QUERY = (
    Param(
        reading.ACTOR,
        "only this actor's events (an id or a username)",
        {"type": "string", "maxLength": reading.MAX_ACTOR},
    ),
    Param(reading.RESOURCE_TYPE, "only events of this resource type", WORD),
    Param(reading.ACTION, "only events of this action", WORD),
    Param("since", "only events after this moment (ISO 8601; UTC without a zone)", MOMENT),
    Param("until", "only events before this moment (ISO 8601; UTC without a zone)", MOMENT),
    Param("page", "page number (from 1)", {"type": "integer", "minimum": 1}),
)
ADMIN_QUERY = (
    *QUERY,
    Param(
        reading.ORGANIZATION,
        "the organization's events (none: the site's)",
        {"type": "string", "maxLength": bounds.NAME},
    ),
)
PAGES = (Reply(200), Reply(400, description="a refused filter: the form again, with the reason"))
Reader = Callable[[reading.Criteria, int], tuple[list[dict[str, Any]], int]]


def _trail_page(ctx: WebCtx, read: Reader, partition: str | None, **context: Any) -> Response:
    """The page of the trail ``read`` reads, filtered as the query asks."""
    query = ctx.query
    names = (*reading.FILTERS, "since", "until", *([reading.ORGANIZATION] if partition else []))
    shown = {k: query[k] for k in names if query.get(k)}
    try:
        wanted = reading.criteria(query, api=False)
        number = page_number(query.get("page"))
        documents, total = read(wanted, number)
    except Unprocessable as refused:
        return ctx.render(
            "audit/trail.html",
            400,
            rows=[],
            total=0,
            page=1,
            pages=1,
            filters=shown,
            refusal=refused.detail,
            **context,
        )
    pages = max(1, -(-total // PER_PAGE))
    if number > pages:
        raise NotFound(f"there is no page {number}")
    return ctx.render(
        "audit/trail.html",
        rows=[row(d, partition) for d in documents],
        total=total,
        page=number,
        pages=pages,
        filters=shown,
        **context,
    )


@page(bp, ORGANIZATION_TRAIL, auth=SignedIn, query=QUERY, success=PAGES)
def organization_trail(ctx: WebCtx, organization: str) -> Response:
    """The organization's audit trail, for its owners."""
    principal = ctx.principal_or_sign_in()
    return _trail_page(
        ctx,
        lambda wanted, n: reading.owners_page(principal, organization, wanted, n, PER_PAGE),
        organization,
        organization=organization,
        base=f"/app/{organization}/audit-trail",
        admin=False,
    )


@page(bp, ADMIN_TRAIL, auth=SiteAdminPage, query=ADMIN_QUERY, success=PAGES)
def admin_trail(ctx: WebCtx) -> Response:
    """The site's audit trail, or any organization's (``?organization=``)."""
    organization = (ctx.query.get(reading.ORGANIZATION) or "").strip() or None
    return _trail_page(
        ctx,
        lambda wanted, n: reading.any_page(organization, wanted, n, PER_PAGE),
        organization,
        organization=organization,
        base=ADMIN_TRAIL,
        admin=True,
    )
