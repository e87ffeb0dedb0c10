"""The organization routes that cascade across rooms (create with its default project and
owners team, delete with everything it holds): they live here, above every domain they
touch, so no domain imports upward. They keep the accounts room's OpenAPI tag: to a client
they are organization routes."""

from __future__ import annotations

from types import ModuleType
from typing import TYPE_CHECKING, Annotated

from chalice import Blueprint, Response

from chalicelib.accounts import authorization
from chalicelib.accounts.render import render_organization
from chalicelib.accounts.routes import ORGANIZATION, ORGANIZATIONS
from chalicelib.core.api.access import Bearer
from chalicelib.core.api.http import Ctx, route
from chalicelib.core.api.jsonapi import document, no_content
from chalicelib.core.api.openapi import JsonApi
from chalicelib.lifecycle import organizations as lifecycle

if TYPE_CHECKING:
    from chalicelib.accounts.schemas import OrganizationAttributes

bp = Blueprint(__name__)


def body_models() -> ModuleType:
    """This file's body models, loaded on first use (``core.api.http.typed_body``)."""
    from chalicelib.accounts import schemas

    return schemas


TAG = "accounts"


@route(
    bp,
    ORGANIZATIONS,
    auth=Bearer,
    methods=("POST",),
    tag=TAG,
)
def create_organization(
    ctx: Ctx, attrs: Annotated[OrganizationAttributes, JsonApi("organizations")]
) -> Response:
    org = lifecycle.create_organization(ctx.user, attrs.name, attrs.email)
    return document(render_organization(org, authorization.OrgAccess.everything()), status=201)


@route(bp, ORGANIZATION, auth=Bearer, methods=("DELETE",), tag=TAG)
def delete_organization(ctx: Ctx, organization_name: str) -> Response:
    lifecycle.delete_organization(ctx.user, organization_name)
    return no_content()
