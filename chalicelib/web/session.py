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
* Signing out (``end(request)``) deletes the session server-side; the cookie is cleared too.
* Every state-changing form is a POST carrying a CSRF token: ``csrf_token(request)`` gives
  the one to put in a hidden ``csrf_token`` field, ``check_csrf(request, submitted)`` checks
  it. With a session it is the session's token; before signing in (the sign-in form itself)
  it is a double-submit token, a random value in the cookie ``CSRF_COOKIE`` that the form
  must echo (``pre_session_csrf(request)`` gives the value and whether the cookie must be
  set). SameSite=Lax stops cross-site POSTs carrying the cookies in the first place.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from datetime import timedelta
from http.cookies import CookieError, SimpleCookie
from typing import Any

from chalicelib.core.api.errors import Unauthorized
from chalicelib.core.auth import Principal, authenticate, hash_token, principal_for_hash
from chalicelib.core.data.ids import now
from chalicelib.web import store

COOKIE_NAME = "tfe_registry_session"
CSRF_COOKIE = "tfe_registry_csrf"
CSRF_FIELD = "csrf_token"
SESSION_SECONDS = 12 * 60 * 60
_SECRET_BYTES = 32


def _hash(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


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


def start(token: str) -> tuple[Principal, str]:
    """Open a session for a pasted token: (its principal, the cookie value). A token the API
    would refuse raises ``Unauthorized``; organization tokens cannot sign in (as in TFE)."""
    token = token.strip()
    principal = authenticate(f"Bearer {token}")
    if principal.kind == "organization":
        raise Unauthorized("sign in with a user or team token, not an organization token")
    secret = secrets.token_urlsafe(_SECRET_BYTES)
    moment = now()
    store.WebSessionModel(
        _hash(secret),
        token_hash=hash_token(token),
        csrf=secrets.token_urlsafe(_SECRET_BYTES),
        created_at=moment,
        expires=moment + timedelta(seconds=SESSION_SECONDS),
    ).save(condition=store.WebSessionModel.session_hash.does_not_exist())
    return principal, secret


def _session(request: Any) -> store.WebSessionModel | None:
    """The request's live session item (memoized on the request), or None."""
    memo = getattr(request, "_web_session", False)
    if memo is not False:
        return memo
    secret = cookies(request).get(COOKIE_NAME)
    item = store.get(_hash(secret)) if secret else None
    if item is not None and item.expires <= now():
        item = None
    request._web_session = item
    return item


def signed_in(request: Any) -> Principal | None:
    """The principal of the browser's session; None when not signed in, the session expired
    or ended, or its token was revoked or expired."""
    memo = getattr(request, "_web_principal", False)
    if memo is not False:
        return memo
    item = _session(request)
    principal = principal_for_hash(item.token_hash) if item is not None else None
    request._web_principal = principal
    return principal


def end(request: Any) -> None:
    """Sign out: delete the session server-side (a no-op without one)."""
    item = _session(request)
    if item is not None:
        item.delete()
    request._web_session = None
    request._web_principal = None


def csrf_token(request: Any) -> str | None:
    """The CSRF token of the request's session (None when not signed in)."""
    item = _session(request)
    return item.csrf if item is not None else None


def pre_session_csrf(request: Any) -> tuple[str, bool]:
    """The double-submit token for forms shown before signing in, and whether the cookie
    ``CSRF_COOKIE`` must be (re)set with it."""
    existing = cookies(request).get(CSRF_COOKIE)
    if existing and len(existing) >= 32:
        return existing, False
    return secrets.token_urlsafe(_SECRET_BYTES), True


def check_csrf(request: Any, submitted: str | None) -> bool:
    """Whether a POSTed form's ``csrf_token`` matches the session's token, or (without a
    session) the double-submit cookie's."""
    if not submitted:
        return False
    expected = csrf_token(request) or cookies(request).get(CSRF_COOKIE)
    return bool(expected) and hmac.compare_digest(expected.encode(), submitted.encode())
