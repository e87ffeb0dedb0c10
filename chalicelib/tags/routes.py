"""HTTP routes of organization tags and of the workspace tag relationships."""

from __future__ import annotations

from chalice import Blueprint, Response

from chalicelib.core.api.access import Bearer
from chalicelib.core.api.http import Ctx, route
from chalicelib.core.api.jsonapi import document, no_content
from chalicelib.core.api.openapi import PAGE, Param, Relationships
from chalicelib.tags import service
from chalicelib.tags.render import render_tag
from chalicelib.tags.store import TagModel

bp = Blueprint(__name__)

ORG_TAGS = "/api/v2/organizations/{organization_name}/tags"
TAG_WORKSPACES = "/api/v2/tags/{tag_id}/relationships/workspaces"
WORKSPACE_TAGS = "/api/v2/workspaces/{workspace_id}/relationships/tags"
# A tag by id, or by name (a new name creates the tag).
TAGS = Relationships(
    "tags",
    max_items=service.MAX_TAGS_PER_REQUEST,
    by_name=True,
    description="tags by id or `attributes.name`",
)
TAG_IDS = Relationships("tags", max_items=service.MAX_TAGS_PER_REQUEST)
WORKSPACES = Relationships("workspaces", max_items=service.MAX_WORKSPACES_PER_REQUEST)


def _listing(ctx: Ctx, tags: list[TagModel]) -> Response:
    page = ctx.paginate(tags)
    return document([render_tag(t) for t in page.items], links=page.links, meta=page.meta)


@route(
    bp,
    ORG_TAGS,
    auth=Bearer,
    methods=("GET",),
    query=(
        *PAGE,
        Param("q", "a part of the tag's name"),
        Param("filter[exclude][taggable][id]", "leave out the tags of this workspace"),
    ),
)
def list_tags(ctx: Ctx, organization_name: str) -> Response:
    query = ctx.query
    tags, total = service.page_tags(
        ctx.user,
        organization_name,
        query.get("q"),
        query.get("filter[exclude][taggable][id]"),
        ctx.page(),
    )
    page = ctx.paginate_read(tags, total)
    return document([render_tag(t) for t in page.items], links=page.links, meta=page.meta)


@route(bp, ORG_TAGS, auth=Bearer, methods=("DELETE",), body=TAG_IDS)
def delete_tags(ctx: Ctx, organization_name: str) -> Response:
    service.delete_tags(ctx.user, organization_name, ctx.relationships())
    return no_content()


@route(bp, TAG_WORKSPACES, auth=Bearer, methods=("POST",), body=WORKSPACES, success=204)
def add_workspaces(ctx: Ctx, tag_id: str) -> Response:
    service.add_workspaces_to_tag(ctx.user, tag_id, ctx.relationships())
    return no_content()


@route(
    bp,
    WORKSPACE_TAGS,
    auth=Bearer,
    methods=("GET",),
    query=(*PAGE, Param("name", "a part of the tag's name")),
)
def workspace_tags(ctx: Ctx, workspace_id: str) -> Response:
    return _listing(ctx, service.workspace_tags(ctx.user, workspace_id, ctx.query.get("name")))


@route(bp, WORKSPACE_TAGS, auth=Bearer, methods=("POST",), body=TAGS, success=204)
def add_workspace_tags(ctx: Ctx, workspace_id: str) -> Response:
    service.add_workspace_tags(ctx.user, workspace_id, ctx.relationships())
    return no_content()


@route(bp, WORKSPACE_TAGS, auth=Bearer, methods=("DELETE",), body=TAGS)
def remove_workspace_tags(ctx: Ctx, workspace_id: str) -> Response:
    service.remove_workspace_tags(ctx.user, workspace_id, ctx.relationships())
    return no_content()
