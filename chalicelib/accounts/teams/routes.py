"""HTTP routes of an organization's teams and of its members (organization memberships:
invitations, members, and the teams they are on).

The rest of the accounts surface (your account, users, organizations, tokens) is
``chalicelib.accounts.routes``, whose paths and page helper these share, and whose OpenAPI
tag these keep; rendering lives in ``chalicelib.accounts.render``.
"""

from __future__ import annotations

from collections.abc import Sequence
from types import ModuleType
from typing import TYPE_CHECKING, Annotated, Any

from chalice import Blueprint, Response

from chalicelib.accounts import authorization, memberships
from chalicelib.accounts.render import (
    render_invited_user,
    render_membership,
    render_organization_membership,
    render_team,
    render_user,
)
from chalicelib.accounts.routes import NO_ADDRESS, ORGANIZATION, TEAM, page_of
from chalicelib.accounts.teams import service as teams_service
from chalicelib.accounts.teams import store as teams_store
from chalicelib.accounts.teams.store import TeamModel
from chalicelib.accounts.users import service as users_service
from chalicelib.accounts.users import store as users_store
from chalicelib.accounts.users.store import UserModel
from chalicelib.core.api.access import Bearer
from chalicelib.core.api.errors import Unprocessable
from chalicelib.core.api.http import Ctx, route
from chalicelib.core.api.jsonapi import Includer, collect_included, document, no_content
from chalicelib.core.api.openapi import PAGE, JsonApi, Param, Relationships
from chalicelib.core.auth import Principal

if TYPE_CHECKING:
    from chalicelib.accounts.schemas import MembershipAttributes, TeamAttributes

bp = Blueprint(__name__)


def body_models() -> ModuleType:
    """This file's body models, loaded on first use (``core.api.http.typed_body``)."""
    from chalicelib.accounts import schemas

    return schemas


TAG = "accounts"


def _visibility(value: str | None) -> str | None:
    if value not in (None, "secret", "organization"):
        raise Unprocessable(
            "visibility must be 'secret' or 'organization'", pointer="/data/attributes/visibility"
        )
    return value


# ----- teams --------------------------------------------------------------------------------

ORGANIZATION_TEAMS = ORGANIZATION + "/teams"
TEAM_USERS = TEAM + "/relationships/users"
# go-tfe's TeamIncludeOpt.
TEAM_INCLUDES = ("users", "organization-memberships")


def _team_includers(
    ctx: Ctx,
    rights: authorization.OrgAccess,
    invited: dict[str, list[memberships.Membership]] | None = None,
) -> dict[str, Includer]:
    """``users`` and ``organization-memberships`` of teams: both are the teams' members,
    read once, and ``invited`` (``memberships.invitations_by_team``) the invitations on
    them. A user's email shows to them and site admins (as ``GET /users/:id``); a
    membership's to the organization's owners and the member."""
    loaded: list[list[UserModel]] = []

    def members(teams: Sequence[TeamModel]) -> list[UserModel]:
        if not loaded:
            loaded.append(teams_service.team_members(teams))
        return loaded[0]

    def users(teams: Sequence[TeamModel]) -> list[dict[str, Any]]:
        found = members(teams)
        admin = bool(found) and authorization.is_site_admin(ctx.user)
        return [render_user(u, private=admin or u.id == ctx.user.id) for u in found]

    def memberships(teams: Sequence[TeamModel]) -> list[dict[str, Any]]:
        organizations = {u: t.organization for t in teams for u in t.user_ids or ()}
        found = members(teams)
        hidden = (
            {  # a member's secret teams the caller is not on stay out of its teams
                org: teams_service.hidden_teams(ctx.user, org, rights)
                for org in {t.organization for t in teams}
            }
            if found
            else {}
        )
        pending = {m.id: m for t in teams for m in (invited or {}).get(t.id, ())}
        return [
            render_organization_membership(
                organizations[u.id],
                u,
                private=authorization.allows(rights, "own") or u.id == ctx.user.id,
                hidden_teams=hidden[organizations[u.id]],
            )
            for u in found
        ] + [_membership(ctx, m, rights) for m in pending.values()]

    return {"users": users, "organization-memberships": memberships}


