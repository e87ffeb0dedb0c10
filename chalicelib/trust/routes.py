"""HTTP routes of the organization's publishing policy (``/api/v2``): a JSON:API singleton
``registry-policies`` per organization, read by its members, changed by its owners
(``trust.policy.read_policy`` / ``change_policy`` decide; 404 for anyone else)."""

from __future__ import annotations

from types import ModuleType
from typing import TYPE_CHECKING, Annotated, Any

from chalice import Blueprint

from chalicelib.core.api.access import Bearer
from chalicelib.core.api.http import Ctx, route
from chalicelib.core.api.jsonapi import document, resource, to_one
from chalicelib.core.api.openapi import JsonApi
from chalicelib.core.data.ids import iso
from chalicelib.trust import policy

if TYPE_CHECKING:
    from chalicelib.trust.schemas import UpdatePolicy

bp = Blueprint(__name__)

POLICY = "/api/v2/organizations/{organization_name}/registry-policy"
TYPE = "registry-policies"


def body_models() -> ModuleType:
    """This file's body models, loaded on first use (``core.api.http.typed_body``)."""
    from chalicelib.trust import schemas

    return schemas


def render_policy(shown: policy.Shown) -> dict[str, Any]:
    """The singleton: its id is the organization's name (one policy each)."""
    rule = shown.policy
    attributes = {
        "block-severity": rule.block_severity,
        "ignored-rules": sorted(rule.ignored_rules),
        "require-readme": rule.require_readme,
        # Whether a new version waits for its scan before it is served (derived).
        "holds-versions": rule.holds_versions,
        "updated-at": iso(shown.updated_at),
    }
    relationships = {"organization": to_one("organizations", shown.organization)}
    return resource(TYPE, shown.organization, attributes, relationships=relationships)


@route(bp, POLICY, auth=Bearer, methods=("GET",), summary="Show the publishing policy")
def show_policy(ctx: Ctx, organization_name: str):
    """The organization's publishing policy (its members; the defaults until one is saved)."""
    return document(render_policy(policy.read_policy(ctx.user, organization_name)))


@route(bp, POLICY, auth=Bearer, methods=("PATCH",), summary="Update the publishing policy")
def update_policy(
    ctx: Ctx,
    organization_name: str,
    attrs: Annotated[UpdatePolicy, JsonApi(TYPE, type_check="lenient", required=False)],
):
    """Change the organization's publishing policy (its owners): which scan results hold a
    new version back (``quarantined``) until an owner releases it."""
    shown = policy.change_policy(
        ctx.user,
        organization_name,
        block_severity=attrs.block_severity,
        ignored_rules=attrs.ignored_rules,
        require_readme=attrs.require_readme,
    )
    return document(render_policy(shown))
