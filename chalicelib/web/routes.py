"""The web UI's pages: one short handler each (gather through ``pages``, render a template).

URLs (TFE's own UI uses the same shapes): ``/`` sends the browser to the organizations or to
the sign-in page; ``/app/sign-in``, ``/app/sign-out`` (POST), ``/app/organizations``,
``/app/<org>/registry/modules`` (search, provider filter, pages) and the module page at the
module's address, ``/app/<org>/registry/modules/<registry>/<namespace>/<name>/<provider>``
and ``…/<version>``, ``/app/<org>/registry/campaigns`` (the upgrade campaigns). Assets:
``/app/static/<name>.<content hash>.<ext>``.
"""

from __future__ import annotations

from urllib.parse import quote

from chalice import Blueprint, Response

from chalicelib.accounts import memberships, signin, twofactor
from chalicelib.core.api.errors import NotFound, Unauthorized, Unprocessable
from chalicelib.core.api.openapi import Param, Reply
from chalicelib.modules.downloads.bounds import MAX_CURSOR
from chalicelib.saml import config as saml_config
from chalicelib.web import session, sso
from chalicelib.web.view import (
    NEXT,
    THROTTLED,
    PublicPage,
    SignedIn,
    WebCtx,
    assets,
    csrf_refused,
    page,
    page_number,
    redirect,
    safe_next,
    static_url,
    with_error,
)

bp = Blueprint(__name__)

MODULES = "/app/{organization}/registry/modules"
MODULE = MODULES + "/{registry}/{namespace}/{name}/{provider}"
CAMPAIGNS = "/app/{organization}/registry/campaigns"
SEE_OTHER = (Reply(303, description="to the page asked for or the sign-in page"),)
LIST_QUERY = (
    Param("q", "search in name, provider and namespace"),
    Param("provider", "only modules of this provider"),
    Param("page", "page number (from 1)", {"type": "integer", "minimum": 1}),
)


@page(
    bp,
    "/",
    auth=PublicPage,
    success=(Reply(302, description="to the organizations or the sign-in page"),),
)
def home(ctx: WebCtx) -> Response:
    """The UI's front door: the organizations, or the sign-in page."""
    return redirect("/app/organizations" if ctx.principal else "/app/sign-in", 302)


@page(bp, "/app/sign-in", auth=PublicPage, query=(NEXT,))
def sign_in_form(ctx: WebCtx) -> Response:
    """The sign-in page: a username (or email) and password, or a pasted API token."""
    target = safe_next(ctx.query.get("next"))
    if ctx.principal:
        return redirect(target)
    return ctx.render("sign_in.html", next=target, sso=saml_config.enabled())


@page(bp, "/app/sign-in", ("POST",), auth=PublicPage, form=True, success=SEE_OTHER + (Reply(401),))
def sign_in(ctx: WebCtx) -> Response:
    """Sign in: the token opens a server-side session (cookie ``HttpOnly; Secure; SameSite``).

    Everything the client sent is checked before the session is stored: a row is written
    only when its cookie goes out in this answer. A session the browser already had ends
    (its cookie is replaced)."""
    form = ctx.form()
    target = safe_next(form.get("next"))
    if not session.check_csrf(ctx.request, form.get(session.CSRF_FIELD)):
        return csrf_refused(ctx.request)
    try:
        _, secret = session.start(form.get("token") or "", meta={"client": "web"})
    except Unauthorized as refused:
        signin.record_refused("", None, signin.TOKEN, meta={"client": "web"})
        return ctx.render("sign_in.html", 401, next=target, error=refused.detail)
    return open_session(ctx, target, secret)


def open_session(ctx: WebCtx, target: str, secret: str) -> Response:
    """The answer that opens a new session: a session the browser had ends, its cookie is
    replaced and the pre-sign-in CSRF cookie cleared."""
    session.end(ctx.request)
    return redirect(
        target,
        cookies=[
            session.set_cookie(session.COOKIE_NAME, secret, session.SESSION_SECONDS),
            session.clear_cookie(session.CSRF_COOKIE),
        ],
    )


WRONG_PASSWORD = "wrong username or password"


