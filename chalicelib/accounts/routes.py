"""HTTP routes of the accounts surface: your account, users, organizations and tokens (an
organization's teams and memberships are ``chalicelib.accounts.teams.routes``).

One handler per path and method; rendering lives in ``chalicelib.accounts.render``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from types import ModuleType
from typing import TYPE_CHECKING, Annotated, Any

from chalice import Blueprint, Response

from chalicelib.accounts import account, authorization
from chalicelib.accounts.organizations import service as organizations_service
from chalicelib.accounts.render import (
    render_entitlement_set,
    render_organization,
    render_service_account,
    render_token,
    render_user,
)
from chalicelib.accounts.tokens import service as tokens_service
from chalicelib.accounts.users import service as users_service
from chalicelib.core.api.access import Bearer, Public
from chalicelib.core.api.errors import Unprocessable
from chalicelib.core.api.http import Ctx, route
from chalicelib.core.api.jsonapi import Includer, document, no_content
from chalicelib.core.api.openapi import PAGE, JsonApi, Param, Reply
from chalicelib.core.auth import AUDIT_TRAILS, TokenModel

if TYPE_CHECKING:
    from chalicelib.accounts.schemas import (
        AccountAttributes,
        OrganizationAttributes,
        PasswordAttributes,
        TokenAttributes,
    )

bp = Blueprint(__name__)


def body_models() -> ModuleType:
    """This file's body models, loaded on first use (``core.api.http.typed_body``)."""
    from chalicelib.accounts import schemas

    return schemas


# ----- meta ---------------------------------------------------------------------------------


@route(bp, "/api/v2/account/details", auth=Bearer)
def account_details(ctx: Ctx) -> Response:
    if ctx.user.is_user:
        return document(render_user(users_service.get_user(ctx.user.id)))
    return document(render_service_account(ctx.user))


NO_ADDRESS = "no public address is configured for the link (REGISTRY_PUBLIC_URL)"


@route(
    bp,
    "/api/v2/account/update",
    auth=Bearer,
    methods=("PATCH",),
    errors={503: "a new email address, and " + NO_ADDRESS},
)
def update_account(
    ctx: Ctx, attrs: Annotated[AccountAttributes, JsonApi("users", type_check="lenient")]
) -> Response:
    """Change your username or email address (a new address is confirmed by a mailed link:
    until then it shows as ``unconfirmed-email``)."""
    user = account.update(ctx.user, attrs.username, attrs.email)
    return document(render_user(user))


@route(bp, "/api/v2/account/password", auth=Bearer, methods=("PATCH",))
def change_password(
    ctx: Ctx, attrs: Annotated[PasswordAttributes, JsonApi("users", type_check="lenient")]
) -> Response:
    """Change your password (``current-password``, ``password``, ``password-confirmation``).
    Wrong current passwords count with the account's failed sign-ins: past the bound, 429."""
    user = account.change_password(
        ctx.user, attrs.current_password, attrs.password, attrs.password_confirmation, ctx.source_ip
    )
    return document(render_user(user))


@route(
    bp,
    account.API_CONFIRM_PATH + "{user_id}/{secret}",
    auth=Public,
    success=Reply(303, headers={"Location": "the confirmation page of the link"}),
)
def confirm_email(ctx: Ctx, user_id: str, secret: str) -> Response:
    """A confirmation link mailed before the links opened a page: to that page, where a
    button confirms (a GET confirms nothing, so a mail scanner's prefetch uses no link)."""
    location = account.confirm_path(user_id, secret)
    return Response(body="", status_code=303, headers={"Location": location})


@route(bp, "/api/v2/users/{user_id}", auth=Bearer)
def show_user(ctx: Ctx, user_id: str) -> Response:
    user = users_service.get_user(user_id)
    private = ctx.user.id == user_id or authorization.is_site_admin(ctx.user)
    return document(render_user(user, private=private))


