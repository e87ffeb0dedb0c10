"""The SCIM 2.0 service provider an identity provider calls (``/scim/v2``, RFC 7644).

Each change records one audit event (``record``: ``scim-user`` or ``scim-group``,
``created``, ``updated`` or ``deleted``; the actor is the SCIM token) after it is made.

Every route takes a SCIM token (``/api/v2/admin/scim-tokens``), never an API token, and
answers ``application/scim+json``; errors are SCIM error documents. ``Users`` and ``Groups``
answer 403 while SCIM is disabled or paused; the discovery documents always answer. The
hosted edition has no SCIM (404).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from chalice import Blueprint, Response

from chalicelib.core.api.http import Ctx, HandlerT, route
from chalicelib.core.api.openapi import Param, Payload, Reply
from chalicelib.core.audit import trail
from chalicelib.scim import groups, protocol, render, resources, service, users
from chalicelib.scim.errors import SCIM_JSON, ScimError, not_found, scim_error_response
from chalicelib.scim.store import ScimGroupModel, ScimUserModel

bp = Blueprint(__name__)
BASE = render.SCIM_BASE
CONTENT_TYPES = ["application/scim+json", "application/json"]
OBJECT = {"type": "object"}
STRING = {"type": "string"}
NAME = {"type": "string", "maxLength": resources.MAX_NAME}
LIST = {
    "type": "object",
    "required": ["schemas", "totalResults", "Resources"],
    "properties": {
        "schemas": {"type": "array", "items": {"type": "string"}},
        "totalResults": {"type": "integer"},
        "startIndex": {"type": "integer"},
        "itemsPerPage": {"type": "integer"},
        "Resources": {"type": "array", "items": OBJECT},
    },
}
SELECT = (
    Param("attributes", "only these attributes (comma-separated)"),
    Param("excludedAttributes", "all but these attributes (comma-separated)"),
)
LISTING = (
    Param(
        "filter",
        'a SCIM filter, e.g. userName eq "jane@example.com"',
        {"type": "string", "maxLength": protocol.MAX_FILTER_LENGTH},
    ),
    Param("startIndex", "1-based index of the first result", {"type": "integer"}),
    Param("count", "results per page (default 100, at most 200)", {"type": "integer"}),
    *SELECT,
)


MEDIA = ("application/scim+json", "application/json")
USER_BODY = Payload(MEDIA, "a SCIM User resource")
_MEMBERS = {
    "type": "array",
    "maxItems": groups.MAX_MEMBERS_PER_REQUEST,
    "items": {
        "type": "object",
        "required": ["value"],
        "properties": {"value": {"type": "string", "maxLength": groups.MAX_ID}},
    },
}
GROUP_BODY = Payload(
    MEDIA,
    "a SCIM Group resource",
    schema={
        "type": "object",
        "required": ["displayName"],
        "properties": {"displayName": NAME, "externalId": NAME, "members": _MEMBERS},
    },
)
PATCH_BODY = Payload(
    MEDIA,
    "a SCIM PatchOp message (a Group's operations name at most "
    f"{groups.MAX_MEMBERS_PER_REQUEST} members in all)",
    schema={
        "type": "object",
        "required": ["Operations"],
        "properties": {
            "Operations": {
                "type": "array",
                "minItems": 1,
                "maxItems": protocol.MAX_OPERATIONS,
                "items": {
                    "type": "object",
                    "required": ["op"],
                    "properties": {
                        "op": {
                            "type": "string",
                            "maxLength": len("replace"),
                            "description": "add, replace or remove (any case)",
                        },
                        "path": {"type": "string", "maxLength": protocol.MAX_PATH_LENGTH},
                        "value": {},
                    },
                },
            }
        },
    },
)
TOO_MANY = {413: "more Operations or members than one request may carry"}


def _reply(status: int, schema: dict[str, Any] = OBJECT, description: str = "") -> Reply:
    return Reply(status, schema, media_type=SCIM_JSON, description=description)


def scim_route(
    path: str, methods: tuple[str, ...], errors: dict[int, str] | None = None, **kw: Any
) -> Callable[[HandlerT], HandlerT]:
    return route(
        bp,
        BASE + path,
        methods=methods,
        auth=service.Scim,
        render_error=scim_error_response,
        content_types=CONTENT_TYPES,
        errors={403: "SCIM provisioning is disabled or paused", **(errors or {})},
        **kw,
    )


def _provisioning(ctx: Ctx) -> str:
    """Check provisioning is on; the absolute base URL of ``/scim/v2``."""
    service.ensure_provisioning(ctx.path)
    return ctx.url(BASE)


def _body(ctx: Ctx) -> Any:
    body = ctx.json()
    if not isinstance(body, dict):
        raise ScimError(400, "the request body must be a JSON object", "invalidSyntax")
    return body


def _one(ctx: Ctx, resource: dict[str, Any], status: int = 200) -> Response:
    query = ctx.query
    selected = protocol.select(resource, query.get("attributes"), query.get("excludedAttributes"))
    location = resource["meta"]["location"] if status == 201 else None
    return render.scim_response(selected, status, location)


def _listing(ctx: Ctx, resources: list[dict[str, Any]], node: protocol.Filter | None) -> Response:
    """One page of ``resources`` that match the filter ``node``, with the attributes asked."""
    query = ctx.query
    start, count = protocol.paging(query)
    if node is not None:
        resources = [r for r in resources if protocol.matches(r, node)]
    attributes, excluded = query.get("attributes"), query.get("excludedAttributes")
    resources = [protocol.select(r, attributes, excluded) for r in resources]
    return render.scim_response(protocol.list_response(resources, start, count))


def _deleted() -> Response:
    return Response(body="", status_code=204, headers={})


def record(ctx: Ctx, resource_type: str, resource_id: str, action: str, meta: dict) -> None:
    """Record a change the identity provider made through this request's SCIM token."""
    token = ctx.request.scim_token  # type: ignore[attr-defined]  # set by ``service._admit``
    described = f"SCIM token {token.description}" if token.description else "SCIM token"
    event = service.change_event(
        service.actor(token), resource_type, resource_id, action, meta, described
    )
    trail.record(event)


