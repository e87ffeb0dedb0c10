"""Browser sessions of the web UI: sign in by pasting an API token, sign out, expiry, CSRF.

How it works (for other pages of the UI, e.g. ``terraform login``'s authorize page):

* Signing in (``start(token)``) checks the pasted user or team token exactly as the API does
  (``chalicelib.core.auth.authenticate``) and stores a server-side session (``store.py``):
  the SHA-256 of a random session secret as key, the token's SHA-256 (never the token), a
  per-session CSRF token and the expiry (``SESSION_SECONDS``, 12 hours, absolute). The
  browser gets only the secret, in the cookie ``COOKIE_NAME`` with
  ``HttpOnly; Secure; SameSite=Lax; Path=/``. The token never reaches a cookie, a URL,
  localStorage or a log.
* ``signed_in(request) -> Principal | None`` is the caller of a page: the same
  ``Principal`` the API builds for the same token, so the services' permission checks (and
  the 404 rule) apply unchanged. The token is checked again on every request (through the
  API's per-instance cache of verified tokens): a revoked or expired token ends the session.
* Signing out (``end(request)``) deletes the session server-side, and the token minted for
  it when it opened with a password or an invitation (``start_for_user``); the cookie is
  cleared too. ``end_session(hash)`` does the same for another browser's session (SAML
  single logout started by the identity provider). A credential change ends the user's other
  sessions through the same tokens (``accounts.tokens.service.end_sessions``, called by the
  accounts services that change a password or two-factor: accounts may not import web).
* Every sign-in records its audit event (``signed-in``, with its method: ``password``,
  ``sso``, ``token``: ``accounts.signin.sign_in_event``) in the session's own transaction,
  and every sign-out (``signed-out``) in the transaction that deletes the session. A
  session whose token was revoked meanwhile ended already: deleting its item is no one's
  change.
* Two-factor sign-in: after the password, ``start_second_step`` stores a short-lived item
  (``store.SecondStepModel``) bound to a random secret in the cookie ``STEP_COOKIE``;
  ``take_second_step`` deletes it (once: a conditional delete) when the code is right.
* Every state-changing form is a POST carrying a CSRF token: ``csrf_token(request)`` gives
  the one to put in a hidden ``csrf_token`` field, ``check_csrf(request, submitted)`` checks
  it. With a session it is the session's token (random, stored server-side in the session
  row). Before signing in (the sign-in form itself) it is bound to the server, not only to a
  cookie: the cookie ``CSRF_COOKIE`` carries a random nonce, the field
  ``<issued>.<nonce>.<mac>`` with ``mac = HMAC-SHA256(signing key, issued, nonce)``; it is
  accepted for ``PRE_SESSION_CSRF_SECONDS`` after it was issued, when its nonce is the
  cookie's, and the MAC is compared in constant time. The key is the server's
  (``store.signing_key``), so a cookie and field a client made up never pass, even equal.
  ``pre_session_csrf(request)`` mints the field (and a nonce when the cookie must be set).
  SameSite=Lax stops cross-site POSTs carrying the cookies; a browser's ``Sec-Fetch-Site``
  other than ``same-origin`` (or ``none``) is refused too, which also stops a same-site page
  on another port of the host.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import re
import secrets
from datetime import timedelta
from http.cookies import CookieError, SimpleCookie
from typing import Any

from pynamodb.exceptions import DeleteError
from pynamodb.transactions import TransactWrite

from chalicelib.accounts import signin
from chalicelib.accounts.tokens.service import SESSION_TOKEN
from chalicelib.core import observe
from chalicelib.core.api.errors import Unauthorized
from chalicelib.core.audit import trail
from chalicelib.core.auth import (
    Principal,
    TokenModel,
    authenticate,
    hash_token,
    mint_token,
    principal_for_hash,
    verified,
)
from chalicelib.core.data import db
from chalicelib.core.data.ids import now
from chalicelib.web import store

COOKIE_NAME = "tfe_registry_session"
CSRF_COOKIE = "tfe_registry_csrf"
CSRF_FIELD = "csrf_token"
SESSION_SECONDS = 12 * 60 * 60
PRE_SESSION_CSRF_SECONDS = 2 * 60 * 60  # how long the sign-in page may stay open
_CLOCK_SKEW_SECONDS = 60  # instances' clocks may differ a little
_SECRET_BYTES = 32
_NONCE = re.compile(r"[A-Za-z0-9_-]{43}")  # token_urlsafe(32)
_ISSUED = re.compile(r"[0-9]{1,12}")


def cookies(request: Any) -> dict[str, str]:
    """The request's cookies (a malformed header counts as none)."""
    header = (request.headers or {}).get("cookie") or ""
    jar: SimpleCookie = SimpleCookie()
    try:
        jar.load(header)
    except CookieError:
        return {}
    return {name: morsel.value for name, morsel in jar.items()}


