"""HTTP routes of the accounts surface: organizations, users, teams and tokens."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any

from chalice import Blueprint
from pydantic import AwareDatetime, Strict

from chalicelib import lifecycle
from chalicelib.accounts import service
from chalicelib.accounts.store import ACCESS_FLAGS, OrganizationModel, TeamModel, UserModel
from chalicelib.core.auth import Principal, TokenModel
from chalicelib.core.http import Ctx, route
from chalicelib.core.ids import iso
from chalicelib.core.jsonapi import (
    Attributes,
    document,
    kebab,
    no_content,
    parse_attributes,
    relationship_list,
    resource,
    to_one,
)

bp = Blueprint(__name__)


# ----- rendering ----------------------------------------------------------------------------


def render_organization(org: OrganizationModel, rights: service.OrgAccess | None = None):
    owner = bool(rights and rights.is_owner)
    return resource(
        "organizations",
        org.name,
        {
            "name": org.name,
            "email": org.email,
            "external-id": org.external_id,
            "created-at": iso(org.created_at),
            "collaborator-auth-policy": org.collaborator_auth_policy,
            "cost-estimation-enabled": org.cost_estimation_enabled,
            "session-timeout": org.session_timeout,
            "permissions": {
                "can-update": owner,
                "can-destroy": owner,
                "can-create-team": owner,
                "can-create-workspace": bool(rights and rights.manage_workspaces),
                "can-manage-modules": bool(rights and rights.manage_modules),
            },
        },
        relationships={"entitlement-set": to_one("entitlement-sets", org.external_id)},
        links={"self": f"/api/v2/organizations/{org.name}"},
    )


def render_team(team: TeamModel, rights: service.OrgAccess | None = None):
    owner = bool(rights and rights.is_owner)
    return resource(
        "teams",
        team.id,
        {
            "name": team.name,
            "visibility": team.visibility,
            "sso-team-id": team.sso_team_id,
            "users-count": len(team.user_ids or ()),
            "organization-access": {kebab(f): bool(getattr(team.access, f)) for f in ACCESS_FLAGS},
            "permissions": {
                "can-update-membership": owner,
                "can-destroy": owner,
                "can-update-organization-access": owner,
                "can-update-api-token": owner,
                "can-update-visibility": owner,
            },
        },
        relationships={
            "organization": to_one("organizations", team.organization),
            "users": {"data": [{"id": u, "type": "users"} for u in sorted(team.user_ids or ())]},
            "authentication-token": to_one("authentication-tokens", team.token_id),
        },
        links={"self": f"/api/v2/teams/{team.id}"},
    )


def render_user(user: UserModel, *, private: bool = True) -> dict[str, Any]:
    """``private`` adds what only the user and site admins may see (the email address)."""
    return resource(
        "users",
        user.id,
        {
            "username": user.username,
            "email": user.email if private else "",
            "is-service-account": False,
            "is-site-admin": user.is_site_admin,
            "is-admin": user.is_site_admin,
            "avatar-url": "",
            "two-factor": {"enabled": False, "verified": False},
            "v2-only": False,
            "permissions": {
                "can-create-organizations": True,
                "can-change-email": True,
                "can-change-username": True,
            },
        },
        links={"self": f"/api/v2/users/{user.id}"},
    )


def render_service_account(principal: Principal) -> dict[str, Any]:
    """Team and organization tokens act as service users, as in TFE."""
    suffix = principal.id.split("-", 1)[-1]
    username = f"api-{principal.kind}_{principal.id}"
    return resource(
        "users",
        f"user-{suffix}",
        {
            "username": username,
            "email": "",
            "is-service-account": True,
            "is-site-admin": False,
            "is-admin": False,
            "avatar-url": "",
            "two-factor": {"enabled": False, "verified": False},
            "v2-only": True,
            "permissions": {},
        },
    )


def render_token(token: TokenModel, secret: str | None = None) -> dict[str, Any]:
    relationships = {"created-by": to_one("users", token.created_by)}
    if token.kind == "team":
        # TFE names the owning team; pytfe hydrates ``TeamToken.team`` from it.
        relationships["team"] = to_one("teams", token.owner_id)
    return resource(
        "authentication-tokens",
        token.id,
        {
            "created-at": iso(token.created_at),
            "last-used-at": None,
            "description": token.description,
            "token": secret,
            "expired-at": iso(token.expired_at),
        },
        relationships=relationships,
    )


# ----- request bodies -----------------------------------------------------------------------


class OrganizationAttributes(Attributes):
    name: str | None = None
    email: str | None = None


class TeamAccess(Attributes):
    manage_modules: bool | None = None
    manage_workspaces: bool | None = None
    manage_policies: bool | None = None
    manage_providers: bool | None = None
    manage_vcs_settings: bool | None = None
    manage_membership: bool | None = None
    manage_projects: bool | None = None
    read_workspaces: bool | None = None
    read_projects: bool | None = None

    def flags(self) -> dict[str, bool]:
        return {k: v for k, v in self.model_dump().items() if v is not None}


class TeamAttributes(Attributes):
    name: str | None = None
    visibility: str | None = None
    organization_access: TeamAccess | None = None

    def flags(self) -> dict[str, bool]:
        return self.organization_access.flags() if self.organization_access else {}


class TokenAttributes(Attributes):
    description: str | None = None
    # Strict mode would refuse ISO strings; timestamps arrive as text in JSON.
    expired_at: Annotated[AwareDatetime, Strict(False)] | None = None


def _visibility(value: str | None) -> str | None:
    if value not in (None, "secret", "organization"):
        from chalicelib.core.errors import Unprocessable

        raise Unprocessable(
            "visibility must be 'secret' or 'organization'", pointer="/data/attributes/visibility"
        )
    return value


# ----- meta ---------------------------------------------------------------------------------


@route(bp, "/api/v2/account/details")
def account_details(ctx: Ctx):
    if ctx.user.is_user:
        return document(render_user(service.get_user(ctx.user.id)))
    return document(render_service_account(ctx.user))


@route(bp, "/api/v2/users/{user_id}")
def show_user(ctx: Ctx, user_id: str):
    user = service.get_user(user_id)
    private = ctx.user.id == user_id or service.is_site_admin(ctx.user)
    return document(render_user(user, private=private))


# ----- organizations ------------------------------------------------------------------------


@route(bp, "/api/v2/organizations", methods=("GET", "POST"))
def organizations(ctx: Ctx):
    if ctx.request.method == "POST":
        attrs = parse_attributes(ctx.json(), OrganizationAttributes, type_="organizations")
        org = lifecycle.create_organization(ctx.user, attrs.name, attrs.email)
        return document(render_organization(org, service.OrgAccess.everything()), status=201)
    orgs = service.list_organizations(ctx.user)
    query = ctx.query.get("q", "").lower()
    if query:
        orgs = [o for o in orgs if query in o.name.lower() or query in o.email.lower()]
    page = ctx.paginate(orgs)
    data = [render_organization(o, service.access(ctx.user, o.name)) for o in page.items]
    return document(data, links=page.links, meta=page.meta)


@route(bp, "/api/v2/organizations/{organization_name}", methods=("GET", "PATCH", "DELETE"))
def organization(ctx: Ctx, organization_name: str):
    if ctx.request.method == "DELETE":
        lifecycle.delete_organization(ctx.user, organization_name)
        return no_content()
    if ctx.request.method == "PATCH":
        attrs = parse_attributes(
            ctx.json(), OrganizationAttributes, type_="organizations", lenient_type=True
        )
        org = service.update_organization(
            ctx.user, organization_name, email=attrs.email, new_name=attrs.name
        )
        return document(render_organization(org, service.OrgAccess.everything()))
    org, rights = service.readable_organization(ctx.user, organization_name)
    return document(render_organization(org, rights))


ENTITLEMENTS = {
    "private-module-registry": True,
    "teams": True,
    "operations": False,
    "sentinel": False,
    "sso": False,
    "state-storage": False,
    "vcs-integrations": False,
    "cost-estimation": False,
    "agents": False,
    "audit-logging": False,
    "configuration-designer": False,
    "module-tests-generation": False,
    "no-code-modules": True,
    "private-policy-agents": False,
    "run-tasks": False,
    "self-serve-billing": False,
    "user-limit": None,
}


@route(bp, "/api/v2/organizations/{organization_name}/entitlement-set")
def entitlement_set(ctx: Ctx, organization_name: str):
    org, _ = service.readable_organization(ctx.user, organization_name)
    return document(resource("entitlement-sets", org.external_id, dict(ENTITLEMENTS)))


# ----- teams --------------------------------------------------------------------------------


@route(bp, "/api/v2/organizations/{organization_name}/teams", methods=("GET", "POST"))
def teams(ctx: Ctx, organization_name: str):
    if ctx.request.method == "POST":
        # terrasnek sends type "organizations" here: accept any type.
        attrs = parse_attributes(ctx.json(), TeamAttributes)
        team = service.create_team(
            ctx.user, organization_name, attrs.name, _visibility(attrs.visibility), attrs.flags()
        )
        return document(render_team(team, service.OrgAccess.everything()), status=201)
    names_filter = ctx.query.get("filter[names]")
    names = [n for n in names_filter.split(",") if n] if names_filter else None
    found = service.list_teams(ctx.user, organization_name, names)
    rights = service.access(ctx.user, organization_name)
    page = ctx.paginate(found)
    return document([render_team(t, rights) for t in page.items], links=page.links, meta=page.meta)


@route(bp, "/api/v2/teams/{team_id}", methods=("GET", "PATCH", "DELETE"))
def team(ctx: Ctx, team_id: str):
    if ctx.request.method == "DELETE":
        service.delete_team(ctx.user, team_id)
        return no_content()
    if ctx.request.method == "PATCH":
        attrs = parse_attributes(ctx.json(), TeamAttributes, type_="teams", lenient_type=True)
        updated = service.update_team(
            ctx.user, team_id, attrs.name, _visibility(attrs.visibility), attrs.flags()
        )
        return document(render_team(TeamModel.get(updated.id), service.OrgAccess.everything()))
    found, rights = service.readable_team(ctx.user, team_id)
    return document(render_team(found, rights))


@route(bp, "/api/v2/teams/{team_id}/relationships/users", methods=("POST", "DELETE"))
def team_users(ctx: Ctx, team_id: str):
    items = relationship_list(ctx.json(), type_="users")
    usernames = []
    for index, item in enumerate(items):
        username = item.get("id")
        if not isinstance(username, str) or not username:
            from chalicelib.core.errors import Unprocessable

            raise Unprocessable("id (the username) is required", pointer=f"/data/{index}/id")
        usernames.append(username)
    service.change_membership(ctx.user, team_id, usernames, add=ctx.request.method == "POST")
    return no_content()


# ----- tokens -------------------------------------------------------------------------------


@route(bp, "/api/v2/teams/{team_id}/authentication-token", methods=("GET", "POST", "DELETE"))
def team_token(ctx: Ctx, team_id: str):
    if ctx.request.method == "POST":
        attrs = parse_attributes(ctx.json(), TokenAttributes, required=False)
        token, secret = service.create_team_token(ctx.user, team_id, attrs.description)
        return document(render_token(token, secret), status=201)
    if ctx.request.method == "DELETE":
        service.delete_team_token(ctx.user, team_id)
        return no_content()
    return document(render_token(service.team_token(ctx.user, team_id)))


@route(
    bp,
    "/api/v2/organizations/{organization_name}/authentication-token",
    methods=("GET", "POST", "DELETE"),
)
def organization_token(ctx: Ctx, organization_name: str):
    if ctx.request.method == "POST":
        attrs = parse_attributes(ctx.json(), TokenAttributes, required=False)
        token, secret = service.create_organization_token(
            ctx.user, organization_name, attrs.description
        )
        return document(render_token(token, secret), status=201)
    if ctx.request.method == "DELETE":
        service.delete_organization_token(ctx.user, organization_name)
        return no_content()
    return document(render_token(service.organization_token(ctx.user, organization_name)))


@route(bp, "/api/v2/users/{user_id}/authentication-tokens", methods=("GET", "POST"))
def user_tokens(ctx: Ctx, user_id: str):
    if ctx.request.method == "POST":
        attrs = parse_attributes(ctx.json(), TokenAttributes, required=False)
        expired_at: datetime | None = attrs.expired_at
        token, secret = service.create_user_token(ctx.user, user_id, attrs.description, expired_at)
        return document(render_token(token, secret), status=201)
    page = ctx.paginate(service.list_user_tokens(ctx.user, user_id))
    return document([render_token(t) for t in page.items], links=page.links, meta=page.meta)


@route(bp, "/api/v2/teams/{team_id}/authentication-tokens", methods=("POST",))
def additional_team_token(ctx: Ctx, team_id: str):
    attrs = parse_attributes(ctx.json(), TokenAttributes, required=False)
    token, secret = service.create_additional_team_token(
        ctx.user, team_id, attrs.description, attrs.expired_at
    )
    return document(render_token(token, secret), status=201)


@route(bp, "/api/v2/organizations/{organization_name}/team-tokens")
def organization_team_tokens(ctx: Ctx, organization_name: str):
    page = ctx.paginate(service.list_organization_team_tokens(ctx.user, organization_name))
    return document([render_token(t) for t in page.items], links=page.links, meta=page.meta)


@route(bp, "/api/v2/authentication-tokens/{token_id}", methods=("GET", "DELETE"))
def token_by_id(ctx: Ctx, token_id: str):
    if ctx.request.method == "DELETE":
        service.delete_token_by_id(ctx.user, token_id)
        return no_content()
    return document(render_token(service.token_by_id(ctx.user, token_id)))
