"""The provider pages (read only): ``/app/<org>/registry/providers`` (the organization's
private providers) and a provider's page at its address,
``/app/<org>/registry/providers/private/<namespace>/<name>`` and ``…/<version>`` (its
versions and their checks, the version's platforms, the signing key, the usage snippet).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from chalice import Blueprint, Response

from chalicelib.core.api.errors import Conflict, Unprocessable
from chalicelib.core.api.openapi import Param, Reply
from chalicelib.web.view import SignedIn, WebCtx, page, page_number, posted, redirect

if TYPE_CHECKING:
    from chalicelib.providers.service import ProviderRef

# The provider registry's services and these pages' gathering (web.providers.pages) load with
# the first provider page: WebFunction serves the module pages and sign-in too, whose cold
# start need none of them (each handler imports them).

bp = Blueprint(__name__)

PROVIDERS = "/app/{organization}/registry/providers"
PROVIDER = PROVIDERS + "/private/{namespace}/{name}"  # web.providers.pages.REGISTRY
RETRY = PROVIDER + "/{version}/platforms/{os}/{arch}/retry"
RETRIED = Param("retried", "the platform (os/arch) whose check was just started again")
REFUSED = (Reply(303), Reply(409), Reply(422))


@page(
    bp,
    PROVIDERS,
    auth=SignedIn,
    query=(Param("page", "page number (from 1)", {"type": "integer", "minimum": 1}),),
)
def providers(ctx: WebCtx, organization: str) -> Response:
    """An organization's private providers, 20 a page."""
    from chalicelib.web.providers import pages

    principal = ctx.principal_or_sign_in()
    number = page_number(ctx.query.get("page"))
    listing = pages.provider_list(principal, organization, number)
    return ctx.render("providers/providers.html", listing=listing)


@page(bp, PROVIDER, auth=SignedIn)
def provider(ctx: WebCtx, organization: str, namespace: str, name: str) -> Response:
    """A provider's page at its latest verified version (the newest one if none is)."""
    return _provider_page(ctx, organization, namespace, name, None)


@page(bp, PROVIDER + "/{version}", auth=SignedIn, query=(RETRIED,))
def provider_version(
    ctx: WebCtx, organization: str, namespace: str, name: str, version: str
) -> Response:
    """A provider's page at one version."""
    return _provider_page(ctx, organization, namespace, name, version)


def _provider_page(
    ctx: WebCtx, organization: str, namespace: str, name: str, version: str | None
) -> Response:
    from chalicelib.providers.service import ProviderRef
    from chalicelib.web.providers import pages

    principal = ctx.principal_or_sign_in()
    ref = ProviderRef(organization, pages.REGISTRY, namespace, name)
    view = pages.provider_page(principal, ref, version, ctx.base_url)
    # Named only when it is a platform of the page: the query is the caller's to write.
    shown = {f"{p.os}/{p.arch}" for p in view.platforms}
    retried = ctx.query.get("retried")
    return ctx.render(
        "providers/provider.html", view=view, retried=retried if retried in shown else None
    )


@page(bp, RETRY, auth=SignedIn)
def confirm_retry(
    ctx: WebCtx, organization: str, namespace: str, name: str, version: str, os: str, arch: str
) -> Response:
    """Check this platform's archive again? (publishers; a page of its own)"""
    from chalicelib.providers.service import ProviderRef
    from chalicelib.web.providers import pages

    ref = ProviderRef(organization, pages.REGISTRY, namespace, name)
    pages.retry_target(ctx.principal_or_sign_in(), ref, version, os, arch)
    return _confirm(ctx, ref, version, os, arch)


@page(bp, RETRY, ("POST",), auth=SignedIn, form=True, success=REFUSED)
def retry(
    ctx: WebCtx, organization: str, namespace: str, name: str, version: str, os: str, arch: str
) -> Response:
    """Check the platform's uploaded archive again, as ``POST …/platforms/:os/:arch/actions/
    retry``; the refusal (verified, nothing uploaded) on the confirmation page."""
    from chalicelib.providers import service as providers_service
    from chalicelib.providers.service import ProviderRef
    from chalicelib.web.providers import pages

    ref = ProviderRef(organization, pages.REGISTRY, namespace, name)
    form = posted(ctx)
    if isinstance(form, Response):
        return form
    principal = ctx.principal_or_sign_in()
    try:
        providers_service.retry_platform(principal, ref, version, os, arch)
    except (Conflict, Unprocessable) as refused:
        return _confirm(ctx, ref, version, os, arch, refused.status, refused.detail)
    where = pages.provider_path(organization, namespace, name, version)
    return redirect(f"{where}?retried={os}/{arch}")


def _confirm(
    ctx: WebCtx,
    ref: ProviderRef,
    version: str,
    os_: str,
    arch: str,
    status: int = 200,
    error: str | None = None,
) -> Response:
    from chalicelib.web.providers import pages

    return ctx.render(
        "publishing/confirm.html",
        status,
        title=f"Check {os_}/{arch} of {ref.name} {version} again?",
        question=f"Check the uploaded archive of {os_}/{arch} of version {version} again "
        "(and the version's SHA256SUMS signature, if it is not verified)? Do this when its "
        "check failed for a reason since fixed, or it stays pending with its files uploaded.",
        action=pages.retry_path(ref, version, os_, arch),
        button="Check again",
        cancel=pages.provider_path(ref.organization, ref.namespace, ref.name, version),
        fields=(),
        danger=False,
        error=error,
    )