def set_cookie(name: str, value: str, max_age: int) -> str:
    """A ``Set-Cookie`` value with the attributes every UI cookie carries."""
    return f"{name}={value}; Max-Age={max_age}; Path=/; HttpOnly; Secure; SameSite=Lax"


def clear_cookie(name: str) -> str:
    return set_cookie(name, "", 0)


def start(
    token: str,
    seconds: int = SESSION_SECONDS,
    *,
    minted: bool = False,
    method: str = signin.TOKEN,
    meta: dict[str, Any] | None = None,
) -> tuple[Principal, str]:
    """Open a session for a pasted token: (its principal, the cookie value). A token the API
    would refuse raises ``Unauthorized``; organization tokens cannot sign in (as in TFE).
    ``minted``: the token was made for this session, and ends with it. The sign-in's event
    (``method``, ``meta``) is written with the session."""
    token = token.strip()
    principal = authenticate(f"Bearer {token}")
    if principal.kind == "organization":
        raise Unauthorized("sign in with a user or team token, not an organization token")
    secret = secrets.token_urlsafe(_SECRET_BYTES)
    moment = now()
    item = store.WebSessionModel(
        hash_token(secret),
        token_hash=hash_token(token),
        csrf=secrets.token_urlsafe(_SECRET_BYTES),
        created_at=moment,
        expires=moment + timedelta(seconds=seconds),
        minted=minted or None,
    )
    event = signin.sign_in_event(principal, signin.SIGNED_IN, method, meta)
    with TransactWrite(connection=db.connection()) as tx:
        tx.save(item, condition=store.WebSessionModel.session_hash.does_not_exist())
        trail.record_in(tx, event)
    return principal, secret


def start_for_user(
    user_id: str,
    seconds: int = SESSION_SECONDS,
    *,
    method: str,
    meta: dict[str, Any] | None = None,
) -> tuple[Principal, str]:
    """Open a session for a user who proved who they are another way (``method``: a
    password, an invitation link, SAML: which sets its own ``seconds``): a user token of
    their own, expiring with the session, opens it."""
    _, token = mint_token(
        "user",
        user_id,
        description=SESSION_TOKEN,
        expired_at=now() + timedelta(seconds=seconds),
    )
    return start(token, seconds, minted=True, method=method, meta=meta)


def _session(request: Any) -> store.WebSessionModel | None:
    """The request's live session item (memoized on the request), or None."""
    memo: Any = getattr(request, "_web_session", False)  # the item, None, or False: not yet
    if memo is not False:
        return memo
    secret = cookies(request).get(COOKIE_NAME)
    item = store.get(hash_token(secret)) if secret else None
    if item is not None and item.expires <= now():
        item = None
    request._web_session = item
    return item


def signed_in(request: Any) -> Principal | None:
    """The principal of the browser's session; None when not signed in, the session expired
    or ended, or its token was revoked or expired."""
    memo: Any = getattr(request, "_web_principal", False)  # the principal, None, or False
    if memo is not False:
        return memo
    item = _session(request)
    principal = principal_for_hash(item.token_hash) if item is not None else None
    request._web_principal = principal
    return principal


def end(request: Any) -> None:
    """Sign out: delete the session server-side (a no-op without one), and the token minted
    for it (a pasted token is the caller's own and stays)."""
    item = _session(request)
    if item is not None:
        _delete(item, signed_in(request), "browser")
    request._web_session = None
    request._web_principal = None


def _delete(item: store.WebSessionModel, principal: Principal | None, method: str) -> None:
    """Delete a session and its minted token with the sign-out's event (``principal``: the
    session's, None when its token was revoked or expired: it ended then already)."""
    if principal is None:
        with observe.bookkeeping():
            item.delete()
            if item.minted:
                TokenModel(item.token_hash).delete()
        return
    with TransactWrite(connection=db.connection()) as tx:
        tx.delete(item)
        if item.minted:
            tx.delete(TokenModel(item.token_hash))
        trail.record_in(tx, signin.sign_in_event(principal, signin.SIGNED_OUT, method))
    if item.minted:
        verified.forget(item.token_hash)  # as ``TokenModel.delete`` does: at once, here