def page_of(
    ctx: Ctx,
    items: list[Any],
    render: Callable[[Any], dict[str, Any]],
    includers: Mapping[str, Includer] | None = None,
    total: int | None = None,
) -> Response:
    """One page of ``items`` (as the query asks), rendered, with pagination links and meta,
    and the resources related to that page for the includes asked. With ``total``, ``items``
    are the page already read (``chalicelib.core.data.lists``)."""
    page = ctx.paginate(items) if total is None else ctx.paginate_read(items, total)
    return document(
        [render(item) for item in page.items],
        links=page.links,
        meta=page.meta,
        included=ctx.included(page.items, includers or {}),
    )


# ----- organizations ------------------------------------------------------------------------

ORGANIZATIONS = "/api/v2/organizations"
ORGANIZATION = ORGANIZATIONS + "/{organization_name}"
# A team's own routes are chalicelib.accounts.teams.routes; its tokens are here.
TEAM = "/api/v2/teams/{team_id}"


@route(
    bp,
    ORGANIZATIONS,
    auth=Bearer,
    methods=("GET",),
    query=(*PAGE, Param("q", "a part of the name or email (any case)")),
)
def list_organizations(ctx: Ctx) -> Response:
    orgs = organizations_service.list_organizations(ctx.user)
    query = ctx.query.get("q", "").lower()
    if query:
        orgs = [o for o in orgs if query in o.name.lower() or query in o.email.lower()]
    return page_of(
        ctx, orgs, lambda o: render_organization(o, authorization.access(ctx.user, o.name))
    )


@route(bp, ORGANIZATION, auth=Bearer, methods=("GET",))
def show_organization(ctx: Ctx, organization_name: str) -> Response:
    org, rights = authorization.readable_organization(ctx.user, organization_name)
    return document(render_organization(org, rights))


@route(
    bp,
    ORGANIZATION,
    auth=Bearer,
    methods=("PATCH",),
)
def update_organization(
    ctx: Ctx,
    organization_name: str,
    attrs: Annotated[OrganizationAttributes, JsonApi("organizations", type_check="lenient")],
) -> Response:
    org = organizations_service.update_organization(
        ctx.user, organization_name, email=attrs.email, new_name=attrs.name
    )
    return document(render_organization(org, authorization.OrgAccess.everything()))


@route(bp, ORGANIZATION + "/entitlement-set", auth=Bearer)
def show_entitlement_set(ctx: Ctx, organization_name: str) -> Response:
    org, _ = authorization.readable_organization(ctx.user, organization_name)
    return document(render_entitlement_set(org))


# ----- tokens -------------------------------------------------------------------------------

TEAM_TOKEN = TEAM + "/authentication-token"
ORGANIZATION_TOKEN = ORGANIZATION + "/authentication-token"
USER_TOKENS = "/api/v2/users/{user_id}/authentication-tokens"
TOKEN = "/api/v2/authentication-tokens/{token_id}"


# Creating a token needs no body: every attribute is optional.
TokenBody = Annotated[
    "TokenAttributes", JsonApi("authentication-tokens", type_check="off", required=False)
]


def _created_token(token: TokenModel, secret: str) -> Response:
    return document(render_token(token, secret), status=201)


@route(bp, TEAM_TOKEN, auth=Bearer, methods=("GET",))
def show_team_token(ctx: Ctx, team_id: str) -> Response:
    return document(render_token(tokens_service.team_token(ctx.user, team_id)))


@route(bp, TEAM_TOKEN, auth=Bearer, methods=("POST",))
def create_team_token(ctx: Ctx, team_id: str, attrs: TokenBody) -> Response:
    return _created_token(*tokens_service.create_team_token(ctx.user, team_id, attrs.description))


@route(bp, TEAM_TOKEN, auth=Bearer, methods=("DELETE",))
def delete_team_token(ctx: Ctx, team_id: str) -> Response:
    tokens_service.delete_team_token(ctx.user, team_id)
    return no_content()


