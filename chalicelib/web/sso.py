"""SAML single sign-on in the UI (``chalicelib.saml`` has the rules; this is the HTTP side).

* ``GET /users/saml/metadata``: the SP metadata (its URL is the SP entity id).
* ``GET /app/sign-in/sso?next=``: SP-initiated sign-in: records an AuthnRequest for this
  browser (cookie ``tfe_registry_saml``, ``SameSite=None; Secure``, path ``/users/saml``:
  it must come back with the IdP's cross-site POST) and sends the browser to the IdP.
* ``POST /users/saml/auth``: the ACS (HTTP-POST binding). It takes the IdP's cross-site form
  POST without the UI's CSRF token: the signed Response is the proof. A Response checked in
  every way opens a session of ``sso-api-token-session-timeout`` seconds; any refusal is a
  4xx page saying what went wrong and what to tell the administrator, logged (never the
  Response itself). With ``debug`` and a site admin signing in, the browser goes first to
  ``GET /app/sign-in/sso/debug``: what the sign-in received (``saml.service.session_opened``).
* Sign-out (``routes.sign_out``) of a session SAML opened: ``single_logout`` gives the IdP's
  single logout URL with a LogoutRequest, ``signed_out`` the page going on to it.

The saml room's modules are imported by the handlers that use them
(lxml and signxml only when a Response arrives): the function's other pages skip them.
"""

from __future__ import annotations

import logging

from chalice import Blueprint, Response

from chalicelib.core.api.openapi import Param, Reply
from chalicelib.core.auth import hash_token
from chalicelib.saml import config as saml_config
from chalicelib.saml.errors import SamlRefused
from chalicelib.web import session
from chalicelib.web.view import WebCtx, error_page, page, redirect, safe_next

log = logging.getLogger("registry.web.sso")

bp = Blueprint(__name__)

METADATA_XML = "application/samlmetadata+xml"
REFUSED = (Reply(400), Reply(403), Reply(404), Reply(422))
TO_IDP = Reply(303, description="to the identity provider's single sign-on URL")
DEBUG_PATH = "/app/sign-in/sso/debug"


@page(
    bp,
    saml_config.METADATA_PATH,
    success=(Reply(200, schema={"type": "string"}, media_type=METADATA_XML),),
)
def saml_metadata(ctx: WebCtx) -> Response:
    """The SP metadata an identity provider imports."""
    from chalicelib.saml import metadata

    body = metadata.sp_metadata(saml_config.load(ctx.base_url))
    return Response(
        body=body,
        status_code=200,
        headers={"Content-Type": METADATA_XML + "; charset=utf-8", "Cache-Control": "no-store"},
    )


def refused(ctx: WebCtx, refusal: SamlRefused) -> Response:
    log.warning("saml sign-in refused: %s", refusal.log_detail)
    return ctx.render(
        "sso_error.html",
        refusal.status,
        code=refusal.status,
        message=refusal.message,
        advice=refusal.advice,
    )


@page(
    bp,
    "/app/sign-in/sso",
    query=(Param("next", "the page to open after signing in"),),
    success=(TO_IDP, *REFUSED),
)
def start_sso(ctx: WebCtx) -> Response:
    """Sign in with SSO: an AuthnRequest by HTTP-Redirect to ``sso-endpoint-url``."""
    from chalicelib.saml import authn

    target = safe_next(ctx.query.get("next"))
    secret = session.cookies(ctx.request).get(authn.BROWSER_COOKIE)
    if secret is None or authn.browser_hash(secret) is None:
        secret = authn.new_browser_secret()
    try:
        location = authn.start(saml_config.load(ctx.base_url), secret, target)
    except SamlRefused as refusal:
        return refused(ctx, refusal)
    return redirect(location, 303, cookies=[authn.browser_cookie(secret)])


@page(
    bp,
    saml_config.ACS_PATH,
    ("POST",),
    form=True,
    success=(Reply(303, description="signed in: to the page asked for"), *REFUSED),
)
def assertion_consumer(ctx: WebCtx) -> Response:
    """The ACS: a SAML Response from the identity provider signs the person in."""
    from chalicelib.saml import authn, service  # service: the Response checks (lxml, signxml)

    form = ctx.form()
    browser = session.cookies(ctx.request).get(authn.BROWSER_COOKIE)
    config = saml_config.load(ctx.base_url)
    try:
        signed = service.sign_in(
            config,
            form.get("SAMLResponse") or "",
            browser,
            form.get("RelayState") or "",
        )
    except SamlRefused as refusal:
        return refused(ctx, refusal)
    _, secret = session.start_for_user(signed.user_id, signed.session_seconds)
    session.end(ctx.request)
    target = safe_next(signed.return_to)
    posted = form.get("SAMLResponse") or ""
    if service.session_opened(config, hash_token(secret), signed, posted, target):
        target = DEBUG_PATH
    return redirect(
        target,
        cookies=[
            session.set_cookie(session.COOKIE_NAME, secret, signed.session_seconds),
            session.clear_cookie(session.CSRF_COOKIE),
        ],
    )


def _session_hash(ctx: WebCtx) -> str | None:
    secret = session.cookies(ctx.request).get(session.COOKIE_NAME)
    return hash_token(secret) if secret else None


def single_logout(ctx: WebCtx) -> str | None:
    """For the sign-out page, before it ends the session: the IdP's single logout URL (with
    a LogoutRequest) when SAML opened this session, else None. Costs nothing while SAML is
    off."""
    session_hash = _session_hash(ctx)
    if session_hash is None or not saml_config.enabled():
        return None
    from chalicelib.saml import service

    return service.single_logout(saml_config.load(ctx.base_url), session_hash)


def signed_out(ctx: WebCtx, location: str, cleared_cookie: str) -> Response:
    """The sign-out answer for a session SAML opened: a page that goes on to the IdP's
    single logout ``location`` (a redirect would be blocked by the sign-out form's
    ``form-action 'self'``)."""
    response = ctx.render("sso_signed_out.html", location=location)
    response.headers["Set-Cookie"] = cleared_cookie
    response.headers["Cache-Control"] = "no-store"
    return response


@page(
    bp,
    DEBUG_PATH,
    success=(Reply(200, description="what the sign-in received"), Reply(404)),
)
def sso_debug(ctx: WebCtx) -> Response:
    """With the ``debug`` setting: after a site admin signs in through SAML, the Response
    received and the values taken from it (kept server-side for a few minutes, for that
    session's user only: a 404 page for anyone else)."""
    from chalicelib.saml import service

    session_hash = _session_hash(ctx)
    principal = ctx.principal
    record = None
    if session_hash and principal is not None and principal.is_user:
        record = service.debug_record(session_hash, principal.id)
    if record is None:
        return error_page(ctx.request, 404)
    return ctx.render("sso_debug.html", record=record, next=safe_next(record.get("next")))
