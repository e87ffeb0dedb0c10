"""HTTP routes of SCIM's site administration (``/api/v2/admin/scim-*`` and team links).

As every admin route: ``SiteAdmin``, so the hosted edition answers 404 before looking at the
token; otherwise a site admin's token is needed (others get 404).
"""

from __future__ import annotations

from collections.abc import Callable
from types import ModuleType
from typing import TYPE_CHECKING, Annotated, Any

from chalice import Blueprint, Response

from chalicelib.accounts.authorization import SiteAdmin
from chalicelib.core.api.http import Ctx, HandlerT, route
from chalicelib.core.api.jsonapi import document, no_content
from chalicelib.core.api.openapi import PAGE, JsonApi, Param, Reply
from chalicelib.scim import groups, render, service

if TYPE_CHECKING:
    from chalicelib.scim.schemas import (
        ScimGroupMappingCreate,
        ScimGroupMappingUpdate,
        ScimSettings,
        ScimTokenCreate,
    )

bp = Blueprint(__name__)


def body_models() -> ModuleType:
    """This file's body models, loaded on first use (``core.api.http.typed_body``)."""
    from chalicelib.scim import schemas

    return schemas


ADMIN = "/api/v2/admin"


def admin_route(path: str, methods: tuple[str, ...], **kw: Any) -> Callable[[HandlerT], HandlerT]:
    return route(bp, f"{ADMIN}/{path}", methods=methods, auth=SiteAdmin, **kw)


def _sent_attributes(ctx: Ctx) -> dict[str, Any]:
    """``data.attributes`` as sent (to tell an explicit null from an omitted attribute)."""
    body = ctx.json()
    data = body.get("data") if isinstance(body, dict) else None
    attributes = data.get("attributes") if isinstance(data, dict) else None
    return attributes if isinstance(attributes, dict) else {}


def _settings_document() -> Response:
    item = service.settings()
    return document(render.settings_resource(item, service.site_admin_group(item)))


# ----- settings --------------------------------------------------------------------------------


@admin_route("scim-settings", ("GET",))
def get_scim_settings(ctx: Ctx) -> Response:
    """Show the SCIM settings."""
    return _settings_document()


@admin_route(
    "scim-settings",
    ("PATCH",),
)
def update_scim_settings(
    ctx: Ctx,
    attributes: Annotated[ScimSettings, JsonApi("scim-settings", type_check="off", required=False)],
) -> Response:
    """Enable (SAML must be enabled), pause or resume SCIM, or link the site-admin group.

    ``site-admin-group-scim-id: null`` unlinks the group: the site admins SCIM made lose the
    flag. ``link-existing-users`` (ours, off by default) lets a new SCIM user be linked to an
    existing user of the same username and email that SCIM did not make (never a site
    admin)."""
    changes: dict[str, Any] = {}
    if attributes.enabled is not None:
        changes["enabled"] = attributes.enabled
    if attributes.paused is not None:
        changes["paused"] = attributes.paused
    if attributes.link_existing_users is not None:
        changes["link-existing-users"] = attributes.link_existing_users
    sent = _sent_attributes(ctx)
    if any(k in sent for k in ("site-admin-group-scim-id", "site_admin_group_scim_id")):
        changes["site-admin-group-scim-id"] = attributes.site_admin_group_scim_id
    service.update_settings(ctx.user, changes)
    return _settings_document()


@admin_route("scim-settings", ("DELETE",))
def disable_scim(ctx: Ctx) -> Response:
    """Disable SCIM provisioning (idempotent); users, groups, links and tokens are kept."""
    service.disable(ctx.user)
    return no_content()


# ----- tokens ----------------------------------------------------------------------------------


@admin_route("scim-tokens", ("GET",))
def list_scim_tokens(ctx: Ctx) -> Response:
    """List the SCIM tokens (never their values)."""
    return document([render.token_resource(t) for t in service.list_tokens()])


@admin_route(
    "scim-tokens",
    ("POST",),
)
def create_scim_token(
    ctx: Ctx,
    attributes: Annotated[
        ScimTokenCreate, JsonApi("authentication-tokens", type_check="off", required=False)
    ],
) -> Response:
    """Create a SCIM token for an identity provider: its value is shown once, here.

    ``expired-at`` defaults to a year from now and must be 29 to 365 days away."""
    token, secret = service.create_token(ctx.user, attributes.description, attributes.expired_at)
    return document(render.token_resource(token, secret), status=201)


@admin_route("scim-tokens/{token_id}", ("GET",))
def get_scim_token(ctx: Ctx, token_id: str) -> Response:
    """Show a SCIM token (without its value)."""
    return document(render.token_resource(service.get_token(token_id)))


@admin_route("scim-tokens/{token_id}", ("DELETE",))
def delete_scim_token(ctx: Ctx, token_id: str) -> Response:
    """Revoke a SCIM token (``DELETE /authentication-tokens/:id`` does too)."""
    service.delete_token(ctx.user, token_id)
    return no_content()


# ----- groups ----------------------------------------------------------------------------------


@admin_route(
    "scim-groups",
    ("GET",),
    query=(Param("q", "part of the group's name, any case"), *PAGE),
)
def list_scim_groups(ctx: Ctx) -> Response:
    """List the groups the identity provider provisioned."""
    page = ctx.paginate(groups.search_groups(ctx.query.get("q")))
    return document(
        [render.group_resource(g) for g in page.items], links=page.links, meta=page.meta
    )


# ----- team links ------------------------------------------------------------------------------

MAPPING = "teams/{team_id}/scim-group-mapping"


@admin_route(
    MAPPING,
    ("POST",),
    success=Reply(204, description="linked: the team's members are now the group's"),
)
def link_team_to_scim_group(
    ctx: Ctx,
    team_id: str,
    attributes: Annotated[
        ScimGroupMappingCreate, JsonApi("scim-group-mappings", type_check="lenient")
    ],
) -> Response:
    """Link a team to a SCIM group: its membership follows the group's from now on."""
    groups.create_mapping(ctx.user, team_id, attributes.scim_group_id)
    return no_content()


@admin_route(
    MAPPING,
    ("PATCH",),
    success=Reply(204, description="updated"),
)
def update_team_scim_group_mapping(
    ctx: Ctx,
    team_id: str,
    attributes: Annotated[
        ScimGroupMappingUpdate, JsonApi("scim-group-mappings", type_check="lenient")
    ],
) -> Response:
    """Pause or resume a team's sync with its SCIM group (resuming reconciles)."""
    groups.update_mapping(ctx.user, team_id, attributes.scim_sync_paused)
    return no_content()


@admin_route(MAPPING, ("DELETE",))
def unlink_team_from_scim_group(ctx: Ctx, team_id: str) -> Response:
    """Unlink a team from its SCIM group; the team keeps its members."""
    groups.delete_mapping(ctx.user, team_id)
    return no_content()
