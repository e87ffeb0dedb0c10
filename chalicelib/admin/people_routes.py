"""HTTP routes of the site administration of users and organizations
(``/api/v2/admin/users``, ``/api/v2/admin/organizations``): see ``chalicelib.admin.people``.

As every admin route, they declare ``SiteAdmin``: the hosted edition answers 404 before
looking at the token; otherwise the caller must be a site admin (else 404). They run
in the accounts function, which writes users, tokens and organizations; deleting an
organization is ``chalicelib.lifecycle.admin_routes`` (the cascade lives above this room).
"""

from __future__ import annotations

from types import ModuleType
from typing import TYPE_CHECKING, Annotated, Any

from chalice import Blueprint, Response

from chalicelib.accounts.authorization import SiteAdmin
from chalicelib.accounts.memberships import Invitee
from chalicelib.accounts.organizations import service as organizations_service
from chalicelib.accounts.render import avatar_url, scim_attributes
from chalicelib.admin import people
from chalicelib.admin.limits import MAX_MODULE_CONSUMERS
from chalicelib.core.api.http import Ctx, route
from chalicelib.core.api.jsonapi import document, no_content, resource, to_many
from chalicelib.core.api.openapi import PAGE, JsonApi, Param, Relationships
from chalicelib.core.data.ids import iso

if TYPE_CHECKING:
    from chalicelib.admin.schemas import AdminOrganization, ModulePartnerships

if TYPE_CHECKING:
    from chalicelib.accounts.organizations.store import OrganizationModel
    from chalicelib.accounts.users.store import UserModel

bp = Blueprint(__name__)


def body_models() -> ModuleType:
    """This file's body models, loaded on first use (``core.api.http.typed_body``)."""
    from chalicelib.admin import schemas

    return schemas


USERS = "/api/v2/admin/users"
USER = USERS + "/{user_id}"
ORGANIZATIONS = "/api/v2/admin/organizations"
ORGANIZATION = ORGANIZATIONS + "/{organization_name}"
CONSUMERS = ORGANIZATION + "/relationships/module-consumers"
PARTNERSHIPS = ORGANIZATION + "/module-consumers"
TAG = "admin"


def admin_route(path: str, methods: tuple[str, ...], **kw: Any) -> Any:
    """A route of site administration: a site admin's token (404 for anyone else, and on
    the hosted edition before the token is read)."""
    return route(bp, path, methods=methods, auth=SiteAdmin, tag=TAG, **kw)


# ----- rendering --------------------------------------------------------------------------------


def _organization_ids(names: list[str]) -> dict[str, Any]:
    return to_many("organizations", names)


def render_admin_user(user: UserModel) -> dict[str, Any]:
    return resource(
        "users",
        user.id,
        {
            "username": user.username,
            "email": user.email,
            "avatar-url": avatar_url(user.username, user.id),
            "is-admin": bool(user.is_site_admin),
            # Reads the site's audit trail, nothing else of site administration.
            "is-auditor": bool(user.is_site_auditor),
            "is-suspended": bool(user.suspended),
            "is-service-account": False,
            "two-factor": user.two_factor(),
            **scim_attributes(user),
        },
        relationships={"organizations": _organization_ids(people.organizations_of(user))},
    )


def render_admin_invitee(invitee: Invitee) -> dict[str, Any]:
    """A person invited by email who has no user yet, as TFE shows the user it made for
    them: no username, no organization until they accept."""
    return resource(
        "users",
        invitee.user_id,
        {
            "username": "",
            "email": invitee.email,
            "avatar-url": avatar_url("", invitee.user_id),
            "is-admin": False,
            "is-auditor": False,
            "is-suspended": False,
            "is-service-account": False,
            "two-factor": {"enabled": False, "verified": False},
            **scim_attributes(None),
        },
        relationships={"organizations": _organization_ids([])},
    )


