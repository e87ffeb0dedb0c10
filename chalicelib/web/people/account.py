"""The account page, ``/app/account``: profile (username, email), password, the link to
two-factor sign-in (``account_routes``), and the caller's own API tokens.

* Profile and password change through ``accounts.account`` (``update``, ``change_password``),
  as ``PATCH /account/update`` and ``/account/password``: a new email address waits for the
  link mailed to it. An account whose email is unconfirmed (made through an invitation link
  no mail carried) says so, and (once the site can send mail) asks for the same link to its
  current address: the profile form with ``send_confirmation``.
* The link mailed to a new email address (``account.CONFIRM_PATH``): a page showing the
  account and the address, whose button (a POST with the CSRF token, no session needed)
  confirms it, once (``account.email_link`` / ``confirm_email``); a dead link is a 410 page.
* Tokens: ``tokens_service.list_user_tokens`` / ``create_user_token`` / ``token_by_id`` /
  ``delete_token_by_id``. The secret of a new token is in the answer to the create form only
  (never stored, logged or put in a URL). The tokens ``terraform login`` made are marked; the
  tokens browser sessions open with (``session.SESSION_TOKEN``) are not listed (signing out
  ends them), only counted. Revoking asks first, on a page of its own.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from chalice import Blueprint, Response

from chalicelib.accounts import account, signin, twofactor
from chalicelib.accounts.tokens import service as tokens_service
from chalicelib.core.api.errors import NotFound, Unprocessable
from chalicelib.core.api.openapi import Param, Reply
from chalicelib.core.auth import Principal, TokenModel
from chalicelib.core.data.ids import now
from chalicelib.web import session
from chalicelib.web.people.common import (
    description_error,
    expiry_from,
    signed_in_user,
)
from chalicelib.web.view import (
    THROTTLED,
    PublicPage,
    SignedIn,
    WebCtx,
    page,
    posted,
    redirect,
    with_error,
)

if TYPE_CHECKING:
    from chalicelib.accounts.users.store import UserModel

# Its own blueprint: the everyday web function serves it, without the people pages.
bp = Blueprint(__name__)

ACCOUNT = "/app/account"
TOKEN = ACCOUNT + "/tokens/{token_id}"
# The description ``web.oauth.token_description`` gives the tokens terraform login mints.
TERRAFORM_LOGIN = "terraform login ("
REFUSED = (Reply(200), Reply(422))


def _tokens(principal: Principal) -> tuple[list[dict[str, Any]], int]:
    """The caller's API tokens, newest first, and how many browser sessions hold one."""
    listed: list[dict[str, Any]] = []
    sessions = 0
    for token in sorted(
        tokens_service.list_user_tokens(principal, principal.id),
        key=lambda t: t.created_at,
        reverse=True,
    ):
        if token.description == session.SESSION_TOKEN:
            sessions += 1
            continue
        listed.append(
            {
                "id": token.id,
                "description": token.description or "",
                "created_at": token.created_at,
                "last_used_at": token.last_used_at,
                "expired_at": token.expired_at,
                "expired": token.expired_at is not None and token.expired_at <= now(),
                "terraform_login": (token.description or "").startswith(TERRAFORM_LOGIN),
                "this_session": token.id == principal.token_id,
            }
        )
    return listed, sessions


def _account_page(ctx: WebCtx, principal: Principal, status: int = 200, **extra: Any) -> Response:
    user = account.own_user(principal)
    tokens, sessions = _tokens(principal)
    return ctx.render(
        "people/account.html",
        status,
        user=user,
        two_factor=twofactor.enabled(user),
        has_password=user.password_hash is not None,
        can_mail=bool(user.email_unconfirmed) and account.can_mail(),
        tokens=tokens,
        sessions=sessions,
        **extra,
    )


@page(bp, ACCOUNT, auth=SignedIn, query=(Param("revoked", "say that a token was revoked"),))
def account_page(ctx: WebCtx) -> Response:
    """The signed-in user's profile, password, two-factor state and API tokens."""
    revoked = "The token is revoked." if ctx.query.get("revoked") else None
    return _account_page(ctx, signed_in_user(ctx), token_notice=revoked)


@page(bp, ACCOUNT + "/profile", ("POST",), auth=SignedIn, form=True, success=REFUSED)
def update_profile(ctx: WebCtx) -> Response:
    """A new username and/or email address (a new email waits for its mailed link)."""
    form = posted(ctx)
    if isinstance(form, Response):
        return form
    principal = signed_in_user(ctx)
    user = account.own_user(principal)
    username, email = form.get("username"), form.get("email")
    wanted = {"username": username, "email": email}
    confirming = bool(form.get("send_confirmation")) and bool(user.email_unconfirmed)
    try:
        updated = account.update(
            principal,
            username if username != user.username else None,
            email if email != user.email or confirming else None,
        )
    except Unprocessable as refused:
        return _account_page(ctx, principal, 422, profile_error=refused.detail, profile=wanted)
    notice = "Your profile is saved."
    if confirming and updated.unconfirmed_email == email:
        notice = f"A confirmation link is mailed to {email}: follow it to confirm the address."
    elif updated.unconfirmed_email and email == updated.unconfirmed_email:
        notice += f" Your email address becomes {email} once you follow the link mailed there."
    return _account_page(ctx, principal, profile_notice=notice)


