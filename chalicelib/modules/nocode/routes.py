"""HTTP routes of no-code modules (``/api/v2/no-code-modules``), in the registry's route
group: create, read (``include=variable-options``), update, delete, a version's variables,
and the two provisioning endpoints, which this registry answers with a refusal."""

from __future__ import annotations

from types import ModuleType
from typing import TYPE_CHECKING, Annotated

from chalice import Blueprint, Response

from chalicelib.core.api.access import Bearer
from chalicelib.core.api.http import Ctx, route
from chalicelib.core.api.jsonapi import document, no_content
from chalicelib.core.api.openapi import JsonApi
from chalicelib.modules.nocode import service
from chalicelib.modules.nocode.render import (
    render_module_variables,
    render_no_code_module,
    render_variable_options,
)

if TYPE_CHECKING:
    from chalicelib.modules.nocode.schemas import NoCodeAttributes

bp = Blueprint(__name__)


def body_models() -> ModuleType:
    """This file's body models, loaded on first use (``core.api.http.typed_body``)."""
    from chalicelib.modules.nocode import schemas

    return schemas


BY_ID = "/api/v2/no-code-modules/{no_code_module_id}"
INCLUDES = ("variable-options",)
INCLUDERS = {"variable-options": render_variable_options}
PROVISIONING_ERRORS = {422: "provisioning needs TFE's runs: this registry does not offer it"}


NoCodeBody = Annotated["NoCodeAttributes", JsonApi("no-code-modules")]


def _reply(ctx: Ctx, item, status: int = 200) -> Response:
    return document(render_no_code_module(item), status, included=ctx.included([item], INCLUDERS))


@route(
    bp,
    "/api/v2/organizations/{organization_name}/no-code-modules",
    auth=Bearer,
    methods=("POST",),
    success=200,
)
def create_no_code_module(ctx: Ctx, organization_name: str, attrs: NoCodeBody) -> Response:
    """Enable no-code provisioning for a registry module of the organization.

    ``relationships.registry-module`` names the module; ``variable-options`` (inline) give
    the allowed values of its variables. Answers 200, as TFE documents."""
    relationships = service.parse_relationships(ctx.json())
    item = service.create(
        ctx.user,
        organization_name,
        relationships,
        version_pin=attrs.version_pin,
        enabled=attrs.enabled,
    )
    return _reply(ctx, item)


@route(bp, BY_ID, auth=Bearer, methods=("GET",), includes=INCLUDES)
def show_no_code_module(ctx: Ctx, no_code_module_id: str) -> Response:
    """Show a no-code module (``include=variable-options`` adds its variable options)."""
    item, _ = service.readable(ctx.user, no_code_module_id)
    return _reply(ctx, item)


@route(bp, BY_ID, auth=Bearer, methods=("PATCH",))
def update_no_code_module(ctx: Ctx, no_code_module_id: str, attrs: NoCodeBody) -> Response:
    """Update a no-code module: ``version-pin``, ``enabled``, and ``variable-options``,
    which replace the set when given."""
    relationships = service.parse_relationships(ctx.json())
    item = service.update(
        ctx.user,
        no_code_module_id,
        relationships,
        version_pin=attrs.version_pin,
        enabled=attrs.enabled,
    )
    return _reply(ctx, item)


@route(bp, BY_ID, auth=Bearer, methods=("DELETE",))
def delete_no_code_module(ctx: Ctx, no_code_module_id: str) -> Response:
    """Delete a no-code module (the registry module stays)."""
    service.delete(ctx.user, no_code_module_id)
    return no_content()


@route(bp, BY_ID + "/versions/{version}/module-variables", auth=Bearer, methods=("GET",))
def no_code_module_variables(ctx: Ctx, no_code_module_id: str, version: str) -> Response:
    """List a version's variables, with the no-code module's allowed values for each."""
    item, stored, inputs = service.module_variables(ctx.user, no_code_module_id, version)
    return document(render_module_variables(item, stored, inputs))


@route(
    bp,
    BY_ID + "/workspaces",
    auth=Bearer,
    methods=("POST",),
    errors=PROVISIONING_ERRORS,
    summary="Create a workspace from a no-code module (not offered: 422)",
)
def create_no_code_workspace(ctx: Ctx, no_code_module_id: str) -> Response:
    """Provisioning needs TFE's runs; this registry answers 422 saying so (404 first for a
    no-code module the caller cannot see)."""
    raise service.provisioning_refusal(ctx.user, no_code_module_id)


@route(
    bp,
    BY_ID + "/workspaces/{workspace_id}/upgrade",
    auth=Bearer,
    methods=("POST",),
    errors=PROVISIONING_ERRORS,
    summary="Upgrade a no-code workspace (not offered: 422)",
)
def upgrade_no_code_workspace(ctx: Ctx, no_code_module_id: str, workspace_id: str) -> Response:
    """Provisioning needs TFE's runs; this registry answers 422 saying so (404 first for a
    no-code module the caller cannot see)."""
    raise service.provisioning_refusal(ctx.user, no_code_module_id)
