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
  single logout URL with a LogoutRequest (recorded for this browser's ``tfe_registry_saml``
  cookie), ``signed_out`` the page going on to it.
* ``GET /users/saml/slo``: single logout (HTTP-Redirect; ``saml.logout`` has the rules).
  The IdP's LogoutResponse to our sign-out shows the signed-out page; the IdP's own
  LogoutRequest (the person signed out elsewhere) ends every UI session SAML opened for
  that NameID and sends the browser back to the IdP with our LogoutResponse. Any refusal is
  a 4xx page that ends nothing; nothing of the query (message, signature) is logged.

The SP's URLs (entity id, ACS, single logout) are on the configured public address
(``core.api.links.link_base_url``), never the request's host: they are what the identity
provider is given, and what a Response must be addressed to (an assertion issued for another
service provider is not accepted by asking with its host). Without a configured address SAML
sign-in is refused with a page saying so.

The saml room's modules are imported by the handlers that use them
(lxml and signxml only when a Response arrives): the function's other pages skip them.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping

from chalice import Blueprint, Response

from chalicelib.accounts import signin
from chalicelib.core.api.links import NoPublicAddress, link_base_url
from chalicelib.core.api.openapi import Param, Reply
from chalicelib.core.auth import hash_token
from chalicelib.saml import config as saml_config
from chalicelib.saml.errors import SamlRefused
from chalicelib.web import session
from chalicelib.web.view import (
    NEXT,
    PublicPage,
    WebCtx,
    add_cookie,
    error_page,
    page,
    redirect,
    safe_next,
)

log = logging.getLogger("registry.web.sso")

bp = Blueprint(__name__)

METADATA_XML = "application/samlmetadata+xml"
REFUSED = (Reply(400), Reply(403), Reply(404), Reply(422))
TO_IDP = Reply(303, description="to the identity provider's single sign-on URL")
DEBUG_PATH = "/app/sign-in/sso/debug"


def _config() -> saml_config.SamlConfig:
    """The SAML settings, the SP's URLs on the configured address (``NoPublicAddress``
    without one: an error page saying so)."""
    return saml_config.load(link_base_url("SAML endpoints"))


@page(
    bp,
    saml_config.METADATA_PATH,
    auth=PublicPage,
    success=(Reply(200, schema={"type": "string"}, media_type=METADATA_XML),),
)
def saml_metadata(ctx: WebCtx) -> Response:
    """The SP metadata an identity provider imports."""
    from chalicelib.saml import metadata

    body = metadata.sp_metadata(_config())
    return Response(
        body=body,
        status_code=200,
        headers={"Content-Type": METADATA_XML + "; charset=utf-8", "Cache-Control": "no-store"},
    )


def refused(
    ctx: WebCtx, refusal: SamlRefused, what: str = "sign-in", heading: str | None = None
) -> Response:
    log.warning("saml %s refused: %s", what, refusal.log_detail)
    return ctx.render(
        "sso_error.html",
        refusal.status,
        code=refusal.status,
        message=refusal.message,
        advice=refusal.advice,
        heading=heading,
    )