def end_session(session_hash: str) -> bool:
    """End the session ``session_hash`` wherever its browser is (an identity provider's
    single logout): its item and the token minted for it are deleted, so the next request
    of that browser, on any instance, is signed out. False when it had ended already."""
    item = store.get(session_hash)
    if item is None:
        return False
    _delete(item, principal_for_hash(item.token_hash), signin.SSO)
    return True


def csrf_token(request: Any) -> str | None:
    """The CSRF token of the request's session (None when not signed in)."""
    item = _session(request)
    return item.csrf if item is not None else None


def _mac(issued: int, nonce: str) -> str:
    digest = hmac.new(
        store.signing_key(), f"{CSRF_FIELD}\n{issued}\n{nonce}".encode(), hashlib.sha256
    ).digest()
    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode("ascii")


def pre_session_csrf(request: Any) -> tuple[str, str | None]:
    """A signed token for a form shown before signing in (``<issued>.<nonce>.<mac>``), and
    the nonce to set in the cookie ``CSRF_COOKIE`` (None: the request's cookie has it)."""
    nonce = cookies(request).get(CSRF_COOKIE) or ""
    new_nonce = None
    if not _NONCE.fullmatch(nonce):
        nonce = new_nonce = secrets.token_urlsafe(_SECRET_BYTES)
    issued = int(now().timestamp())
    return f"{issued}.{nonce}.{_mac(issued, nonce)}", new_nonce


def _pre_session_ok(request: Any, submitted: str) -> bool:
    """Whether ``submitted`` is a token this server minted, not expired, for the nonce in
    the request's cookie."""
    parts = submitted.split(".")
    nonce = cookies(request).get(CSRF_COOKIE) or ""
    if len(parts) != 3 or not _ISSUED.fullmatch(parts[0]) or not _NONCE.fullmatch(nonce):
        return False
    issued, field_nonce, mac = int(parts[0]), parts[1], parts[2]
    age = now().timestamp() - issued
    if not -_CLOCK_SKEW_SECONDS <= age <= PRE_SESSION_CSRF_SECONDS:
        return False
    same_nonce = hmac.compare_digest(field_nonce.encode(), nonce.encode())
    return hmac.compare_digest(mac.encode(), _mac(issued, nonce).encode()) and same_nonce


def _cross_origin(request: Any) -> bool:
    """A browser says the form came from another origin (a same-site page on another port
    of the host included); browsers that send no ``Sec-Fetch-Site`` rely on the token."""
    site = (request.headers or {}).get("sec-fetch-site")
    return site is not None and site not in ("same-origin", "none")


def check_csrf(request: Any, submitted: str | None) -> bool:
    """Whether a POSTed form's ``csrf_token`` is the session's token, or (without a
    session) a pre-sign-in token this server minted for the request's cookie."""
    if not submitted or not submitted.isascii() or _cross_origin(request):
        return False
    expected = csrf_token(request)
    if expected:
        return hmac.compare_digest(expected.encode(), submitted.encode())
    return _pre_session_ok(request, submitted)


# ----- the second step of a two-factor sign-in ------------------------------------------------

STEP_COOKIE = "tfe_registry_2fa"
STEP_SECONDS = 5 * 60


def start_second_step(user_id: str, target: str) -> str:
    """A password was right for a user with two-factor on: the value of ``STEP_COOKIE``
    that lets this browser, and only for ``STEP_SECONDS``, finish with a code."""
    secret = secrets.token_urlsafe(_SECRET_BYTES)
    with observe.bookkeeping():  # one-time sign-in state: the sign-in is recorded, not this
        store.SecondStepModel(
            "step:" + hash_token(secret),
            user_id=user_id,
            next=target,
            expires=now() + timedelta(seconds=STEP_SECONDS),
        ).save()
    return secret


def second_step(request: Any) -> store.SecondStepModel | None:
    """The browser's live second step (None: none, or expired)."""
    secret = cookies(request).get(STEP_COOKIE)
    if not secret or len(secret) > 100:
        return None
    item = store.second_step("step:" + hash_token(secret))
    return item if item is not None and item.expires > now() else None


def take_second_step(item: store.SecondStepModel) -> bool:
    """Use the second step once (False: another request used it first)."""
    try:
        item.delete(condition=store.SecondStepModel.session_hash.exists())
    except DeleteError as exc:
        if db.conditional_failure(exc):
            return False
        raise
    return True
