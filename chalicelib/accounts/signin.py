"""Signing in with a username (or email address) and a password, throttled.

``check(login, password, source)`` is the whole rule; the web room only renders the answer:

* The user is found by username in any case (its claim, ``users_service.find_user_by_name``), else
  by email address (``users_service.find_user_by_email``: one user exactly).
* ``passwords.verify`` checks the password; without a user, or for a user without a password
  (token-only, such as the bootstrap admin), it checks a dummy hash, so the time taken does
  not tell which. A suspended user is refused even with the right password. Every refusal is
  the same: the caller says "wrong username or password" and nothing else.
* Throttle: at most ``ACCOUNT_LIMIT`` failed attempts per account *from one source
  address*, and ``ADDRESS_LIMIT`` per source address (every account together), in a fixed
  ``WINDOW_SECONDS`` window, counted in the ``rate-limits`` table (``core.data.counters``:
  one conditional UpdateItem each, expired by TTL). An attempt is counted before the
  password is checked, so parallel guesses cannot overshoot the bound; a successful one is
  taken back. Past a bound ``Throttled`` is raised without checking the password (a right
  password is refused too, from that address, until the window ends). An unknown login is
  counted under a hash of its folded text: a password typed into the username field is
  never stored. An IPv6 source counts by its /64 (``source_key``): one host holds a whole
  /64, and would otherwise get a fresh bound per address.
* Why per account *and* address: counted per account alone, anyone who knows a username
  could keep its owner out with five wrong passwords. Now those five lock only the
  guesser's own address out of that account; the owner, from any other address, signs in
  with the right password (and code).
* No account-wide ceiling across addresses, on purpose. One would bring the lockout back:
  a ceiling of N failures lets anyone with N / ``ACCOUNT_LIMIT`` addresses keep the owner
  out, and addresses are cheap (a /64 counts as one here, but many IPv4 ones are still
  easy to rent). What bounds distributed guessing instead: each address (or /64) gets
  ``ACCOUNT_LIMIT`` guesses at an account and ``ADDRESS_LIMIT`` at all of them per window;
  passwords are at least 10 characters and none of the common ones
  (``passwords.check``), which leaves the guesses such a budget buys little hope; and
  two-factor sign-in (``twofactor``), which no password guess passes, is the protection
  for an account that needs more.
* A signed-in user changing their password (``check_current``: the Account API and the
  account page) proves the current one under the same keys as signing in: wrong guesses
  through a stolen token or session count with the account's failed sign-ins from that
  address.
* The same counters, under their own keys, bound the second step's codes (``check_code``,
  a recovery code included: per user from one address and per address, as passwords) and
  password reset requests (``count_reset_request``: every request counts, each may send a
  mail; per address, and per login from every address together, which bounds the mails a
  mailbox gets: exhausting that bound delays a reset, it keeps no one from signing in).

Nothing here logs the login text or the password.

Audit events (``core.audit``, the site's partition): every refused attempt records one
(``sign-in-failed``, outcome ``failed``; past a bound ``sign-in-throttled``, outcome
``throttled``) with the method and the user the login named, or a fingerprint of a login
that names no one (never its text: a password typed into the username field must not be
kept); the sign-in itself (``signed-in``) and the sign-out
(``signed-out``) are recorded where the session opens and ends (``web.session``, and
``terraform login``'s token: ``web.oauth``), with ``sign_in_event``.
"""

from __future__ import annotations

import hashlib
import ipaddress
import logging
import math
import time
from typing import Any

from chalicelib.accounts import passwords, twofactor
from chalicelib.accounts.users import service as users_service
from chalicelib.accounts.users.store import UserModel
from chalicelib.core.api.errors import TooManyRequests
from chalicelib.core.audit import events, trail
from chalicelib.core.auth import Principal
from chalicelib.core.data.counters import count_request, uncount

log = logging.getLogger("registry.signin")

