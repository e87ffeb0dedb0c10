"""An organization's teams and tokens: ``/app/<org>/teams`` (the teams the caller may see,
``teams_service.list_teams``; owners create one), ``/app/<org>/teams/<team id>`` (its members and
organization access; owners add and remove members by username, tick the access, manage the
team's token and delete the team) and ``/app/<org>/settings`` (owners: the organization's
token and its publishing policy, ``trust.policy``). The same services as ``/api/v2/teams``,
``/organizations/:org/authentication-token`` and ``…/registry-policy``: owners only
(``teams_service.owned_team`` / ``owned_organization``), 404 for anyone else. A new token's
secret is shown once, in the answer to the form that made it.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from chalice import Response

from chalicelib.accounts import authorization
from chalicelib.accounts.teams import service as teams_service
from chalicelib.accounts.tokens import service as tokens_service
from chalicelib.accounts.users import service as users_service
from chalicelib.core.api.errors import NotFound, Unprocessable
from chalicelib.core.api.openapi import Param, Reply
from chalicelib.core.auth import Principal, TokenModel
from chalicelib.trust import policy
from chalicelib.web.people.common import ACCESS_FLAGS, bp, description_error
from chalicelib.web.view import Form, SignedIn, WebCtx, page, posted, redirect

if TYPE_CHECKING:
    from chalicelib.accounts.teams.store import TeamModel

TEAMS = "/app/{organization}/teams"
TEAM = TEAMS + "/{team_id}"
SETTINGS = "/app/{organization}/settings"
VISIBILITIES = ("secret", "organization")
REFUSED = (Reply(200), Reply(422))


def _flags(form: Form) -> dict[str, bool]:
    """Every access flag: a ticked box is true, an absent one false (HTML sends no value)."""
    ticked = set(form.all("access"))
    return {name: name in ticked for name, _, _ in ACCESS_FLAGS}


def _visibility(form: Form) -> str:
    chosen = form.get("visibility")
    if chosen not in VISIBILITIES:
        raise Unprocessable("visibility must be secret or organization")
    return chosen


def _teams_page(ctx: WebCtx, organization: str, status: int = 200, **extra: Any) -> Response:
    principal = ctx.principal_or_sign_in()
    teams = sorted(teams_service.list_teams(principal, organization, None), key=lambda t: t.name)
    rights = authorization.organization_access(principal, organization)
    return ctx.render(
        "people/teams.html",
        status,
        organization=organization,
        teams=teams,
        is_owner=rights.is_owner,
        flags=ACCESS_FLAGS,
        **extra,
    )


@page(bp, TEAMS, auth=SignedIn)
def teams(ctx: WebCtx, organization: str) -> Response:
    """The organization's teams (and, for owners, a form to create one)."""
    return _teams_page(ctx, organization)


@page(bp, TEAMS, ("POST",), auth=SignedIn, form=True, success=(Reply(303), Reply(422)))
def create_team(ctx: WebCtx, organization: str) -> Response:
    """A new team with the access ticked; the browser goes on to its page."""
    form = posted(ctx)
    if isinstance(form, Response):
        return form
    principal = ctx.principal_or_sign_in()
    try:
        team = teams_service.create_team(
            principal, organization, form.get("name"), _visibility(form), _flags(form)
        )
    except Unprocessable as refused:
        wanted = {"name": form.get("name"), "access": form.all("access")}
        return _teams_page(ctx, organization, 422, create_error=refused.detail, team_form=wanted)
    return redirect(f"/app/{organization}/teams/{team.id}")


def _team(principal: Principal, organization: str, team_id: str) -> tuple[TeamModel, bool]:
    """The team (of this organization) and whether the caller is an owner, or 404."""
    team, rights = teams_service.readable_team(principal, team_id)
    if team.organization != organization:
        raise NotFound(f"team {team_id} not found")
    return team, rights.is_owner


def _held(read: Any, principal: Principal, holder: str) -> TokenModel | None:
    try:
        return read(principal, holder)
    except NotFound:
        return None


def _team_page(
    ctx: WebCtx, organization: str, team_id: str, status: int = 200, **extra: Any
) -> Response:
    principal = ctx.principal_or_sign_in()
    team, is_owner = _team(principal, organization, team_id)
    return ctx.render(
        "people/team.html",
        status,
        organization=organization,
        team=team,
        members=teams_service.team_members([team]),
        is_owner=is_owner,
        scim_linked=team.scim_group_name is not None and not team.scim_sync_paused,
        token=_held(tokens_service.team_token, principal, team.id) if is_owner else None,
        flags=ACCESS_FLAGS,
        **extra,
    )


