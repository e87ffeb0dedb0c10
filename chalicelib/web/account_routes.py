"""The pages of sign-in security: password reset by mail, the two-factor second step of a
password sign-in, and the account page that turns two-factor on and off.

* ``/app/password-reset``: a username or email address; the answer is always the same
  ("if an account exists, a mail was sent"), throttled as sign-in is (``accounts.resets``),
  and so is the work: a job on the ingest queue, whose worker finds the account and mails.
  Without SMTP, or without a configured public address for the link (``core.api.links``),
  the page says reset is not available, and why. ``/app/password-reset/<token>``: the
  mailed link, a new password (the same policy), once; a dead link is a 410 page. A reset
  ends the user's browser sessions.
* ``/app/sign-in/two-factor``: after a right password for a user with two-factor on
  (``routes.sign_in_with_password``), a code (or recovery code) finishes signing in; bound
  to the browser by a short-lived cookie (``session.start_second_step``), throttled.
* ``/app/account/two-factor``: set up (a secret, its ``otpauth://`` URI and QR code,
  confirmed with a code; ten recovery codes shown once) and disable (the password or a code).
  Either ends the user's other browser sessions (``accounts.twofactor``); this one stays.

Every form is a POST with a CSRF token; nothing here logs a code, a secret or a link.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from chalice import Blueprint, Response

from chalicelib.accounts import resets, signin, twofactor
from chalicelib.accounts.users import service as users_service
from chalicelib.artifacts import queue
from chalicelib.core.api.errors import NotFound, Unprocessable
from chalicelib.core.api.openapi import Reply
from chalicelib.web import session
from chalicelib.web.routes import SEE_OTHER, open_session
from chalicelib.web.view import (
    THROTTLED,
    PublicPage,
    SignedIn,
    WebCtx,
    add_cookie,
    csrf_refused,
    page,
    redirect,
    with_error,
)

if TYPE_CHECKING:
    from chalicelib.accounts.users.store import UserModel

bp = Blueprint(__name__)

RESET = "/app/password-reset"
STEP = "/app/sign-in/two-factor"
ACCOUNT = "/app/account/two-factor"
GONE = Reply(410, description="the link or the sign-in step is used, withdrawn or expired")
WRONG_CODE = "wrong or already used code"


# ----- password reset ---------------------------------------------------------------------------


@page(bp, RESET, auth=PublicPage)
def reset_form(ctx: WebCtx) -> Response:
    """Forgot your password? A username or email address (or: not available without SMTP)."""
    reason = resets.unavailable()
    return ctx.render("password_reset_request.html", available=reason is None, reason=reason)


@page(bp, RESET, ("POST",), auth=PublicPage, form=True, success=(Reply(200), Reply(503), THROTTLED))
def reset_request(ctx: WebCtx) -> Response:
    """Mail a reset link if an account matches; the same answer either way."""
    form = ctx.form()
    if not session.check_csrf(ctx.request, form.get(session.CSRF_FIELD)):
        return csrf_refused(ctx.request)
    reason = resets.unavailable()
    if reason is not None:
        return ctx.render("password_reset_request.html", 503, available=False, reason=reason)
    login = (form.get("login") or "").strip()
    try:
        job = resets.request(login, ctx.source_ip)
    except signin.Throttled as throttled:
        page_ = ctx.render("password_reset_request.html", available=True, error=str(throttled))
        return with_error(throttled, page_)
    if job is not None:  # the ingest function looks the account up and mails the link
        queue.enqueue(queue.PASSWORD_RESET, **job)
    return ctx.render("password_reset_request.html", available=True, sent=True)


def _reset_page(ctx: WebCtx, token: str, status: int = 200, error: str | None = None) -> Response:
    live = resets.open_link(token) is not None
    return ctx.render(
        "password_reset.html", status if live else 410, token=token if live else "", error=error
    )


@page(bp, RESET + "/{token}", auth=PublicPage, success=(Reply(200), GONE))
def reset_link(ctx: WebCtx, token: str) -> Response:
    """The mailed link: a form for the new password, or a page saying the link is dead."""
    return _reset_page(ctx, token)


@page(
    bp,
    RESET + "/{token}",
    ("POST",),
    auth=PublicPage,
    form=True,
    success=(Reply(200), GONE, Reply(422)),
)
def reset_password(ctx: WebCtx, token: str) -> Response:
    """Set the new password (once); the user's browser sessions end, and they sign in."""
    form = ctx.form()
    if not session.check_csrf(ctx.request, form.get(session.CSRF_FIELD)):
        return csrf_refused(ctx.request)
    try:
        user = resets.use(token, form.get("password") or "", form.get("password_again") or "")
    except Unprocessable as refused:
        return _reset_page(ctx, token, 422, refused.detail)
    if user is None:
        return _reset_page(ctx, token)
    session.end(ctx.request)  # resets.use ended the others
    answer = ctx.render("password_reset.html", done=True)
    return add_cookie(answer, session.clear_cookie(session.COOKIE_NAME))


# ----- the second step of signing in ------------------------------------------------------------


def _expired_step(ctx: WebCtx) -> Response:
    return ctx.render("two_factor_step.html", 410, expired=True)


@page(bp, STEP, auth=PublicPage, success=(Reply(200), GONE))
def second_step_form(ctx: WebCtx) -> Response:
    """The code form after a right password (a page saying so when the step expired)."""
    if session.second_step(ctx.request) is None:
        return _expired_step(ctx)
    return ctx.render("two_factor_step.html")