def _user_changed(ctx: Ctx, user: ScimUserModel, action: str) -> None:
    meta = {"user-name": user.user_name, "user-id": user.user_id, "active": bool(user.active)}
    record(ctx, "scim-user", user.id, action, meta)


def _group_changed(ctx: Ctx, group: ScimGroupModel, action: str) -> None:
    meta = {"display-name": group.display_name, "members": len(group.member_ids or ())}
    record(ctx, "scim-group", group.id, action, meta)


# ----- Users -----------------------------------------------------------------------------------


@scim_route("/Users", ("GET",), query=LISTING, success=_reply(200, LIST))
def list_scim_users(ctx: Ctx) -> Response:
    """List or find (filter) provisioned users."""
    base = _provisioning(ctx)
    node = protocol.parse_filter(ctx.query.get("filter"))  # a bad filter: 400, nothing read
    return _listing(ctx, render.scim_users(users.list_users(node), base), node)


@scim_route(
    "/Users",
    ("POST",),
    body=USER_BODY,
    query=SELECT,
    success=_reply(201),
    errors={409: "userName taken"},
)
def create_scim_user(ctx: Ctx) -> Response:
    """Provision a user: it becomes a user of this instance."""
    base = _provisioning(ctx)
    user = users.create_user(_body(ctx))
    _user_changed(ctx, user, "created")
    return _one(ctx, render.scim_users([user], base)[0], 201)


@scim_route("/Users/{scim_id}", ("GET",), query=SELECT, success=_reply(200))
def get_scim_user(ctx: Ctx, scim_id: str) -> Response:
    """Show a provisioned user."""
    base = _provisioning(ctx)
    return _one(ctx, render.scim_users([users.get_user(scim_id)], base)[0])


@scim_route("/Users/{scim_id}", ("PUT",), body=USER_BODY, query=SELECT, success=_reply(200))
def replace_scim_user(ctx: Ctx, scim_id: str) -> Response:
    """Replace a user's attributes (``active: false`` deactivates it)."""
    base = _provisioning(ctx)
    user = users.replace_user(scim_id, _body(ctx))
    _user_changed(ctx, user, "updated")
    return _one(ctx, render.scim_users([user], base)[0])


@scim_route(
    "/Users/{scim_id}",
    ("PATCH",),
    TOO_MANY,
    body=PATCH_BODY,
    query=SELECT,
    success=_reply(200),
)
def patch_scim_user(ctx: Ctx, scim_id: str) -> Response:
    """Change some of a user's attributes (PatchOp add/replace/remove)."""
    base = _provisioning(ctx)
    user = users.patch_user(scim_id, _body(ctx))
    _user_changed(ctx, user, "updated")
    return _one(ctx, render.scim_users([user], base)[0])


@scim_route("/Users/{scim_id}", ("DELETE",), success=Reply(204))
def delete_scim_user(ctx: Ctx, scim_id: str) -> Response:
    """Deprovision a user: its API tokens are deleted, it leaves linked teams."""
    _provisioning(ctx)
    user = users.get_user(scim_id)
    users.delete_user(scim_id)
    _user_changed(ctx, user, "deleted")
    return _deleted()


# ----- Groups ----------------------------------------------------------------------------------