@page(bp, TEAM, auth=SignedIn, query=(Param("saved", "say that the access was saved"),))
def team(ctx: WebCtx, organization: str, team_id: str) -> Response:
    """A team: its members and access (and, for owners, the forms that change them)."""
    saved = "The access is saved." if ctx.query.get("saved") else None
    return _team_page(ctx, organization, team_id, saved=saved)


def _owned(ctx: WebCtx, organization: str, team_id: str) -> tuple[Form, Principal] | Response:
    """The checked form and the caller, who must own the team's organization (else 404)."""
    form = posted(ctx)
    if isinstance(form, Response):
        return form
    principal = ctx.principal_or_sign_in()
    if not _team(principal, organization, team_id)[1]:
        raise NotFound(f"team {team_id} not found or you are not an owner of its organization")
    return form, principal


@page(bp, TEAM + "/members", ("POST",), auth=SignedIn, form=True, success=(Reply(303), Reply(422)))
def change_members(ctx: WebCtx, organization: str, team_id: str) -> Response:
    """Add a member by username (``add``) or remove one (``remove``)."""
    found = _owned(ctx, organization, team_id)
    if isinstance(found, Response):
        return found
    form, principal = found
    remove = form.get("remove")
    username = remove or form.get("username")
    if not username or users_service.find_user_by_name(username) is None:
        error = f"no user is named {username!r}" if username else "a username is required"
        return _team_page(ctx, organization, team_id, 422, member_error=error, username=username)
    try:
        teams_service.change_membership(principal, team_id, [username], add=not remove)
    except Unprocessable as refused:
        return _team_page(ctx, organization, team_id, 422, member_error=refused.detail)
    return redirect(f"/app/{organization}/teams/{team_id}#members")


@page(bp, TEAM + "/access", ("POST",), auth=SignedIn, form=True, success=(Reply(303), Reply(422)))
def change_access(ctx: WebCtx, organization: str, team_id: str) -> Response:
    """The team's visibility and organization access, as ticked."""
    found = _owned(ctx, organization, team_id)
    if isinstance(found, Response):
        return found
    form, principal = found
    try:
        teams_service.update_team(principal, team_id, None, _visibility(form), _flags(form))
    except Unprocessable as refused:
        return _team_page(ctx, organization, team_id, 422, access_error=refused.detail)
    return redirect(f"/app/{organization}/teams/{team_id}?saved=1#access")


@page(bp, TEAM + "/delete", auth=SignedIn)
def confirm_delete(ctx: WebCtx, organization: str, team_id: str) -> Response:
    """Delete this team? (owners; a page of its own)"""
    principal = ctx.principal_or_sign_in()
    team_, is_owner = _team(principal, organization, team_id)
    if not is_owner:
        raise NotFound(f"team {team_id} not found or you are not an owner of its organization")
    return ctx.render(
        "people/confirm.html",
        title="Delete this team?",
        question=f"Delete the team “{team_.name}”? Its members stay in the organization "
        "through their other teams, and its token stops working.",
        action=f"/app/{organization}/teams/{team_.id}/delete",
        button="Delete the team",
        cancel=f"/app/{organization}/teams/{team_.id}",
    )


@page(bp, TEAM + "/delete", ("POST",), auth=SignedIn, form=True, success=(Reply(303), Reply(422)))
def delete_team(ctx: WebCtx, organization: str, team_id: str) -> Response:
    """Delete the team (never the owners team)."""
    found = _owned(ctx, organization, team_id)
    if isinstance(found, Response):
        return found
    _, principal = found
    try:
        teams_service.delete_team(principal, team_id)
    except Unprocessable as refused:
        return _team_page(ctx, organization, team_id, 422, delete_error=refused.detail)
    return redirect(f"/app/{organization}/teams")


def _shown_once(ctx: WebCtx, what: str, secret: str, back: str) -> Response:
    return ctx.render(
        "people/token_created.html",
        title="The new token",
        what=what,
        secret=secret,
        expired_at=None,
        back=back,
        back_label="Back",
    )