def render_admin_organization(
    org: OrganizationModel, owners: list[UserModel] | None = None
) -> dict[str, Any]:
    values = people.organization_values(org)
    relationships: dict[str, Any] = {
        "module-consumers": _organization_ids(sorted(org.module_consumers or ()))
    }
    if owners is not None:
        relationships["owners"] = to_many("users", (u.id for u in owners))
    return resource(
        "organizations",
        org.name,
        {
            "name": org.name,
            "external-id": org.external_id,
            "notification-email": org.email,
            "created-at": iso(org.created_at),
            "sso-enabled": False,
            "global-module-sharing": bool(org.global_module_sharing),
            **values,
        },
        relationships=relationships,
        links={"self": f"{ORGANIZATIONS}/{org.name}"},
    )


def _user_document(user: UserModel) -> Response:
    return document(render_admin_user(user))


# ----- users ------------------------------------------------------------------------------------

USER_QUERY = (
    *PAGE,
    Param("q", "the start of a username, or a whole email address (any case)"),
    Param("filter[admin]", "true: only site admins; false: only the others"),
    Param("filter[suspended]", "true: only suspended users; false: only the others"),
)


def _organizations_of(users: Any) -> list[dict[str, Any]]:
    names = sorted({name for user in users for name in people.organizations_of(user)})
    found = [organizations_service.get_organization(name) for name in names]
    return [render_admin_organization(org) for org in found if org is not None]


@admin_route(USERS, ("GET",), includes=("organizations",), query=USER_QUERY)
def list_admin_users(ctx: Ctx) -> Response:
    """List every user of the site"""
    found, total = people.list_users_and_invitees(ctx.query, ctx.page())
    page = ctx.paginate_read(found, total)
    users = [u for u in page.items if not isinstance(u, Invitee)]
    return document(
        [
            render_admin_invitee(u) if isinstance(u, Invitee) else render_admin_user(u)
            for u in page.items
        ],
        links=page.links,
        meta=page.meta,
        included=ctx.included(users, {"organizations": _organizations_of}),
    )


@admin_route(USER, ("DELETE",), errors={422: "the last site administrator cannot be deleted"})
def delete_admin_user(ctx: Ctx, user_id: str) -> Response:
    """Delete a user, its tokens and memberships (a person invited by email who has no
    user yet: their invitations)"""
    people.delete_user(ctx.user, user_id)
    return no_content()


def _action(name: str, act: Any, summary: str, errors: dict[int, str] | None = None) -> None:
    def handler(ctx: Ctx, user_id: str) -> Response:
        return _user_document(act(ctx.user, user_id))

    handler.__name__ = f"{name}_admin_user"
    admin_route(
        f"{USER}/actions/{name}", ("POST",), success=200, summary=summary, errors=errors or {}
    )(handler)


LAST_ADMIN = {422: "the last site administrator cannot lose the role"}
_action(
    "suspend", people.suspend, "Suspend a user: its tokens and sessions stop working", LAST_ADMIN
)
_action("unsuspend", people.unsuspend, "Unsuspend a user: its tokens work again")
_action("grant_admin", people.grant_admin, "Make a user a site administrator")
_action("revoke_admin", people.revoke_admin, "Revoke a user's site administration", LAST_ADMIN)


@admin_route(f"{USER}/actions/grant_auditor", ("POST",), success=200)
def grant_auditor_admin_user(ctx: Ctx, user_id: str) -> Response:
    """Make a user a site auditor: reads the site's audit trail (GET /api/v2/admin/audit-trail)
    and nothing else of site administration"""
    return _user_document(people.grant_auditor(ctx.user, user_id))


@admin_route(f"{USER}/actions/revoke_auditor", ("POST",), success=200)
def revoke_auditor_admin_user(ctx: Ctx, user_id: str) -> Response:
    """Revoke a user's site auditing"""
    return _user_document(people.revoke_auditor(ctx.user, user_id))


_action(
    "disable_two_factor",
    people.disable_two_factor,
    "Disable a user's two-factor sign-in (its secret and recovery codes are removed)",
)