def _team_document(
    ctx: Ctx, team: TeamModel, rights: authorization.OrgAccess, status: int = 200
) -> Response:
    invited = memberships.invitations_by_team(team.organization)
    included = ctx.included([team], _team_includers(ctx, rights, invited))
    ids = [m.id for m in invited.get(team.id, ())]
    return document(render_team(team, rights, ids), status, included=included)


@route(
    bp,
    ORGANIZATION_TEAMS,
    auth=Bearer,
    tag=TAG,
    methods=("GET",),
    includes=TEAM_INCLUDES,
    query=(*PAGE, Param("filter[names]", "team names, comma-separated")),
)
def list_teams(ctx: Ctx, organization_name: str) -> Response:
    names_filter = ctx.query.get("filter[names]")
    names = [n for n in names_filter.split(",") if n] if names_filter else None
    found, total = teams_service.page_teams(ctx.user, organization_name, names, ctx.page())
    rights = authorization.access(ctx.user, organization_name)
    invited = memberships.invitations_by_team(organization_name)

    def render(team: TeamModel) -> dict[str, Any]:
        return render_team(team, rights, [m.id for m in invited.get(team.id, ())])

    return page_of(ctx, found, render, _team_includers(ctx, rights, invited), total=total)


# terrasnek sends type "organizations" here: accept any type.
@route(
    bp,
    ORGANIZATION_TEAMS,
    auth=Bearer,
    tag=TAG,
    methods=("POST",),
    includes=TEAM_INCLUDES,
)
def create_team(
    ctx: Ctx,
    organization_name: str,
    attrs: Annotated[TeamAttributes, JsonApi("teams", type_check="off")],
) -> Response:
    team = teams_service.create_team(
        ctx.user, organization_name, attrs.name, _visibility(attrs.visibility), attrs.flags()
    )
    return _team_document(ctx, team, authorization.OrgAccess.everything(), status=201)


@route(bp, TEAM, auth=Bearer, tag=TAG, methods=("GET",), includes=TEAM_INCLUDES)
def show_team(ctx: Ctx, team_id: str) -> Response:
    found, rights = teams_service.readable_team(ctx.user, team_id)
    return _team_document(ctx, found, rights)


@route(
    bp,
    TEAM,
    auth=Bearer,
    tag=TAG,
    methods=("PATCH",),
    includes=TEAM_INCLUDES,
)
def update_team(
    ctx: Ctx,
    team_id: str,
    attrs: Annotated[TeamAttributes, JsonApi("teams", type_check="lenient")],
) -> Response:
    updated = teams_service.update_team(
        ctx.user, team_id, attrs.name, _visibility(attrs.visibility), attrs.flags()
    )
    team = teams_service.find_team(updated.id) or updated
    return _team_document(ctx, team, authorization.OrgAccess.everything())


@route(bp, TEAM, auth=Bearer, tag=TAG, methods=("DELETE",))
def delete_team(ctx: Ctx, team_id: str) -> Response:
    teams_service.delete_team(ctx.user, team_id)
    return no_content()


MEMBERS = Relationships(
    "users",
    max_items=teams_service.MAX_MEMBERS_PER_REQUEST,
    description="the users, by username (`id`)",
)


@route(bp, TEAM_USERS, auth=Bearer, tag=TAG, methods=("POST",), body=MEMBERS, success=204)
def add_team_members(ctx: Ctx, team_id: str) -> Response:
    teams_service.change_membership(
        ctx.user, team_id, ctx.relationship_ids("the username"), add=True
    )
    return no_content()


@route(bp, TEAM_USERS, auth=Bearer, tag=TAG, methods=("DELETE",), body=MEMBERS)
def remove_team_members(ctx: Ctx, team_id: str) -> Response:
    teams_service.change_membership(
        ctx.user, team_id, ctx.relationship_ids("the username"), add=False
    )
    return no_content()


# ----- organization memberships -------------------------------------------------------------

ORGANIZATION_MEMBERSHIPS = ORGANIZATION + "/organization-memberships"
MEMBERSHIPS = "/api/v2/organization-memberships"
MEMBERSHIP = MEMBERSHIPS + "/{membership_id}"
TEAM_MEMBERSHIPS = TEAM + "/relationships/organization-memberships"
# go-tfe's OrgMembershipIncludeOpt.
MEMBERSHIP_INCLUDES = ("user", "teams")