@page(
    bp,
    STEP,
    ("POST",),
    auth=PublicPage,
    form=True,
    success=SEE_OTHER + (Reply(401), GONE, THROTTLED),
)
def second_step(ctx: WebCtx) -> Response:
    """A two-factor code or a recovery code finishes signing in (each works once)."""
    form = ctx.form()
    if not session.check_csrf(ctx.request, form.get(session.CSRF_FIELD)):
        return csrf_refused(ctx.request)
    step = session.second_step(ctx.request)
    if step is None:
        return _expired_step(ctx)
    try:
        user = signin.check_code(step.user_id, form.get("code") or "", ctx.source_ip)
    except signin.Throttled as throttled:
        return with_error(throttled, ctx.render("two_factor_step.html", error=str(throttled)))
    if user is None:
        return ctx.render("two_factor_step.html", 401, error=WRONG_CODE)
    if not session.take_second_step(step):
        return _expired_step(ctx)
    _, secret = session.start_for_user(user.id, method=signin.PASSWORD, meta={"two-factor": True})
    answer = open_session(ctx, step.next, secret)
    return add_cookie(answer, session.clear_cookie(session.STEP_COOKIE))


# ----- the account page ---------------------------------------------------------------------------


def _account_user(ctx: WebCtx) -> UserModel:
    """The signed-in user (a team token's session has no account page: 404)."""
    principal = ctx.principal_or_sign_in()
    if not principal.is_user:
        raise NotFound("a team token has no account page")
    return users_service.get_user(principal.id)


def _account_page(ctx: WebCtx, user: UserModel, status: int = 200, **extra: object) -> Response:
    secret = twofactor.pending_secret(user) if not twofactor.enabled(user) else None
    return ctx.render(
        "two_factor.html",
        status,
        user=user,
        enabled=twofactor.enabled(user),
        codes_left=twofactor.recovery_codes_left(user),
        secret=secret,
        uri=twofactor.uri(user, secret) if secret else None,
        qr=_qr_svg(twofactor.uri(user, secret)) if secret else None,
        has_password=user.password_hash is not None,
        **extra,
    )


def _qr_svg(uri: str) -> str:
    """The URI as an inline SVG QR code (segno: pure Python, no image request)."""
    import segno
    from markupsafe import Markup

    svg = segno.make(uri, error="m").svg_inline(scale=4, title="QR code of the secret")
    return Markup(svg)  # noqa: S704 - segno's own SVG of our URI, no user HTML


@page(bp, ACCOUNT, auth=SignedIn)
def account_two_factor(ctx: WebCtx) -> Response:
    """Two-factor sign-in for the signed-in user: its state, and the forms to change it."""
    return _account_page(ctx, _account_user(ctx))


def _account_form(ctx: WebCtx) -> tuple[UserModel, dict[str, str]] | Response:
    form = ctx.form()
    if not session.check_csrf(ctx.request, form.get(session.CSRF_FIELD)):
        return csrf_refused(ctx.request)
    return _account_user(ctx), form


@page(bp, ACCOUNT + "/setup", ("POST",), auth=SignedIn, form=True, success=SEE_OTHER)
def two_factor_setup(ctx: WebCtx) -> Response:
    """A new secret to confirm (two-factor stays as it was until then)."""
    found = _account_form(ctx)
    if isinstance(found, Response):
        return found
    user, _ = found
    if not twofactor.enabled(user):
        twofactor.begin(user)
    return redirect(ACCOUNT)


@page(
    bp, ACCOUNT + "/confirm", ("POST",), auth=SignedIn, form=True, success=(Reply(200), Reply(422))
)
def two_factor_confirm(ctx: WebCtx) -> Response:
    """A current code turns two-factor on; the recovery codes are shown once."""
    found = _account_form(ctx)
    if isinstance(found, Response):
        return found
    user, form = found
    keep = ctx.principal_or_sign_in().token_id  # this session stays; the others end
    code = form.get("code") or ""
    codes = None if twofactor.enabled(user) else twofactor.confirm(user, code, keep_token_id=keep)
    if codes is None:
        return _account_page(ctx, user, 422, error=WRONG_CODE)
    return _account_page(ctx, users_service.get_user(user.id), recovery_codes=codes)


@page(
    bp,
    ACCOUNT + "/disable",
    ("POST",),
    auth=SignedIn,
    form=True,
    success=SEE_OTHER + (Reply(401), THROTTLED),
)
def two_factor_disable(ctx: WebCtx) -> Response:
    """The password or a code (or recovery code) turns two-factor off."""
    found = _account_form(ctx)
    if isinstance(found, Response):
        return found
    user, form = found
    password, code = form.get("password") or "", (form.get("code") or "").strip()
    try:
        if code:
            proven = signin.check_code(user.id, code, ctx.source_ip)
        else:
            proven = signin.check(user.username, password, ctx.source_ip) if password else None
    except signin.Throttled as throttled:
        return with_error(throttled, _account_page(ctx, user, error=str(throttled)))
    if proven is None or proven.id != user.id:
        return _account_page(ctx, user, 401, error="wrong password or code")
    twofactor.disable(user.id, keep_token_id=ctx.principal_or_sign_in().token_id)
    return redirect(ACCOUNT)