def _wants_members(ctx: Ctx) -> bool:
    excluded = (ctx.query.get("excludedAttributes") or "").lower()
    return "members" not in [a.strip() for a in excluded.split(",")]


@scim_route("/Groups", ("GET",), query=LISTING, success=_reply(200, LIST))
def list_scim_groups(ctx: Ctx) -> Response:
    """List or find (filter) provisioned groups."""
    base = _provisioning(ctx)
    node = protocol.parse_filter(ctx.query.get("filter"))
    found = groups.list_groups(node)
    return _listing(ctx, render.scim_groups(found, base, members=_wants_members(ctx)), node)


@scim_route(
    "/Groups",
    ("POST",),
    body=GROUP_BODY,
    query=SELECT,
    success=_reply(201),
    errors={409: "name taken", **TOO_MANY},
)
def create_scim_group(ctx: Ctx) -> Response:
    """Provision a group (with members)."""
    base = _provisioning(ctx)
    group = groups.create_group(_body(ctx))
    _group_changed(ctx, group, "created")
    return _one(ctx, render.scim_groups([group], base)[0], 201)


@scim_route("/Groups/{scim_id}", ("GET",), query=SELECT, success=_reply(200))
def get_scim_group(ctx: Ctx, scim_id: str) -> Response:
    """Show a provisioned group."""
    base = _provisioning(ctx)
    group = groups.get_group(scim_id)
    return _one(ctx, render.scim_groups([group], base, members=_wants_members(ctx))[0])


@scim_route(
    "/Groups/{scim_id}", ("PUT",), TOO_MANY, body=GROUP_BODY, query=SELECT, success=_reply(200)
)
def replace_scim_group(ctx: Ctx, scim_id: str) -> Response:
    """Replace a group's name and members; linked teams follow."""
    base = _provisioning(ctx)
    group = groups.replace_group(scim_id, _body(ctx))
    _group_changed(ctx, group, "updated")
    return _one(ctx, render.scim_groups([group], base)[0])


@scim_route(
    "/Groups/{scim_id}",
    ("PATCH",),
    TOO_MANY,
    body=PATCH_BODY,
    query=SELECT,
    success=_reply(200),
)
def patch_scim_group(ctx: Ctx, scim_id: str) -> Response:
    """Change a group's name or members (PatchOp); linked teams follow."""
    base = _provisioning(ctx)
    group = groups.patch_group(scim_id, _body(ctx))
    fresh = groups.get_group(group.id)
    _group_changed(ctx, fresh, "updated")
    return _one(ctx, render.scim_groups([fresh], base, members=_wants_members(ctx))[0])


@scim_route("/Groups/{scim_id}", ("DELETE",), success=Reply(204))
def delete_scim_group(ctx: Ctx, scim_id: str) -> Response:
    """Delete a group: linked teams are unlinked and keep their members."""
    _provisioning(ctx)
    group = groups.get_group(scim_id)
    groups.delete_group(scim_id)
    _group_changed(ctx, group, "deleted")
    return _deleted()


# ----- discovery -------------------------------------------------------------------------------


@scim_route("/ServiceProviderConfig", ("GET",), success=_reply(200))
def scim_service_provider_config(ctx: Ctx) -> Response:
    """What this SCIM service provider supports."""
    return render.scim_response(protocol.service_provider_config(ctx.url(BASE)))


@scim_route("/ResourceTypes", ("GET",), success=_reply(200, LIST))
def scim_resource_types(ctx: Ctx) -> Response:
    """The resource types served: User and Group."""
    types = protocol.resource_types(ctx.url(BASE))
    return render.scim_response(protocol.list_response(types, 1, len(types)))


@scim_route("/ResourceTypes/{name}", ("GET",), success=_reply(200))
def scim_resource_type(ctx: Ctx, name: str) -> Response:
    """One resource type."""
    for item in protocol.resource_types(ctx.url(BASE)):
        if item["id"] == name:
            return render.scim_response(item)
    raise not_found(f"no resource type {name!r}")


@scim_route("/Schemas", ("GET",), success=_reply(200, LIST))
def scim_schemas(ctx: Ctx) -> Response:
    """The schemas of the resources served."""
    documents = protocol.schema_documents(ctx.url(BASE))
    return render.scim_response(protocol.list_response(documents, 1, len(documents)))


@scim_route("/Schemas/{schema_id}", ("GET",), success=_reply(200))
def scim_schema(ctx: Ctx, schema_id: str) -> Response:
    """One schema, by its URN."""
    for item in protocol.schema_documents(ctx.url(BASE)):
        if item["id"] == schema_id:
            return render.scim_response(item)
    raise not_found(f"no schema {schema_id!r}")