def _membership(
    ctx: Ctx,
    m: memberships.Membership,
    rights: authorization.OrgAccess,
    meta: dict[str, Any] | None = None,
) -> dict[str, Any]:
    return render_membership(
        m.id,
        m.organization,
        m.user_id,
        m.email,
        m.status,
        m.team_ids,
        private=authorization.allows(rights, "manage-membership") or m.user_id == ctx.user.id,
        hidden_teams=teams_service.hidden_teams(ctx.user, m.organization, rights)
        if m.team_ids
        else frozenset(),
        meta=meta,
    )


def _manages_members(principal: Principal, organization: str) -> bool:
    return authorization.allows(authorization.access(principal, organization), "manage-membership")


def _membership_includers(ctx: Ctx) -> dict[str, Includer]:
    """``user``: the members' users (an invited new person has none yet); ``teams``: the
    teams of the memberships the caller may see."""

    def users(found: Sequence[memberships.Membership]) -> list[dict[str, Any]]:
        ids = sorted({m.user_id for m in found})
        loaded = {u.id: u for u in users_store.users_by_ids(ids)}
        admin = bool(found) and authorization.is_site_admin(ctx.user)
        rendered = [render_user(u, private=admin or u.id == ctx.user.id) for u in loaded.values()]
        pending = {m.user_id: m for m in found if m.status == "invited"}
        # An invited new person: the user TFE would have made; its email shows as the
        # membership's does (to those who manage the organization's members).
        return rendered + [
            render_invited_user(
                m.user_id,
                m.email,
                private=admin or _manages_members(ctx.user, m.organization),
            )
            for user_id, m in pending.items()
            if user_id not in loaded
        ]

    def teams(found: Sequence[memberships.Membership]) -> list[dict[str, Any]]:
        ids = sorted({t for m in found for t in m.team_ids})
        rendered = []
        for team in teams_store.teams_by_ids(ids):
            rights = authorization.access(ctx.user, team.organization)
            if teams_service.sees_team(ctx.user, team, rights):
                rendered.append(render_team(team, rights))
        return rendered

    return {"user": users, "teams": teams}


def _filter_list(ctx: Ctx, name: str, allowed: tuple[str, ...] | None = None) -> list[str]:
    raw = ctx.query.get(name) or ""
    values = [v.strip() for v in raw.split(",") if v.strip()]
    if len(values) > memberships.MAX_EMAILS:
        raise Unprocessable(f"{name} takes at most {memberships.MAX_EMAILS} values", parameter=name)
    for value in values:
        if allowed is not None and value not in allowed:
            raise Unprocessable(f"{name} must be one of {', '.join(allowed)}", parameter=name)
        if allowed is None and not users_service.EMAIL.match(value):
            raise Unprocessable(f"{value!r} is not an email address", parameter=name)
    return values


@route(
    bp,
    ORGANIZATION_MEMBERSHIPS,
    auth=Bearer,
    tag=TAG,
    methods=("GET",),
    includes=MEMBERSHIP_INCLUDES,
    query=(
        *PAGE,
        Param("q", "a part of the email or username (any case)"),
        Param("filter[email]", "email addresses, comma-separated"),
        Param("filter[status]", "invited, active, or inactive (every one not yet active)"),
    ),
)
def list_organization_memberships(ctx: Ctx, organization_name: str) -> Response:
    emails = _filter_list(ctx, "filter[email]")
    statuses = _filter_list(ctx, "filter[status]", memberships.STATUSES)
    found, rights = memberships.list_memberships(
        ctx.user, organization_name, (ctx.query.get("q") or "").strip(), emails, statuses
    )
    render = lambda m: _membership(ctx, m, rights)  # noqa: E731
    return page_of(ctx, found, render, _membership_includers(ctx))


@route(
    bp,
    ORGANIZATION_MEMBERSHIPS,
    auth=Bearer,
    tag=TAG,
    methods=("POST",),
    includes=MEMBERSHIP_INCLUDES,
    errors={503: NO_ADDRESS},
)
def invite_member(
    ctx: Ctx,
    organization_name: str,
    attrs: Annotated[MembershipAttributes, JsonApi("organization-memberships")],
) -> Response:
    """Invite by email; the link goes by mail. Without SMTP the answer says it was not
    mailed (``invitation_meta``), and shows a site admin the link, in this answer only."""
    team_ids = _team_ids(ctx.json())
    invited = memberships.invite(ctx.user, organization_name, attrs.email, team_ids)
    found = invited.membership
    rights = authorization.access(ctx.user, organization_name)
    # The invited person's user comes with the answer, asked or not (as in TFE: go-tfe reads
    # the membership's User from it).
    asked = ["user", *(n for n in ctx.include or () if n != "user")]
    included = collect_included([found], asked, _membership_includers(ctx))
    meta = invitation_meta(invited)
    return document(_membership(ctx, found, rights, meta), 201, included=included)