@page(bp, TEAM + "/token", ("POST",), auth=SignedIn, form=True, success=REFUSED)
def team_token(ctx: WebCtx, organization: str, team_id: str) -> Response:
    """Create (or regenerate: the old one stops working) the team's token."""
    found = _owned(ctx, organization, team_id)
    if isinstance(found, Response):
        return found
    form, principal = found
    description = form.get("description") or "team token"
    error = description_error(description)
    if error:
        return _team_page(ctx, organization, team_id, 422, token_error=error)
    token, secret = tokens_service.create_team_token(principal, team_id, description)
    back = f"/app/{organization}/teams/{team_id}#token"
    return _shown_once(ctx, f"The team token “{token.description}”", secret, back)


@page(bp, TEAM + "/token/revoke", ("POST",), auth=SignedIn, form=True, success=(Reply(303),))
def revoke_team_token(ctx: WebCtx, organization: str, team_id: str) -> Response:
    """Revoke the team's token."""
    found = _owned(ctx, organization, team_id)
    if isinstance(found, Response):
        return found
    tokens_service.delete_team_token(found[1], team_id)
    return redirect(f"/app/{organization}/teams/{team_id}#token")


# ----- the organization's settings: its token ----------------------------------------------


def _settings_page(ctx: WebCtx, organization: str, status: int = 200, **extra: Any) -> Response:
    principal = ctx.principal_or_sign_in()
    org = authorization.owned_organization(principal, organization)
    shown = policy.read_policy(principal, organization)
    return ctx.render(
        "people/settings.html",
        status,
        organization=organization,
        org=org,
        token=_held(tokens_service.organization_token, principal, organization),
        policy=shown.policy,
        policy_updated_at=shown.updated_at,
        severities=policy.BLOCK_SEVERITIES,
        saved=ctx.query.get("saved") == "policy",
        **extra,
    )


@page(bp, SETTINGS, auth=SignedIn, query=(Param("saved", "policy: the policy was saved"),))
def settings(ctx: WebCtx, organization: str) -> Response:
    """The organization's settings (owners): its API token and its publishing policy."""
    return _settings_page(ctx, organization)


@page(bp, SETTINGS + "/registry-policy", ("POST",), auth=SignedIn, form=True, success=REFUSED)
def registry_policy(ctx: WebCtx, organization: str) -> Response:
    """Change the organization's publishing policy (``trust.policy.change_policy``, as the
    API's ``PATCH …/registry-policy``): rule ids one per line (or separated by commas)."""
    found = _owner_form(ctx, organization)
    if isinstance(found, Response):
        return found
    form, principal = found
    rules = [rule for rule in re.split(r"[\s,]+", form.get("ignored_rules")) if rule]
    try:
        policy.change_policy(
            principal,
            organization,
            block_severity=form.get("block_severity"),
            ignored_rules=rules,
            require_readme=form.get("require_readme") == "on",
        )
    except Unprocessable as refused:
        return _settings_page(
            ctx, organization, 422, policy_error=refused.detail, rules_sent="\n".join(rules)
        )
    return redirect(f"/app/{organization}/settings?saved=policy#policy")


def _owner_form(ctx: WebCtx, organization: str) -> tuple[Form, Principal] | Response:
    form = posted(ctx)
    if isinstance(form, Response):
        return form
    principal = ctx.principal_or_sign_in()
    authorization.owned_organization(principal, organization)
    return form, principal


@page(bp, SETTINGS + "/token", ("POST",), auth=SignedIn, form=True, success=REFUSED)
def organization_token(ctx: WebCtx, organization: str) -> Response:
    """Create (or regenerate: the old one stops working) the organization's token."""
    found = _owner_form(ctx, organization)
    if isinstance(found, Response):
        return found
    form, principal = found
    description = form.get("description") or "organization token"
    error = description_error(description)
    if error:
        return _settings_page(ctx, organization, 422, token_error=error)
    token, secret = tokens_service.create_organization_token(principal, organization, description)
    back = f"/app/{organization}/settings"
    return _shown_once(ctx, f"The organization token “{token.description}”", secret, back)


@page(bp, SETTINGS + "/token/revoke", ("POST",), auth=SignedIn, form=True, success=(Reply(303),))
def revoke_organization_token(ctx: WebCtx, organization: str) -> Response:
    """Revoke the organization's token."""
    found = _owner_form(ctx, organization)
    if isinstance(found, Response):
        return found
    tokens_service.delete_organization_token(found[1], organization)
    return redirect(f"/app/{organization}/settings")