@page(
    bp,
    "/app/sign-in/sso",
    auth=PublicPage,
    query=(NEXT,),
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
        location = authn.start(_config(), secret, target)
    except SamlRefused as refusal:
        return refused(ctx, refusal)
    return redirect(location, 303, cookies=[authn.browser_cookie(secret)])


@page(
    bp,
    saml_config.ACS_PATH,
    ("POST",),
    auth=PublicPage,
    form=True,
    success=(Reply(303, description="signed in: to the page asked for"), *REFUSED),
)
def assertion_consumer(ctx: WebCtx) -> Response:
    """The ACS: a SAML Response from the identity provider signs the person in."""
    from chalicelib.saml import authn, service  # service: the Response checks (lxml, signxml)

    form = ctx.form()
    browser = session.cookies(ctx.request).get(authn.BROWSER_COOKIE)
    config = _config()
    try:
        signed = service.sign_in(
            config,
            form.get("SAMLResponse") or "",
            browser,
            form.get("RelayState") or "",
        )
    except SamlRefused as refusal:
        signin.record_refused("", None, signin.SSO, meta={"reason": refusal.message})
        return refused(ctx, refusal)
    _, secret = session.start_for_user(signed.user_id, signed.session_seconds, method=signin.SSO)
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


def single_logout(ctx: WebCtx) -> tuple[str, str] | None:
    """For the sign-out page, before it ends the session: the IdP's single logout URL (with
    a LogoutRequest) and the browser cookie its LogoutResponse must come back with, when
    SAML opened this session; else None. Costs nothing while SAML is off."""
    session_hash = _session_hash(ctx)
    if session_hash is None or not saml_config.enabled():
        return None
    from chalicelib.saml import authn, service

    secret = session.cookies(ctx.request).get(authn.BROWSER_COOKIE)
    if secret is None or authn.browser_hash(secret) is None:
        secret = authn.new_browser_secret()
    try:
        config = _config()
    except NoPublicAddress:  # the address went away: sign out here only
        return None
    location = service.single_logout(config, session_hash, secret)
    return (location, authn.browser_cookie(secret)) if location else None


def signed_out(ctx: WebCtx, location: str | None, *cookies: str, note: str = "") -> Response:
    """The signed-out page: for a session SAML opened, one that goes on to the IdP's single
    logout ``location`` (a redirect would be blocked by the sign-out form's
    ``form-action 'self'``); without ``location``, the end of single logout."""
    response = ctx.render("sso_signed_out.html", location=location, note=note)
    for cookie in cookies:
        add_cookie(response, cookie)
    response.headers["Cache-Control"] = "no-store"
    return response


def _slo_param(name: str, description: str, bound: int) -> Param:
    """A single logout parameter whose bound ``saml.logout`` checks (with its own page)."""
    schema = {"type": "string", "maxLength": bound}
    return Param(name, description, schema, handler_checks=True)


SLO_QUERY = (
    _slo_param("SAMLRequest", "the IdP's LogoutRequest (DEFLATE, base64)", saml_config.MAX_ENCODED),
    _slo_param(
        "SAMLResponse",
        "the IdP's LogoutResponse to our sign-out (DEFLATE, base64)",
        saml_config.MAX_ENCODED,
    ),
    _slo_param("RelayState", "echoed back to the IdP", saml_config.MAX_RELAY),
    Param("SigAlg", "the signature algorithm of a signed message"),
    _slo_param("Signature", "the IdP's signature of the query string", saml_config.MAX_SIGNATURE),
)


@page(
    bp,
    saml_config.SLO_PATH,
    auth=PublicPage,
    query=SLO_QUERY,
    success=(
        Reply(200, description="signed out"),
        Reply(303, description="signed out: to the IdP with our LogoutResponse"),
        *REFUSED,
    ),
)
def single_logout_service(ctx: WebCtx) -> Response:
    """Single logout (HTTP-Redirect): the IdP's answer to our sign-out, or its own request
    to end the person's sessions here."""
    from chalicelib.saml import authn, logout  # the checks: lxml, signxml, cryptography

    params: Mapping[str, str] = ctx.request.query_params or {}
    config = _config()
    heading = "Single logout failed"
    try:
        if not config.enabled:
            raise SamlRefused("Single sign-on is not enabled on this registry.", status=404)
        if "SAMLRequest" in params:
            ended = logout.idp_logout(config, params)
        elif "SAMLResponse" in params:
            browser = session.cookies(ctx.request).get(authn.BROWSER_COOKIE)
            confirmed = logout.answered(config, params, browser)
            note = "" if confirmed else logout.NOT_CONFIRMED
            return signed_out(ctx, None, authn.browser_cookie_cleared(), note=note)
        else:
            raise SamlRefused("This address takes SAML logout messages only.", status=400)
    except SamlRefused as refusal:
        return refused(ctx, refusal, "single logout", heading)
    for session_hash in ended.session_hashes:
        session.end_session(session_hash)
    log.info("saml single logout by the IdP: %d sessions ended", len(ended.session_hashes))
    # This browser's cookie goes too when its session was one of them.
    ours = _session_hash(ctx) in ended.session_hashes
    cookies = [session.clear_cookie(session.COOKIE_NAME)] if ours else []
    if ended.location is None:
        return signed_out(ctx, None, *cookies)
    return redirect(ended.location, 303, cookies=cookies)


@page(
    bp,
    DEBUG_PATH,
    auth=PublicPage,
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