ACCOUNT_LIMIT = 5  # failed attempts at one account from one source address
ADDRESS_LIMIT = 20  # failed attempts from one source address, every account together
WINDOW_SECONDS = 15 * 60
_TTL_GRACE_SECONDS = 60
MAX_LOGIN_LENGTH = 256

# Sign-in methods (an event's ``meta.method``) and the actions of sign-ins and sign-outs.
PASSWORD = "password"
TWO_FACTOR = "two-factor"
SSO = "sso"
TOKEN = "token"
SIGNED_IN = "signed-in"
SIGNED_OUT = "signed-out"
FAILED = "sign-in-failed"
THROTTLED = "sign-in-throttled"


class Throttled(TooManyRequests):
    """Too many failed attempts: a 429 saying to try again in ``minutes``, with the
    ``Retry-After`` header (seconds). The API's route wrapper answers it as every ApiError;
    a page shows its form again with it (``web.view.with_error``)."""

    def __init__(self, minutes: int) -> None:
        super().__init__(
            f"too many attempts, try again in {minutes} minutes",
            headers={"Retry-After": str(minutes * 60)},
        )
        self.minutes = minutes


def sign_in_event(
    principal: Principal, action: str, method: str, meta: dict[str, Any] | None = None
) -> events.Event:
    """The event of a sign-in or sign-out of ``principal`` (a user; a team whose token
    opened a browser session) made now, in the site's partition."""
    return events.event(
        principal,
        organization=None,
        resource_type="user" if principal.is_user else principal.kind,
        resource_id=principal.id,
        action=action,
        meta={"method": method, **(meta or {})},
    )


def record_refused(
    login: str,
    user: UserModel | None,
    method: str,
    *,
    throttled: bool = False,
    meta: dict[str, Any] | None = None,
) -> None:
    """Record one refused sign-in attempt (``throttled``: refused unchecked, past a bound):
    the user the login named, or, for a login that names no one, a fingerprint of it (the
    first 16 hex digits of the SHA-256 of its folded text, as the throttle counts it), never
    the text: a password typed into the username field must not be kept for 400 days."""
    if user is not None:
        typed = user.username
    else:
        typed = "unknown login " + _folded(login)[:16] if login.strip() else ""
    user_id = user.id if user is not None else ""
    event = events.event(
        Principal("user", user_id, ""),
        organization=None,
        resource_type="user",
        resource_id=user_id,
        action=THROTTLED if throttled else FAILED,
        meta={"method": method, "username": typed, **(meta or {})},
        outcome="throttled" if throttled else "failed",
        description=user.username if user is not None else typed,
    )
    trail.record(event)


def find_user(login: str) -> UserModel | None:
    """The user whose username (any case) or email address is ``login``."""
    login = login.strip()
    if not login or len(login) > MAX_LOGIN_LENGTH:
        return None
    user = users_service.find_user_by_name(login) if "@" not in login else None
    if user is None and "@" in login:
        found = users_service.find_user_by_email(login)  # a partial item: read the whole user
        user = users_service.find_user(found.id) if found is not None else None
    return user


def _folded(login: str) -> str:
    return hashlib.sha256(login.strip().casefold().encode()).hexdigest()


def _account_key(login: str, user: UserModel | None) -> str:
    if user is not None:
        return "user:" + user.id
    return "login:" + _folded(login)


