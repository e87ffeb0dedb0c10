"""``terraform login``'s two endpoints (the protocol itself is in ``oauth.py``).

* ``GET /app/oauth/authorize``: a UI page. A bad request is a 400 page that never redirects;
  without a session the browser signs in first and comes back here; signed in with a user
  token, the consent page (``authorize.html``); with a team token, a page that says why that
  cannot work.
* ``POST /app/oauth/authorize``: the consent form (session CSRF token). Approve sends the
  browser back to terraform's loopback ``redirect_uri`` with ``code`` and ``state``; Cancel
  with ``error=access_denied``.
* ``POST /oauth/token``: terraform exchanges the code (form-encoded, a public client: no
  credentials) for ``{"access_token": …, "token_type": "bearer"}``; errors are OAuth's JSON
  ``{"error", "error_description"}``, never a JSON:API document.
"""

from __future__ import annotations

import base64
import binascii
import json
import logging
from typing import Any
from urllib.parse import quote, unquote, urlencode

from chalice import Blueprint, Response

from chalicelib.accounts import signin
from chalicelib.accounts.users import service as users_service
from chalicelib.core.api.access import Public
from chalicelib.core.api.errors import ApiError
from chalicelib.core.api.http import Ctx, route
from chalicelib.core.api.openapi import Param, Payload, Reply
from chalicelib.web import oauth, session
from chalicelib.web.view import (
    FORM,
    PublicPage,
    WebCtx,
    csrf_refused,
    error_page,
    form_fields,
    page,
    redirect,
)

log = logging.getLogger("registry.web")

bp = Blueprint(__name__)

AUTHORIZE_QUERY = (
    Param("response_type", "must be `code`", required=True),
    Param("client_id", f"must be `{oauth.CLIENT_ID}`", required=True),
    Param("redirect_uri", "terraform's loopback listener, `http://localhost:<port>/login`"),
    Param("state", "echoed back to the redirect_uri", required=True),
    Param("code_challenge", "BASE64URL(SHA-256(code_verifier))", required=True),
    Param("code_challenge_method", "must be `S256`", required=True),
)
SEE_OTHER = Reply(303, description="to terraform's redirect_uri, or to the sign-in page")
NOT_SIGNED_IN = Reply(303, description="to the sign-in page, then back here")
JSON = "application/json"
STRING = {"type": "string"}
TOKEN_SCHEMA = {
    "type": "object",
    "required": ["access_token", "token_type"],
    "properties": {"access_token": STRING, "token_type": {"const": "bearer"}},
}
OAUTH_ERROR_SCHEMA = {
    "type": "object",
    "required": ["error"],
    "properties": {"error": STRING, "error_description": STRING},
}
NO_STORE = {"Content-Type": JSON, "Cache-Control": "no-store", "Pragma": "no-cache"}


def _refused(ctx: WebCtx, why: oauth.AuthorizationRefused) -> Response:
    return error_page(ctx.request, 400, f"This terraform login request is not valid: {why}")


def _consent(ctx: WebCtx, request: oauth.AuthorizationRequest) -> Response:
    from chalicelib.web.pages import cli_configuration  # the consent page's own, at first use

    principal = ctx.principal_or_sign_in()
    if not principal.is_user:
        return ctx.render("authorize.html", 403, team_token=True, host=ctx.host)
    response = ctx.render(
        "authorize.html",
        team_token=False,
        request=request,
        action=oauth.AUTHZ_PATH,
        host=ctx.host,
        username=users_service.get_user(principal.id).username,
        description=oauth.token_description(),
        cli_config=cli_configuration(ctx.base_url),
    )
    # Chromium applies form-action to the redirect that follows the POST too: allow exactly
    # terraform's listener besides this origin.
    policy = response.headers["Content-Security-Policy"]
    assert isinstance(policy, str)  # set once, by our own page response
    response.headers["Content-Security-Policy"] = policy.replace(
        "form-action 'self'", f"form-action 'self' {request.origin}"
    )
    return response


