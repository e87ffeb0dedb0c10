"""Site administration of users and organizations, as pages (``/app/admin``).

* ``/app/admin``: the overview, with links to every page.
* ``/app/admin/users``: search by the start of a username or a whole email address,
  filter site admins and suspended users, 20 a page. Each action (suspend, unsuspend,
  grant or revoke the site-admin flag, disable two-factor, delete) is a confirmation page
  (GET) and its form (POST); the site's last active admin is refused as the API refuses
  it (the message is shown).
* ``/app/admin/organizations`` (search, pages) and an organization's page: global module
  sharing and the organizations that consume its modules.

Everything goes through ``chalicelib.admin.people``, with the API's rules and messages.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from chalice import Blueprint, Response

from chalicelib.accounts.organizations import service as organizations_service
from chalicelib.accounts.users import service as users_service
from chalicelib.admin import people
from chalicelib.admin.limits import MAX_MODULE_CONSUMERS
from chalicelib.core.api.errors import NotFound, Unprocessable
from chalicelib.core.api.jsonapi import relationship_list, to_many
from chalicelib.core.api.openapi import Param
from chalicelib.core.api.pagination import Page
from chalicelib.web.siteadmin.common import (
    ADMIN,
    admin_post,
    site_admin,
    validated,
)
from chalicelib.web.view import SiteAdminPage, WebCtx, page, page_number, redirect

if TYPE_CHECKING:
    from chalicelib.accounts.users.store import UserModel

bp = Blueprint(__name__)
USERS = ADMIN + "/users"
ORGANIZATIONS = ADMIN + "/organizations"
PER_PAGE = 20
USER_QUERY = (
    Param("q", "the start of a username, or a whole email address (any case)"),
    Param("admin", "true: only site admins; false: only the others"),
    Param("suspended", "true: only suspended users; false: only the others"),
    Param("page", "page number (from 1)", {"type": "integer", "minimum": 1}),
)
ORGANIZATION_QUERY = (
    Param("q", "a part of the organization's name or notification email"),
    Param("page", "page number (from 1)", {"type": "integer", "minimum": 1}),
)


# What each user action does (the admin service's), and how the pages word it.
ACTIONS: dict[str, dict[str, Any]] = {
    "suspend": {
        "do": people.suspend,
        "label": "Suspend",
        "done": "suspended",
        "why": "Their tokens and browser sessions stop working until they are unsuspended.",
    },
    "unsuspend": {
        "do": people.unsuspend,
        "label": "Unsuspend",
        "done": "unsuspended",
        "why": "Their tokens work again.",
    },
    "grant_admin": {
        "do": people.grant_admin,
        "label": "Make site admin",
        "done": "made a site admin",
        "why": "They can then manage every user, organization and setting of this site.",
    },
    "revoke_admin": {
        "do": people.revoke_admin,
        "label": "Revoke site admin",
        "done": "no longer a site admin",
        "why": "They keep their account and organizations.",
    },
    "disable_two_factor": {
        "do": people.disable_two_factor,
        "label": "Disable two-factor",
        "done": "two-factor sign-in disabled",
        "why": "Their secret and recovery codes are removed; they sign in with the password.",
    },
    "delete": {
        "do": people.delete_user,
        "label": "Delete",
        "done": "deleted",
        "why": "The user, their tokens and team memberships are deleted. This cannot be undone.",
    },
}


def _pages(items: list[Any], number: int) -> tuple[list[Any], int]:
    """One page of ``items`` and how many pages there are (at least 1)."""
    pages = max(1, -(-len(items) // PER_PAGE))
    if number > pages:
        raise NotFound(f"there is no page {number}")
    return items[(number - 1) * PER_PAGE : number * PER_PAGE], pages


@page(bp, ADMIN, auth=SiteAdminPage)
def overview(ctx: WebCtx) -> Response:
    """Site administration: links to users, organizations and every settings area."""
    site_admin(ctx)
    return ctx.render("siteadmin/overview.html")


# ----- users ------------------------------------------------------------------------------------


def _users_page(ctx: WebCtx, status: int = 200, **extra: Any) -> Response:
    filters = {name: ctx.query.get(name, "") for name in ("q", "admin", "suspended")}
    number = page_number(ctx.query.get("page"))
    users, total = people.list_users(
        {
            "q": filters["q"],
            "filter[admin]": filters["admin"],
            "filter[suspended]": filters["suspended"],
        },
        Page(number, PER_PAGE),
    )
    pages = max(1, -(-total // PER_PAGE))
    if number > pages:
        raise NotFound(f"there is no page {number}")
    done = ACTIONS.get(ctx.query.get("done", ""), {}).get("done")
    return ctx.render(
        "siteadmin/users.html",
        status,
        users=users,
        total=total,
        page=number,
        pages=pages,
        filters={k: v for k, v in filters.items() if v},
        done=done,
        who=ctx.query.get("who") if done else None,
        actions=ACTIONS,
        organizations_of=people.organizations_of,
        **extra,
    )


@page(bp, USERS, auth=SiteAdminPage, query=USER_QUERY)
def users(ctx: WebCtx) -> Response:
    """Every user: search, filters, pages, and the actions on each."""
    site_admin(ctx)
    return _users_page(ctx)


def _action(name: str) -> dict[str, Any]:
    found = ACTIONS.get(name)
    if found is None:
        raise NotFound(f"no user action {name!r}")
    return found


def _confirm(
    ctx: WebCtx, user: UserModel, action: str, status: int = 200, error: str | None = None
) -> Response:
    return ctx.render(
        "siteadmin/confirm.html",
        status,
        user=user,
        action=action,
        about=_action(action),
        organizations=people.organizations_of(user),
        error=error,
    )


@page(bp, USERS + "/{user_id}/{action}", auth=SiteAdminPage)
def confirm_user_action(ctx: WebCtx, user_id: str, action: str) -> Response:
    """Are you sure? The action's confirmation page, its form POSTs to the same address."""
    site_admin(ctx)
    _action(action)
    return _confirm(ctx, users_service.get_user(user_id), action)


