"""HTTP routes of publishing from VCS: publish (both paths), resync, retry, a new webhook
secret, and the commits of a module's repository. Their own route group, so the plain
registry routes never load the VCS machinery (git, the VCS hosts' APIs, KMS sealing)."""

from __future__ import annotations

from types import ModuleType
from typing import TYPE_CHECKING, Annotated

from chalice import Blueprint

from chalicelib.core.api.access import Bearer
from chalicelib.core.api.http import Ctx, route
from chalicelib.core.api.jsonapi import document, resource
from chalicelib.core.api.openapi import JsonApi
from chalicelib.modules.paths import MODULE, ORG_MODULES
from chalicelib.modules.publishing import service as publishing
from chalicelib.modules.render import render_module, render_vcs_repo
from chalicelib.modules.service import ModuleRef

if TYPE_CHECKING:
    from chalicelib.modules.publishing.schemas import PublishAttributes

bp = Blueprint(__name__)


def body_models() -> ModuleType:
    """This file's body models, loaded on first use (``core.api.http.typed_body``)."""
    from chalicelib.modules.publishing import schemas

    return schemas


Publish = Annotated["PublishAttributes", JsonApi("registry-modules")]
COMMITS_ERRORS = {502: "the VCS host failed or refused to list the commits"}
NO_ADDRESS = {503: "no public address is configured for the webhook (REGISTRY_PUBLIC_URL)"}


def _publish(ctx: Ctx, organization: str | None, attrs: PublishAttributes):
    module, rights, secret = publishing.publish(ctx.user, organization, attrs)
    rendered = render_module(module, rights, ctx.base_url)
    # Shown once, like a token: the VCS host signs webhook deliveries with it.
    rendered["attributes"]["vcs-repo"]["webhook-secret"] = secret
    return document(rendered, status=201)


@route(bp, ORG_MODULES + "/vcs", auth=Bearer, methods=("POST",), errors=NO_ADDRESS)
def publish_from_vcs(ctx: Ctx, organization_name: str, attrs: Publish):
    return _publish(ctx, organization_name, attrs)


@route(
    bp,
    "/api/v2/registry-modules",
    auth=Bearer,
    methods=("POST",),
    summary="Publish from VCS (deprecated path)",
    errors=NO_ADDRESS,
)
def publish_from_vcs_deprecated(ctx: Ctx, attrs: Publish):
    """The organization is the one the oauth-token-id belongs to."""
    return _publish(ctx, None, attrs)


def _commits(ctx: Ctx, ref: ModuleRef):
    commits = publishing.list_commits(ctx.user, ref)
    return document([resource("commits", c["sha"], c) for c in commits])


@route(bp, MODULE + "/commits", auth=Bearer, errors=COMMITS_ERRORS)
def commits(
    ctx: Ctx, organization_name: str, registry_name: str, namespace: str, name: str, provider: str
):
    return _commits(ctx, ModuleRef(organization_name, registry_name, namespace, name, provider))


@route(
    bp,
    "/api/v2/registry-modules/{module_ref}/{name}/{provider}/commits",
    auth=Bearer,
    errors=COMMITS_ERRORS,
    summary="Commits (deprecated path)",
)
def commits_deprecated(ctx: Ctx, module_ref: str, name: str, provider: str):
    """pytfe's path: ``module_ref`` is the organization name."""
    return _commits(ctx, ModuleRef(module_ref, "private", module_ref, name, provider))


@route(
    bp,
    "/api/v2/registry-modules/{module_ref}/actions/resync",
    auth=Bearer,
    methods=("POST",),
    success=200,
)
def resync_module(ctx: Ctx, module_ref: str):
    module, rights = publishing.resync(ctx.user, module_ref)
    return document(render_module(module, rights, ctx.base_url))


@route(
    bp,
    "/api/v2/registry-modules/{module_ref}/actions/retry",
    auth=Bearer,
    methods=("POST",),
    success=200,
)
def retry_module(ctx: Ctx, module_ref: str):
    module, rights = publishing.retry(ctx.user, module_ref)
    return document(render_module(module, rights, ctx.base_url))


@route(
    bp,
    "/api/v2/registry-modules/{module_ref}/actions/regenerate-webhook-secret",
    auth=Bearer,
    methods=("POST",),
    success=200,
    errors=NO_ADDRESS,
)
def regenerate_webhook_secret(ctx: Ctx, module_ref: str):
    module, secret = publishing.regenerate_webhook_secret(ctx.user, module_ref)
    attributes = {"webhook-url": render_vcs_repo(module, ctx.base_url)["webhook-url"]}
    return document(resource("webhook-secrets", module.id, {**attributes, "secret": secret}))