@page(
    bp,
    "/app/sign-in/password",
    ("POST",),
    auth=PublicPage,
    form=True,
    success=SEE_OTHER + (Reply(401), THROTTLED),
)
def sign_in_with_password(ctx: WebCtx) -> Response:
    """Sign in with a username (or email address) and password (``accounts.signin``: one
    refusal for every reason, throttled per account and per source address); a user with
    two-factor on goes on to the code (``account_routes.second_step``)."""
    form = ctx.form()
    target = safe_next(form.get("next"))
    if not session.check_csrf(ctx.request, form.get(session.CSRF_FIELD)):
        return csrf_refused(ctx.request)
    login = (form.get("login") or "").strip()
    try:
        user = signin.check(login, form.get("password") or "", ctx.source_ip)
    except signin.Throttled as throttled:
        page_ = ctx.render("sign_in.html", next=target, login=login, password_error=str(throttled))
        return with_error(throttled, page_)
    if user is None:
        return ctx.render(
            "sign_in.html", 401, next=target, login=login, password_error=WRONG_PASSWORD
        )
    if twofactor.enabled(user):  # the second step: a code, at /app/sign-in/two-factor
        step = session.start_second_step(user.id, target)
        cookie = session.set_cookie(session.STEP_COOKIE, step, session.STEP_SECONDS)
        return redirect("/app/sign-in/two-factor", cookies=[cookie])
    _, secret = session.start_for_user(user.id, method=signin.PASSWORD)
    return open_session(ctx, target, secret)


@page(
    bp,
    "/app/sign-out",
    ("POST",),
    auth=PublicPage,
    form=True,
    success=SEE_OTHER + (Reply(200, description="signed out: on to the IdP's single logout"),),
)
def sign_out(ctx: WebCtx) -> Response:
    """Sign out: the session ends server-side and its cookie is cleared; a session SAML
    opened goes on to the IdP's single logout (``sso.single_logout``, ``sso.signed_out``)."""
    if ctx.principal and not session.check_csrf(ctx.request, ctx.form().get(session.CSRF_FIELD)):
        return csrf_refused(ctx.request)
    single_logout = sso.single_logout(ctx) if ctx.principal else None
    session.end(ctx.request)
    cleared = session.clear_cookie(session.COOKIE_NAME)
    if single_logout is not None:
        location, browser_cookie = single_logout
        return sso.signed_out(ctx, location, cleared, browser_cookie)
    return redirect("/app/sign-in", cookies=[cleared])


@page(bp, "/app/organizations", auth=SignedIn)
def organizations(ctx: WebCtx) -> Response:
    """The organizations the caller can read."""
    from chalicelib.web import pages  # the module pages' gathering: at first use

    principal = ctx.principal_or_sign_in()
    return ctx.render("organizations.html", organizations=pages.organizations(principal))


@page(bp, MODULES, auth=SignedIn, query=LIST_QUERY)
def modules(ctx: WebCtx, organization: str) -> Response:
    """An organization's modules: search, provider filter, pages."""
    from chalicelib.web import pages  # the module pages' gathering: at first use

    principal = ctx.principal_or_sign_in()
    query = ctx.query
    listing = pages.module_list(
        principal,
        organization,
        (query.get("q") or "").strip(),
        (query.get("provider") or "").strip(),
        page_number(query.get("page")),
    )
    return ctx.render("modules.html", listing=listing)


@page(
    bp,
    CAMPAIGNS,
    auth=SignedIn,
    query=(
        Param(
            "after",
            "the next page's cursor (the page's link gives it)",
            {"type": "string", "maxLength": MAX_CURSOR},
        ),
    ),
)
def campaigns(ctx: WebCtx, organization: str) -> Response:
    """The organization's upgrade campaigns: its modules with consumers on deprecated or
    revoked versions, the most urgent first (owners and manage-modules teams; 404 else)."""
    from chalicelib.web import pages  # the module pages' gathering: at first use

    principal = ctx.principal_or_sign_in()
    listing = pages.campaign_list(principal, organization, ctx.query.get("after") or None)
    return ctx.render("campaigns.html", listing=listing)


@page(bp, MODULE, auth=SignedIn, query=(Param("version", "open this version"),), success=None)
def module(
    ctx: WebCtx, organization: str, registry: str, namespace: str, name: str, provider: str
) -> Response:
    """A module's page at its latest version (``?version=`` opens another)."""
    from chalicelib.modules.service import ModuleRef
    from chalicelib.web import pages  # the module pages' gathering: at first use

    principal = ctx.principal_or_sign_in()
    ref = ModuleRef(organization, registry, namespace, name, provider)
    if ctx.query.get("version"):
        found = pages.module_page(principal, ref, ctx.query["version"], ctx.base_url)
        return redirect(found.selected.url if found.selected else found.url, 303)
    return ctx.render("module.html", view=pages.module_page(principal, ref, None, ctx.base_url))


@page(bp, MODULE + "/{version}", auth=SignedIn)
def module_version(
    ctx: WebCtx,
    organization: str,
    registry: str,
    namespace: str,
    name: str,
    provider: str,
    version: str,
) -> Response:
    """A module's page at one version."""
    from chalicelib.modules.service import ModuleRef
    from chalicelib.web import pages  # the module pages' gathering: at first use

    principal = ctx.principal_or_sign_in()
    ref = ModuleRef(organization, registry, namespace, name, provider)
    return ctx.render("module.html", view=pages.module_page(principal, ref, version, ctx.base_url))


