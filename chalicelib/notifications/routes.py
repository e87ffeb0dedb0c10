"""HTTP routes of notification configurations: by organization (list, create) and by id
(read, update, delete, verify), in TFE's shape (go-tfe's ``NotificationConfigurations``)."""

from __future__ import annotations

from types import ModuleType
from typing import TYPE_CHECKING, Annotated

from chalice import Blueprint, Response

from chalicelib.core.api.access import Bearer
from chalicelib.core.api.http import Ctx, route
from chalicelib.core.api.jsonapi import document, no_content
from chalicelib.core.api.openapi import PAGE, JsonApi
from chalicelib.notifications import service
from chalicelib.notifications.render import render_configuration

if TYPE_CHECKING:
    from chalicelib.notifications.schemas import ConfigurationBody

bp = Blueprint(__name__)


def body_models() -> ModuleType:
    """This file's body models, loaded on first use (``core.api.http.typed_body``)."""
    from chalicelib.notifications import schemas

    return schemas


ORG_CONFIGURATIONS = "/api/v2/organizations/{organization_name}/notification-configurations"
BY_ID = "/api/v2/notification-configurations/{notification_configuration_id}"

Create = Annotated["ConfigurationBody", JsonApi("notification-configurations", "lenient")]
Update = Annotated[
    "ConfigurationBody", JsonApi("notification-configurations", "lenient", required=False)
]


@route(bp, ORG_CONFIGURATIONS, auth=Bearer, methods=("GET",), query=PAGE)
def list_notification_configurations(ctx: Ctx, organization_name: str) -> Response:
    """List the organization's notification configurations (owners, manage-modules)."""
    items = service.list_for(ctx.user, organization_name)
    page = ctx.paginate(items)
    return document([render_configuration(c) for c in page.items], links=page.links, meta=page.meta)


@route(bp, ORG_CONFIGURATIONS, auth=Bearer, methods=("POST",))
def create_notification_configuration(ctx: Ctx, organization_name: str, body: Create) -> Response:
    """Create a notification configuration (an email one's users: ``relationships.users``)."""
    made = service.create(ctx.user, organization_name, service.sent(body, ctx.json()))
    return document(render_configuration(made), 201)


@route(bp, BY_ID, auth=Bearer, methods=("GET",))
def show_notification_configuration(ctx: Ctx, notification_configuration_id: str) -> Response:
    return document(
        render_configuration(service.manageable(ctx.user, notification_configuration_id))
    )


@route(bp, BY_ID, auth=Bearer, methods=("PATCH",), errors={409: "changed meanwhile"})
def update_notification_configuration(
    ctx: Ctx, notification_configuration_id: str, body: Update
) -> Response:
    """Update a notification configuration: the attributes sent; ``relationships.users``
    replaces its users (left out: none, as TFE)."""
    changed = service.update(
        ctx.user, notification_configuration_id, service.sent(body, ctx.json())
    )
    return document(render_configuration(changed))


@route(bp, BY_ID, auth=Bearer, methods=("DELETE",))
def delete_notification_configuration(ctx: Ctx, notification_configuration_id: str) -> Response:
    service.delete(ctx.user, notification_configuration_id)
    return no_content()


@route(bp, BY_ID + "/actions/verify", auth=Bearer, methods=("POST",), success=200)
def verify_notification_configuration(ctx: Ctx, notification_configuration_id: str) -> Response:
    """Send a verification notice now; answers the configuration with its delivery
    responses (200 even when the destination failed: the failure is in them)."""
    verified = service.verify(ctx.user, notification_configuration_id)
    return document(render_configuration(verified))