def invitation_meta(invited: memberships.Invited) -> dict[str, Any] | None:
    """The ``meta`` of an invitation's answer: none when the link went by mail; else
    ``invitation-mailed: false``, a note saying so, and ``invitation-url`` for a site admin
    only."""
    if invited.mailed:
        return None
    if invited.link is None:
        return {"invitation-mailed": False, "invitation-note": memberships.NOT_MAILED}
    return {
        "invitation-mailed": False,
        "invitation-note": memberships.SHOWN_TO_SITE_ADMIN,
        "invitation-url": invited.link,
    }


def _team_ids(body: Any) -> list[str]:
    """The ids of ``data.relationships.teams.data`` (optional), each checked."""
    pointer = "/data/relationships/teams/data"
    data = body.get("data") if isinstance(body, dict) else None
    relationships = data.get("relationships") if isinstance(data, dict) else None
    if relationships is None:
        return []
    teams = relationships.get("teams") if isinstance(relationships, dict) else None
    items = teams.get("data") if isinstance(teams, dict) else None
    if not isinstance(items, list):
        raise Unprocessable(
            'teams must be {"data": [{"type": "teams", "id": ...}]}', pointer=pointer
        )
    if len(items) > memberships.MAX_TEAMS:
        raise Unprocessable(f"at most {memberships.MAX_TEAMS} teams", pointer=pointer)
    ids = []
    for index, item in enumerate(items):
        team_id = item.get("id") if isinstance(item, dict) else None
        if not isinstance(team_id, str) or not team_id:
            raise Unprocessable("id (the team's id) is required", pointer=f"{pointer}/{index}/id")
        ids.append(team_id)
    return ids


@route(
    bp,
    MEMBERSHIPS,
    auth=Bearer,
    tag=TAG,
    methods=("GET",),
    includes=MEMBERSHIP_INCLUDES,
    query=PAGE,
)
def list_own_memberships(ctx: Ctx) -> Response:
    # A disabled organization's memberships are left out (its access is refused).
    found = [
        m
        for m in memberships.own_memberships(ctx.user)
        if not authorization.is_disabled(m.organization)
    ]
    render = lambda m: _membership(ctx, m, authorization.access(ctx.user, m.organization))  # noqa: E731
    return page_of(ctx, found, render, _membership_includers(ctx))


@route(bp, MEMBERSHIP, auth=Bearer, tag=TAG, methods=("GET",), includes=MEMBERSHIP_INCLUDES)
def show_membership(ctx: Ctx, membership_id: str) -> Response:
    found, rights = memberships.find(ctx.user, membership_id)
    included = ctx.included([found], _membership_includers(ctx))
    return document(_membership(ctx, found, rights), included=included)


@route(bp, MEMBERSHIP, auth=Bearer, tag=TAG, methods=("DELETE",))
def delete_membership(ctx: Ctx, membership_id: str) -> Response:
    memberships.remove(ctx.user, membership_id)
    return no_content()


MEMBERSHIP_IDS = Relationships(
    "organization-memberships",
    max_items=teams_service.MAX_MEMBERS_PER_REQUEST,
    description="the members, by organization membership id",
)


@route(
    bp, TEAM_MEMBERSHIPS, auth=Bearer, tag=TAG, methods=("POST",), body=MEMBERSHIP_IDS, success=204
)
def add_team_memberships(ctx: Ctx, team_id: str) -> Response:
    memberships.change_team_members(
        ctx.user, team_id, ctx.relationship_ids("the membership id"), add=True
    )
    return no_content()


@route(bp, TEAM_MEMBERSHIPS, auth=Bearer, tag=TAG, methods=("DELETE",), body=MEMBERSHIP_IDS)
def remove_team_memberships(ctx: Ctx, team_id: str) -> Response:
    memberships.change_team_members(
        ctx.user, team_id, ctx.relationship_ids("the membership id"), add=False
    )
    return no_content()
