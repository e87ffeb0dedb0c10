"""An organization's members, ``/app/<org>/members``: the memberships (active and invited)
for every reader of the organization; for who may manage membership (owners, teams with
``manage-membership``, site admins: ``memberships.managing``) an invitation form (an email
address and the teams to join) and a button per row that removes the member or withdraws
the invitation, after a page that asks first (none for the owners team's last member, whom
the service refuses to remove). Everyone else sees no form, and a POST answers 404 as the
API does.

An email address shows to those who manage membership and to the member (as the API's
``email`` attribute). When the site cannot send mail, the page says the invitation was not
mailed, and shows its link once to a site admin only, as the API's answer does
(``memberships.Invited``).
"""

from __future__ import annotations

from typing import Any

from chalice import Response

from chalicelib.accounts import memberships
from chalicelib.accounts.teams import service as teams_service
from chalicelib.core.api.errors import NotFound, Unprocessable
from chalicelib.core.api.openapi import Param, Reply
from chalicelib.core.auth import Principal
from chalicelib.web.people.common import bp
from chalicelib.web.view import SignedIn, WebCtx, page, posted, redirect

MEMBERS = "/app/{organization}/members"


def may_manage(principal: Principal, organization: str) -> bool:
    try:
        memberships.managing(principal, organization)
    except NotFound:
        return False
    return True


def _members_page(ctx: WebCtx, organization: str, status: int = 200, **extra: Any) -> Response:
    principal = ctx.principal_or_sign_in()
    found, rights = memberships.list_memberships(principal, organization, "", [], [])
    teams = teams_service.list_teams(principal, organization, None)
    names = {t.id: t.name for t in teams}
    manage = may_manage(principal, organization)
    rows = [
        {
            "id": m.id,
            "username": m.user.username if m.user else None,
            "email": m.email if manage or m.user_id == principal.id else None,
            "status": m.status,
            "teams": sorted(names[t] for t in m.team_ids if t in names),
            "is_me": m.user_id == principal.id,
            "removable": manage and not memberships.last_owner(m, teams),
        }
        for m in found
    ]
    return ctx.render(
        "people/members.html",
        status,
        organization=organization,
        rows=rows,
        teams=sorted(teams, key=lambda t: t.name),
        manage=manage,
        is_owner=rights.is_owner and principal.is_user,
        **extra,
    )


@page(bp, MEMBERS, auth=SignedIn, query=(Param("removed", "say that a membership was removed"),))
def members(ctx: WebCtx, organization: str) -> Response:
    """The organization's members and invitations (and, for managers, the forms)."""
    removed = "Removed." if ctx.query.get("removed") else None
    return _members_page(ctx, organization, removed=removed)


@page(
    bp, MEMBERS + "/invite", ("POST",), auth=SignedIn, form=True, success=(Reply(200), Reply(422))
)
def invite(ctx: WebCtx, organization: str) -> Response:
    """Invite an email address, onto the teams ticked; the link goes by mail (without SMTP:
    shown to a site admin only)."""
    form = posted(ctx)
    if isinstance(form, Response):
        return form
    principal = ctx.principal_or_sign_in()
    email, team_ids = form.get("email"), form.all("teams")
    try:
        invited = memberships.invite(principal, organization, email, team_ids)
    except Unprocessable as refused:
        wanted = {"email": email, "teams": team_ids}
        return _members_page(ctx, organization, 422, invite_error=refused.detail, invite=wanted)
    return _members_page(
        ctx,
        organization,
        invited_email=invited.membership.email,
        invitation_mailed=invited.mailed,
        invitation_link=invited.link,
        not_mailed=memberships.NOT_MAILED,
    )


def _managed(ctx: WebCtx, organization: str, membership_id: str) -> memberships.Membership:
    """A membership of ``organization`` the caller may remove or withdraw, or 404."""
    principal = ctx.principal_or_sign_in()
    found, _ = memberships.find(principal, membership_id)
    if found.organization != organization or not may_manage(principal, organization):
        raise NotFound(f"organization membership {membership_id} not found")
    return found


@page(bp, MEMBERS + "/{membership_id}/remove", auth=SignedIn, success=(Reply(200), Reply(422)))
def confirm_remove(ctx: WebCtx, organization: str, membership_id: str) -> Response:
    """Remove this member (or withdraw this invitation)? A page of its own, as deleting a
    team; the owners team's last member gets the refusal instead."""
    found = _managed(ctx, organization, membership_id)
    who = (found.user.username if found.user else None) or found.email
    back = f"/app/{organization}/members"
    if found.status == "invited":
        return ctx.render(
            "people/confirm.html",
            title="Withdraw this invitation?",
            question=f"Withdraw the invitation of {who} to {organization}? Its link stops working.",
            action=f"{back}/{found.id}/remove",
            button="Withdraw the invitation",
            cancel=back,
        )
    teams = teams_service.list_teams(ctx.principal_or_sign_in(), organization, None)
    if memberships.last_owner(found, teams):
        return _members_page(ctx, organization, 422, remove_error=memberships.LAST_OWNER)
    return ctx.render(
        "people/confirm.html",
        title="Remove this member?",
        question=f"Remove {who} from {organization}? They leave every team of it and lose "
        "what those teams give; their account stays.",
        action=f"{back}/{found.id}/remove",
        button=f"Remove {who}",
        cancel=back,
    )


@page(
    bp,
    MEMBERS + "/{membership_id}/remove",
    ("POST",),
    auth=SignedIn,
    form=True,
    success=(Reply(303), Reply(422)),
)
def remove(ctx: WebCtx, organization: str, membership_id: str) -> Response:
    """Remove a member from the organization (every team of it), or withdraw an invitation."""
    form = posted(ctx)
    if isinstance(form, Response):
        return form
    principal = ctx.principal_or_sign_in()
    found, _ = memberships.find(principal, membership_id)
    if found.organization != organization:
        raise NotFound(f"organization membership {membership_id} not found")
    try:
        memberships.remove(principal, membership_id)
    except Unprocessable as refused:
        return _members_page(ctx, organization, 422, remove_error=refused.detail)
    return redirect(f"/app/{organization}/members?removed=1")
