"""``DELETE /api/v2/admin/organizations/:name``: a site admin deletes an organization with
everything it holds, through the ordinary cascade (``lifecycle.organizations``). It lives
here, above the rooms the cascade touches; the other admin organization routes are
``chalicelib.admin.people_routes``."""

from __future__ import annotations

from chalice import Blueprint, Response

from chalicelib.accounts.authorization import SiteAdmin
from chalicelib.admin import people
from chalicelib.admin.people_routes import ORGANIZATION, TAG
from chalicelib.core.api.http import Ctx, route
from chalicelib.core.api.jsonapi import no_content
from chalicelib.lifecycle import organizations as lifecycle

bp = Blueprint(__name__)


@route(bp, ORGANIZATION, methods=("DELETE",), auth=SiteAdmin, tag=TAG)
def delete_admin_organization(ctx: Ctx, organization_name: str) -> Response:
    """Delete an organization and everything in it"""
    people.get_organization(organization_name)  # 404 when missing
    lifecycle.delete_organization(ctx.user, organization_name)
    return no_content()