@page(
    bp,
    oauth.AUTHZ_PATH,
    auth=PublicPage,
    query=AUTHORIZE_QUERY,
    success=(Reply(200, STRING), NOT_SIGNED_IN),
)
def authorize(ctx: WebCtx) -> Response:
    """terraform login's authorization endpoint: the consent page."""
    try:
        request = oauth.authorization_request(ctx.query)
    except oauth.AuthorizationRefused as why:
        return _refused(ctx, why)
    return _consent(ctx, request)


@page(bp, oauth.AUTHZ_PATH, ("POST",), auth=PublicPage, form=True, success=(SEE_OTHER,))
def decide(ctx: WebCtx) -> Response:
    """Approve or cancel a terraform login (the consent page's form)."""
    form = ctx.form()
    try:
        request = oauth.authorization_request(form)
    except oauth.AuthorizationRefused as why:
        return _refused(ctx, why)
    principal = ctx.principal
    if principal is None:  # the session ended while the page was open: sign in, ask again
        again = oauth.AUTHZ_PATH + "?" + urlencode(request.hidden_fields())
        return redirect("/app/sign-in?next=" + quote(again, safe=""))
    if not session.check_csrf(ctx.request, form.get(session.CSRF_FIELD)):
        return csrf_refused(ctx.request)
    if not principal.is_user:
        return ctx.render("authorize.html", 403, team_token=True, host=ctx.host)
    if form.get("decision") != "approve":
        return redirect(
            oauth.redirect_with(request.redirect_uri, error="access_denied", state=request.state)
        )
    code = oauth.issue_code(request, principal)
    log.info("terraform login approved by %s", principal.id)
    return redirect(oauth.redirect_with(request.redirect_uri, code=code, state=request.state))


# ----- the token endpoint ---------------------------------------------------------------------


def _json(status: int, body: dict[str, str]) -> Response:
    return Response(body=json.dumps(body), status_code=status, headers=dict(NO_STORE))


def _oauth_error(error: ApiError) -> Response:
    """What the route wrapper answers for an error the handler did not turn into OAuth's
    shape itself (an unexpected one: a 500)."""
    code = "invalid_request" if 400 <= error.status < 500 else "server_error"
    return _json(error.status, {"error": code, "error_description": str(error)})


def _form(request: Any) -> dict[str, str]:
    """The form's fields; a field sent twice is refused (RFC 6749 section 3.2)."""
    fields = form_fields(request)
    repeated = sorted(name for name, values in fields.items() if len(values) > 1)
    if repeated:
        raise oauth.OAuthError("invalid_request", f"{repeated[0]} is given more than once")
    return {name: values[0] for name, values in fields.items()}


def _basic_client_id(header: str | None) -> str | None:
    """The client id of an ``Authorization: Basic`` header (RFC 6749 section 2.3.1)."""
    scheme, _, encoded = (header or "").partition(" ")
    if scheme.lower() != "basic":
        return None
    try:
        decoded = base64.b64decode(encoded.strip(), validate=True).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError):
        return None
    return unquote(decoded.partition(":")[0]) or None


@route(
    bp,
    oauth.TOKEN_PATH,
    ("POST",),
    auth=Public,
    render_error=_oauth_error,
    content_types=[FORM],
    body=Payload(
        (FORM,), "grant_type=authorization_code, code, client_id, redirect_uri, code_verifier"
    ),
    success=(
        Reply(200, TOKEN_SCHEMA, {"Cache-Control": "no-store"}, "a new user API token", JSON),
        Reply(400, OAUTH_ERROR_SCHEMA, description="an OAuth error", media_type=JSON),
        Reply(401, OAUTH_ERROR_SCHEMA, description="invalid_client", media_type=JSON),
    ),
    tag="web",
)
def token(ctx: Ctx) -> Response:
    """terraform login's token endpoint: exchange an authorization code for a user API token.

    Form-encoded (a public client: no client secret), PKCE required; the code is single-use
    and expires a minute after it was issued."""
    try:
        form = _form(ctx.request)
        basic = _basic_client_id(ctx.request.headers.get("authorization"))
        secret = oauth.exchange(form, basic)
    except oauth.OAuthError as refused:
        meta = {**oauth.TERRAFORM_LOGIN, "error": refused.error}
        signin.record_refused("", None, signin.TOKEN, meta=meta)
        return _json(refused.status, refused.to_dict())
    return _json(200, {"access_token": secret, "token_type": "bearer"})