@admin_post(bp, USERS + "/{user_id}/{action}")
def user_action(
    ctx: WebCtx, _admin: Any, form: dict[str, str], user_id: str, action: str
) -> Response:
    """Do the action (the last active site admin is refused: the message is shown)."""
    about = _action(action)
    user = users_service.get_user(user_id)
    try:
        about["do"](_admin, user.id)
    except Unprocessable as refused:
        return _confirm(ctx, user, action, 422, refused.detail)
    name = quote(user.username)
    return redirect(f"{USERS}?q={name}&done={action}&who={name}")  # back to that user's row


# ----- organizations ----------------------------------------------------------------------------


@page(bp, ORGANIZATIONS, auth=SiteAdminPage, query=ORGANIZATION_QUERY)
def organizations(ctx: WebCtx) -> Response:
    """Every organization: search and pages."""
    site_admin(ctx)
    term = ctx.query.get("q", "")
    found = people.list_organizations({"q": term})
    number = page_number(ctx.query.get("page"))
    orgs, pages = _pages(found, number)
    return ctx.render(
        "siteadmin/organizations.html",
        orgs=orgs,
        total=len(found),
        page=number,
        pages=pages,
        filters={"q": term} if term else {},
        is_producer=people.is_module_producer,
    )


def _organization_page(ctx: WebCtx, name: str, status: int = 200, **extra: Any) -> Response:
    org = people.get_organization(name)
    return ctx.render(
        "siteadmin/organization.html",
        status,
        org=org,
        values=people.organization_values(org),
        consumers=sorted(org.module_consumers or ()),
        owners=organizations_service.owners_of(org.name),
        saved=ctx.query.get("saved") == "1",
        **extra,
    )


@page(bp, ORGANIZATIONS + "/{name}", auth=SiteAdminPage)
def organization(ctx: WebCtx, name: str) -> Response:
    """An organization: its owners and module sharing."""
    site_admin(ctx)
    return _organization_page(ctx, name)


@admin_post(bp, ORGANIZATIONS + "/{name}/module-sharing")
def module_sharing(ctx: WebCtx, _admin: Any, form: dict[str, str], name: str) -> Response:
    """Global module sharing and the consumer organizations (names, one list replacing the
    previous one; an empty list stops sharing with anyone in particular)."""
    org = people.get_organization(name)
    names = [n for n in re.split(r"[\s,]+", form.get("consumers", "")) if n]
    unique = list(dict.fromkeys(names))
    from chalicelib.admin.schemas import AdminOrganization  # with the first form posted

    try:
        sharing = validated(
            AdminOrganization,
            {"global-module-sharing": form.get("global") == "on"},
        )
        data = relationship_list(
            to_many("organizations", unique),
            type_="organizations",
            max_items=MAX_MODULE_CONSUMERS,
        )
        people.set_module_consumers(_admin, name, data)
    except Unprocessable as refused:
        return _organization_page(ctx, name, 422, error=refused.detail, sent=" ".join(unique))
    if bool(sharing.get("global-module-sharing")) != bool(org.global_module_sharing):
        people.update_organization(_admin, name, sharing)  # a second change: its own event
    return redirect(f"{ORGANIZATIONS}/{quote(name)}?saved=1")