# ----- organizations ----------------------------------------------------------------------------

ORGANIZATION_QUERY = (
    *PAGE,
    Param("q", "a part of the organization's name or notification email"),
    Param("filter[module_producer]", "true: only organizations that share their modules"),
)


def _owners_of(orgs: Any) -> list[dict[str, Any]]:
    users = {user.id: user for org in orgs for user in organizations_service.owners_of(org.name)}
    return [render_admin_user(user) for user in users.values()]


def _organization_document(ctx: Ctx, org: OrganizationModel) -> Response:
    owners = organizations_service.owners_of(org.name) if ctx.include else None
    included = ctx.included([org], {"owners": _owners_of})
    return document(render_admin_organization(org, owners), included=included)


@admin_route(ORGANIZATIONS, ("GET",), includes=("owners",), query=ORGANIZATION_QUERY)
def list_admin_organizations(ctx: Ctx) -> Response:
    """List every organization of the site"""
    page = ctx.paginate(people.list_organizations(ctx.query))
    wants_owners = ctx.include is not None
    return document(
        [
            render_admin_organization(
                org, organizations_service.owners_of(org.name) if wants_owners else None
            )
            for org in page.items
        ],
        links=page.links,
        meta=page.meta,
        included=ctx.included(page.items, {"owners": _owners_of}),
    )


@admin_route(ORGANIZATION, ("GET",), includes=("owners",))
def show_admin_organization(ctx: Ctx, organization_name: str) -> Response:
    """Show an organization with its admin attributes"""
    return _organization_document(ctx, people.get_organization(organization_name))


@admin_route(
    ORGANIZATION,
    ("PATCH",),
    includes=("owners",),
)
def update_admin_organization(
    ctx: Ctx,
    organization_name: str,
    attrs: Annotated[AdminOrganization, JsonApi("organizations", type_check="off", required=False)],
) -> Response:
    """Update an organization's admin attributes (module sharing among them)"""
    from chalicelib.admin.schemas import changes  # loaded with the body's model anyway

    org = people.update_organization(ctx.user, organization_name, changes(attrs))
    return _organization_document(ctx, org)


def _consumers_document(name: str) -> Response:
    return document([render_admin_organization(org) for org in people.module_consumers(name)])


@admin_route(CONSUMERS, ("GET",))
def list_module_consumers(ctx: Ctx, organization_name: str) -> Response:
    """The organizations that may read this one's private modules"""
    return _consumers_document(organization_name)


@admin_route(
    CONSUMERS,
    ("PATCH",),
    body=Relationships("organizations", max_items=MAX_MODULE_CONSUMERS),
    success=200,
)
def update_module_consumers(ctx: Ctx, organization_name: str) -> Response:
    """Replace the organizations that may read this one's private modules"""
    people.set_module_consumers(ctx.user, organization_name, ctx.relationships())
    return _consumers_document(organization_name)


def render_module_partnership(producer: OrganizationModel, consumer: OrganizationModel) -> dict:
    return resource(
        "module-partnerships",
        f"mp-{producer.external_id}-{consumer.external_id}",
        {
            "consuming-organization-id": consumer.external_id,
            "consuming-organization-name": consumer.name,
            "producing-organization-id": producer.external_id,
            "producing-organization-name": producer.name,
        },
    )


@admin_route(
    PARTNERSHIPS,
    ("PUT", "PATCH"),
    success=200,
    errors={422: "an unknown organization id (the pointer names it)"},
)
def update_module_partnerships(
    ctx: Ctx,
    organization_name: str,
    attrs: Annotated[ModulePartnerships, JsonApi("module-partnerships")],
) -> Response:
    """Replace the consumers by their external ids (TFE's deprecated Admin Module Sharing API)"""
    wanted = attrs.module_consuming_organization_ids
    producer = people.set_module_consumers_by_external_id(ctx.user, organization_name, wanted)
    consumers = people.module_consumers(organization_name)
    return document([render_module_partnership(producer, c) for c in consumers])