@page(bp, ACCOUNT + "/password", ("POST",), auth=SignedIn, form=True, success=(*REFUSED, THROTTLED))
def change_password(ctx: WebCtx) -> Response:
    """A new password: the current one (if any; guesses throttled as sign-in is), the new
    one twice, the sign-up policy."""
    form = posted(ctx)
    if isinstance(form, Response):
        return form
    principal = signed_in_user(ctx)
    try:
        account.change_password(
            principal,
            form.raw("current_password") or None,
            form.raw("password"),
            form.raw("password_again"),
            ctx.source_ip,
        )
    except Unprocessable as refused:
        return _account_page(ctx, principal, 422, password_error=refused.detail)
    except signin.Throttled as throttled:
        return with_error(throttled, _account_page(ctx, principal, password_error=str(throttled)))
    return _account_page(ctx, principal, password_notice="Your password is changed.")


CONFIRM_EMAIL = account.CONFIRM_PATH + "{user_id}/{secret}"
DEAD_LINK = Reply(410, description="the link is used, replaced or expired")


def _email_page(ctx: WebCtx, user: UserModel | None, action: str, **extra: Any) -> Response:
    return ctx.render(
        "people/confirm_email.html", 200 if user else 410, user=user, action=action, **extra
    )


@page(bp, CONFIRM_EMAIL, auth=PublicPage, success=(Reply(200), DEAD_LINK))
def confirm_email_page(ctx: WebCtx, user_id: str, secret: str) -> Response:
    """The mailed link: which address becomes whose, and the button that confirms it."""
    action = account.confirm_path(user_id, secret)
    return _email_page(ctx, account.email_link(user_id, secret), action)


@page(bp, CONFIRM_EMAIL, ("POST",), auth=PublicPage, form=True, success=(Reply(200), DEAD_LINK))
def confirm_email(ctx: WebCtx, user_id: str, secret: str) -> Response:
    """Confirm the new address (once): it becomes the account's email."""
    form = posted(ctx)
    if isinstance(form, Response):
        return form
    action = account.confirm_path(user_id, secret)
    return _email_page(ctx, account.confirm_email(user_id, secret), action, done=True)


@page(bp, ACCOUNT + "/tokens", ("POST",), auth=SignedIn, form=True, success=REFUSED)
def create_token(ctx: WebCtx) -> Response:
    """A new API token; the answer shows its secret, once."""
    form = posted(ctx)
    if isinstance(form, Response):
        return form
    principal = signed_in_user(ctx)
    description, expires_on = form.get("description"), form.get("expires_on")
    expiry = expiry_from(expires_on)
    error = description_error(description) or (expiry if isinstance(expiry, str) else None)
    if error or isinstance(expiry, str):
        wanted = {"description": description, "expires_on": expires_on}
        return _account_page(ctx, principal, 422, token_error=error, token_form=wanted)
    token, secret = tokens_service.create_user_token(principal, principal.id, description, expiry)
    return ctx.render(
        "people/token_created.html",
        title="Your new API token",
        what=f"The token “{description}”",
        secret=secret,
        expired_at=token.expired_at,
        back=ACCOUNT + "#tokens",
        back_label="Back to your account",
    )


def _own_token(principal: Principal, token_id: str) -> TokenModel:
    """One of the caller's own user tokens (a team token they may manage is not theirs)."""
    token = tokens_service.token_by_id(principal, token_id)
    if token.kind != "user" or token.owner_id != principal.id:
        raise NotFound(f"authentication token {token_id} not found")
    return token


@page(bp, TOKEN, auth=SignedIn)
def confirm_revoke(ctx: WebCtx, token_id: str) -> Response:
    """Revoke this token? (A page of its own: without JavaScript there is no dialog.)"""
    principal = signed_in_user(ctx)
    token = _own_token(principal, token_id)
    return ctx.render(
        "people/confirm.html",
        title="Revoke this token?",
        question=f"Revoke the token “{token.description or token.id}”? Anything using it "
        "(a CI job, terraform on some machine) is refused from now on.",
        action=f"{ACCOUNT}/tokens/{token.id}/revoke",
        button="Revoke the token",
        cancel=ACCOUNT + "#tokens",
    )


@page(bp, TOKEN + "/revoke", ("POST",), auth=SignedIn, form=True, success=(Reply(303),))
def revoke_token(ctx: WebCtx, token_id: str) -> Response:
    """Revoke one of the caller's tokens."""
    form = posted(ctx)
    if isinstance(form, Response):
        return form
    principal = signed_in_user(ctx)
    _own_token(principal, token_id)
    tokens_service.delete_token_by_id(principal, token_id)
    return redirect(ACCOUNT + "?revoked=1#tokens")
