"""The workspace routes that cascade across rooms (create with tags, delete with its tags):
they live here, above the workspaces and tags rooms, so no domain imports upward. They keep
the workspaces room's OpenAPI tag: to a client they are workspace routes."""

from __future__ import annotations

from types import ModuleType

from chalice import Blueprint, Response

from chalicelib.core import tagbindings
from chalicelib.core.api.access import Bearer
from chalicelib.core.api.http import Ctx, route
from chalicelib.core.api.jsonapi import no_content
from chalicelib.lifecycle import workspaces as lifecycle
from chalicelib.workspaces import service
from chalicelib.workspaces.routes import (
    BY_ID,
    BY_NAME,
    INCLUDES,
    ORG_WORKSPACES,
    Create,
    project_ref,
    reply,
    settings_of,
)
from chalicelib.workspaces.service import WorkspaceRef

bp = Blueprint(__name__)


def body_models() -> ModuleType:
    """The model of ``Create`` (``chalicelib.core.api.http.typed_body``), imported with the
    first request that sends one: pydantic stays out of the cold start."""
    from chalicelib.workspaces import schemas

    return schemas


TAG = "workspaces"


@route(bp, ORG_WORKSPACES, auth=Bearer, methods=("POST",), includes=INCLUDES, tag=TAG)
def create_workspace(ctx: Ctx, organization_name: str, body: Create) -> Response:
    """Create a workspace, in ``relationships.project`` (default: the default project), with
    its tag bindings (``relationships.tag-bindings``)."""
    workspace = lifecycle.create_workspace(
        ctx.user,
        organization_name,
        body.name,
        settings_of(body),
        body.tag_names or [],
        project_id=project_ref(ctx.json()),
        bindings=tagbindings.from_relationship(ctx.json()),
    )
    workspace, rights = service.readable(ctx.user, WorkspaceRef(id=workspace.id))
    return reply(ctx, workspace, rights, 201)


def _delete(ctx: Ctx, ref: WorkspaceRef) -> Response:
    lifecycle.delete_workspace(ctx.user, ref)
    return no_content()


@route(bp, BY_ID, auth=Bearer, methods=("DELETE",), tag=TAG)
def delete_workspace(ctx: Ctx, workspace_id: str) -> Response:
    return _delete(ctx, WorkspaceRef(id=workspace_id))


@route(bp, BY_NAME, auth=Bearer, methods=("DELETE",), tag=TAG)
def delete_workspace_by_name(ctx: Ctx, organization_name: str, workspace_name: str) -> Response:
    return _delete(ctx, WorkspaceRef(organization=organization_name, name=workspace_name))


@route(bp, BY_ID + "/actions/safe-delete", auth=Bearer, methods=("POST",), success=204, tag=TAG)
def safe_delete_workspace(ctx: Ctx, workspace_id: str) -> Response:
    return _delete(ctx, WorkspaceRef(id=workspace_id))


@route(bp, BY_NAME + "/actions/safe-delete", auth=Bearer, methods=("POST",), success=204, tag=TAG)
def safe_delete_workspace_by_name(
    ctx: Ctx, organization_name: str, workspace_name: str
) -> Response:
    return _delete(ctx, WorkspaceRef(organization=organization_name, name=workspace_name))
