"""The provider pages (read only): ``/app/<org>/registry/providers`` (the organization's
private providers) and a provider's page at its address,
``/app/<org>/registry/providers/private/<namespace>/<name>`` and ``…/<version>`` (its
versions and their checks, the version's platforms, the signing key, the usage snippet).
"""

from __future__ import annotations

from chalice import Blueprint, Response

from chalicelib.core.api.openapi import Param
from chalicelib.providers.service import ProviderRef
from chalicelib.web import pages as module_pages
from chalicelib.web.providers import pages
from chalicelib.web.view import WebCtx, page

bp = Blueprint("chalicelib.web.providers")

PROVIDERS = "/app/{organization}/registry/providers"
PROVIDER = PROVIDERS + "/" + pages.REGISTRY + "/{namespace}/{name}"


@page(
    bp, PROVIDERS, query=(Param("page", "page number (from 1)", {"type": "integer", "minimum": 1}),)
)
def providers(ctx: WebCtx, organization: str) -> Response:
    """An organization's private providers, 20 a page."""
    principal = ctx.principal_or_sign_in()
    number = module_pages.page_number(ctx.query.get("page"))
    listing = pages.provider_list(principal, organization, number)
    return ctx.render("providers/providers.html", listing=listing)


@page(bp, PROVIDER)
def provider(ctx: WebCtx, organization: str, namespace: str, name: str) -> Response:
    """A provider's page at its newest verified version (the newest one if none is)."""
    return _provider_page(ctx, organization, namespace, name, None)


@page(bp, PROVIDER + "/{version}")
def provider_version(
    ctx: WebCtx, organization: str, namespace: str, name: str, version: str
) -> Response:
    """A provider's page at one version."""
    return _provider_page(ctx, organization, namespace, name, version)


def _provider_page(
    ctx: WebCtx, organization: str, namespace: str, name: str, version: str | None
) -> Response:
    principal = ctx.principal_or_sign_in()
    ref = ProviderRef(organization, pages.REGISTRY, namespace, name)
    view = pages.provider_page(principal, ref, version, ctx.base_url)
    return ctx.render("providers/provider.html", view=view)