# HCP's token types (go-tfe ``OrganizationTokenCreateOptions.TokenType``, as ``?token=``): the
# organization token, or its audit trail token, which reads the audit trail only.
TOKEN_TYPE = (
    Param(
        "token",
        "audit-trails: the organization's audit trail token (reads its audit trail only) "
        "instead of its organization token",
        {"type": "string", "enum": [AUDIT_TRAILS]},
    ),
)


def _audit_trail_token(ctx: Ctx) -> bool:
    """Whether the request names the audit trail token (``?token=audit-trails``)."""
    kind = ctx.query.get("token")
    if kind in (None, ""):
        return False
    if kind != AUDIT_TRAILS:
        raise Unprocessable(f"token must be {AUDIT_TRAILS!r} or absent", parameter="token")
    return True


@route(bp, ORGANIZATION_TOKEN, auth=Bearer, methods=("GET",), query=TOKEN_TYPE)
def show_organization_token(ctx: Ctx, organization_name: str) -> Response:
    if _audit_trail_token(ctx):
        return document(render_token(tokens_service.audit_trail_token(ctx.user, organization_name)))
    return document(render_token(tokens_service.organization_token(ctx.user, organization_name)))


@route(bp, ORGANIZATION_TOKEN, auth=Bearer, methods=("POST",), query=TOKEN_TYPE)
def create_organization_token(ctx: Ctx, organization_name: str, attrs: TokenBody) -> Response:
    if _audit_trail_token(ctx):
        return _created_token(
            *tokens_service.create_audit_trail_token(
                ctx.user, organization_name, attrs.description, attrs.expired_at
            )
        )
    return _created_token(
        *tokens_service.create_organization_token(ctx.user, organization_name, attrs.description)
    )


@route(bp, ORGANIZATION_TOKEN, auth=Bearer, methods=("DELETE",), query=TOKEN_TYPE)
def delete_organization_token(ctx: Ctx, organization_name: str) -> Response:
    if _audit_trail_token(ctx):
        tokens_service.delete_audit_trail_token(ctx.user, organization_name)
    else:
        tokens_service.delete_organization_token(ctx.user, organization_name)
    return no_content()


@route(bp, USER_TOKENS, auth=Bearer, methods=("GET",), query=PAGE)
def list_user_tokens(ctx: Ctx, user_id: str) -> Response:
    return page_of(ctx, tokens_service.list_user_tokens(ctx.user, user_id), render_token)


@route(bp, USER_TOKENS, auth=Bearer, methods=("POST",))
def create_user_token(ctx: Ctx, user_id: str, attrs: TokenBody) -> Response:
    return _created_token(
        *tokens_service.create_user_token(ctx.user, user_id, attrs.description, attrs.expired_at)
    )


@route(bp, TEAM + "/authentication-tokens", auth=Bearer, methods=("POST",))
def create_additional_team_token(ctx: Ctx, team_id: str, attrs: TokenBody) -> Response:
    return _created_token(
        *tokens_service.create_additional_team_token(
            ctx.user, team_id, attrs.description, attrs.expired_at
        )
    )


@route(bp, ORGANIZATION + "/team-tokens", auth=Bearer, query=PAGE)
def list_organization_team_tokens(ctx: Ctx, organization_name: str) -> Response:
    tokens = tokens_service.list_organization_team_tokens(ctx.user, organization_name)
    return page_of(ctx, tokens, render_token)


@route(bp, TOKEN, auth=Bearer, methods=("GET",))
def show_token(ctx: Ctx, token_id: str) -> Response:
    return document(render_token(tokens_service.token_by_id(ctx.user, token_id)))


@route(bp, TOKEN, auth=Bearer, methods=("DELETE",))
def delete_token(ctx: Ctx, token_id: str) -> Response:
    tokens_service.delete_token_by_id(ctx.user, token_id)
    return no_content()