def _window() -> tuple[int, int, Throttled]:
    """The current window's start, when its counters expire, and the refusal past them."""
    moment = time.time()
    window = int(moment // WINDOW_SECONDS) * WINDOW_SECONDS
    expires = window + WINDOW_SECONDS + _TTL_GRACE_SECONDS
    return window, expires, Throttled(max(1, math.ceil((window + WINDOW_SECONDS - moment) / 60)))


def source_key(source: str) -> str:
    """How a source address is counted: an IPv4 address as it is, an IPv6 one by its /64
    network (what one host or customer holds), anything else as it is."""
    try:
        address = ipaddress.ip_address(source)
    except ValueError:
        return source
    if isinstance(address, ipaddress.IPv6Address):
        if address.ipv4_mapped is not None:  # ::ffff:192.0.2.1 is 192.0.2.1
            return str(address.ipv4_mapped)
        return str(ipaddress.IPv6Network(f"{address}/64", strict=False))
    return str(address)


def _count_address(kind: str, source: str) -> str:
    """Count one attempt of ``kind`` from the source address (the key, to take back on
    success); ``Throttled`` past the bound."""
    window, expires, throttled = _window()
    address_key = f"{kind}:ip:{source_key(source)}#{window}"
    if count_request(address_key, ADDRESS_LIMIT, expires) is None:
        log.warning("%s throttled for a source address", kind)
        raise throttled
    return address_key


def _count_account(kind: str, account: str, source: str | None, address_key: str) -> str:
    """Count one attempt of ``kind`` at the account from the source address; past the bound
    the address's hit is taken back (refused unchecked: not a failure of this address) and
    ``Throttled`` raised. ``source`` None: the account from every address together."""
    window, expires, throttled = _window()
    where = f":ip:{source_key(source)}" if source is not None else ""
    account_key = f"{kind}:{account}{where}#{window}"
    if count_request(account_key, ACCOUNT_LIMIT, expires) is None:
        uncount(address_key)
        log.warning("%s throttled for an account", kind)
        raise throttled
    return account_key


def check(login: str, password: str, source: str) -> UserModel | None:
    """The user when ``password`` is theirs and they may sign in, else None (one answer for
    every refusal). Raises ``Throttled`` past the bounds, before checking the password.
    A refusal records its event (``record_refused``)."""
    user: UserModel | None = None
    try:
        address_key = _count_address("password", source)
        user = find_user(login)
        account = _account_key(login, user)
        keys = address_key, _count_account("password", account, source, address_key)
    except Throttled:
        record_refused(login, user, PASSWORD, throttled=True)
        raise
    right = passwords.verify(user.password_hash if user else None, password)
    if user is not None and right and user.may_sign_in:
        for key in keys:
            uncount(key)
        return user
    log.info("password sign-in refused for %s", user.id if user else "an unknown login")
    record_refused(login, user, PASSWORD)
    return None


def check_current(user: UserModel, password: str, source: str) -> bool:
    """Whether ``password`` is the password of ``user`` (signed in, changing it): counted
    as a sign-in attempt of that account and address, taken back when right. Raises
    ``Throttled`` past the bounds, before checking the password."""
    address_key = _count_address("password", source)
    account = _account_key("", user)
    keys = address_key, _count_account("password", account, source, address_key)
    if passwords.verify(user.password_hash, password):
        for key in keys:
            uncount(key)
        return True
    log.info("current password refused for %s", user.id)
    return False


def check_code(user_id: str, code: str, source: str) -> UserModel | None:
    """The second step: the user when ``code`` is a two-factor code (or recovery code) of
    theirs not used before, else None. Throttled as passwords are, per user and address.
    A refusal records its event (``record_refused``: the code is never recorded)."""
    try:
        address_key = _count_address("code", source)
        keys = address_key, _count_account("code", "user:" + user_id, source, address_key)
    except Throttled:
        record_refused("", users_service.find_user(user_id), TWO_FACTOR, throttled=True)
        raise
    user = users_service.find_user(user_id)
    if user is not None and user.may_sign_in and twofactor.verify(user, code):
        for key in keys:
            uncount(key)
        return user
    log.info("two-factor code refused for %s", user_id)
    record_refused("", user, TWO_FACTOR)
    return None


def count_reset_request(login: str, source: str) -> None:
    """A password reset asked for ``login``: counted per address and per login from every
    address (every request, not only failures: each sends a mail, and the per-login bound
    is the mailbox's); ``Throttled`` past either bound."""
    _count_account("reset", "login:" + _folded(login), None, _count_address("reset", source))