INVITATION = "/app/invitations/{token}"


def _invitation_page(ctx: WebCtx, token: str, status: int = 200, **extra: object) -> Response:
    """The page of a link: the form of a new person, the accept button of the invited user
    signed in as themselves, the sign-in detour for anyone else holding an existing user's
    link (``refusal``), or 410 for a dead link."""
    found = memberships.open_invitation(token)
    refusal = found.refusal(ctx.principal) if found else None
    if refusal == "another-account":
        status = 403
    elif refusal == "sign-in" and ctx.request.method == "POST":
        status = 401  # the page that asks to sign in, in answer to an accept
    return ctx.render(
        "invitation.html",
        status if found else 410,
        token=token if found else "",
        organization=found.item.organization if found else None,
        existing=found.user.username if found and found.user else None,
        refusal=refusal,
        sign_in="/app/sign-in?next=" + quote(INVITATION.format(token=token), safe=""),
        username=extra.get("username", ""),
        error=extra.get("error"),
    )


@page(
    bp,
    INVITATION,
    auth=PublicPage,
    success=(
        Reply(200),
        Reply(403, description="the invitation is for another account than the signed-in one"),
        Reply(410),
    ),
)
def invitation(ctx: WebCtx, token: str) -> Response:
    """An invitation link: the organization and a form (a username and password for a new
    person; for an existing user, "accept" once signed in as that user, else a link to sign
    in, or a refusal for a session of another user); a used or expired link says so. The
    link signs nobody in."""
    return _invitation_page(ctx, token)


@page(
    bp,
    INVITATION,
    ("POST",),
    auth=PublicPage,
    form=True,
    success=SEE_OTHER
    + (
        Reply(401, description="an existing user's invitation: sign in as that user first"),
        Reply(403, description="the invitation is for another account than the signed-in one"),
        Reply(410),
        Reply(422),
    ),
)
def accept_invitation(ctx: WebCtx, token: str) -> Response:
    """Accept. A new person: the user is created (argon2id password hash), becomes a member,
    is signed in and sent to the organization's modules. An existing user: only while signed
    in as themselves (nothing changes for anyone else), no new session; sent to the
    organization's modules. Nothing changes on a refused form."""
    form = ctx.form()
    if not session.check_csrf(ctx.request, form.get(session.CSRF_FIELD)):
        return csrf_refused(ctx.request)
    found = memberships.open_invitation(token)
    if found is None or found.refusal(ctx.principal) is not None:
        return _invitation_page(ctx, token)
    username = (form.get("username") or "").strip()
    try:
        user = memberships.accept(
            found,
            token,
            ctx.principal,
            username,
            form.get("password") or "",
            form.get("password_again") or "",
        )
    except Unprocessable as refused:
        return _invitation_page(ctx, token, 422, username=username, error=refused.detail)
    if user is None:
        return _invitation_page(ctx, token)
    target = f"/app/{found.item.organization}/registry/modules"
    if found.user is not None:  # accepted in the invited user's own session
        return redirect(target)
    # the new person's new account
    _, secret = session.start_for_user(user.id, method="invitation")
    return open_session(ctx, target, secret)


@page(
    bp,
    "/favicon.ico",
    auth=PublicPage,
    success=(Reply(200, schema={"type": "string"}, media_type="image/svg+xml"),),
)
def favicon(ctx: WebCtx) -> Response:
    """The site's icon where browsers and tools look without a page's ``<link rel="icon">``
    (the same SVG as ``static/favicon.svg``; browsers take the type from the header)."""
    content_type, data = assets()[static_url("favicon.svg").rsplit("/", 1)[1]]
    return Response(
        body=data.decode("utf-8"),
        status_code=200,
        headers={
            "Content-Type": content_type,
            "Cache-Control": "public, max-age=86400",
            "X-Content-Type-Options": "nosniff",
        },
    )


@page(bp, "/app/static/{asset}", auth=PublicPage, success=(Reply(200, schema={"type": "string"}),))
def static_asset(ctx: WebCtx, asset: str) -> Response:
    """A stylesheet or script; its name carries its content hash, so it is cached for good."""
    found = assets().get(asset)
    if found is None:
        raise NotFound(f"no asset {asset!r}")
    content_type, data = found
    return Response(
        body=data.decode("utf-8"),
        status_code=200,
        headers={
            "Content-Type": content_type,
            "Cache-Control": "public, max-age=31536000, immutable",
            "X-Content-Type-Options": "nosniff",
        },
    )
