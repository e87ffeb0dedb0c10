"""Password reset by mail: a one-time link, valid ``RESET_SECONDS``.

* ``request(login, source)`` is what the request does: it is throttled per address
  and per login text (``signin.count_reset_request``) and gives the job that mails the link,
  the same for every well-formed login whether or not an account matches. It looks nothing
  up and sends nothing, so neither the answer nor the time it takes tells whether the
  account exists (no account enumeration); the caller puts the job on the ingest queue.
* ``deliver(job)`` runs in the ingest function (``entry.ingest``). For a user found by
  username or email address (``signin.find_user``) and not suspended, a random secret is
  made and only its SHA-256 kept on the user, with its expiry, replacing any earlier link
  (which is thereby withdrawn); the link, ``/app/password-reset/<user id>.<secret>`` on the
  configured public address (``core.api.links.link_base_url``: never the request's host,
  which the asker chooses), goes out through the site's SMTP settings
  (``memberships.mail()``), never into a log, a job or an answer. A mail that cannot go out
  is logged and dropped (the user asks again): a retry would make a new link each time.
  Without a public address no link is made (``unavailable`` says so to the form).
* ``open_link(token)`` is the user of a live link, else None (forged, used, withdrawn,
  expired). ``use(token, password, again)`` checks the password policy
  (``passwords.check``: a 422 that changes nothing), then sets the new hash and removes the
  link in one conditional update requiring the link to be still the stored one: it works once.
  Every browser session of the user ends (``tokens_service.end_sessions``).
* Making a link and using it each record their audit event in the same write (``user``
  ``password-reset-link-made``, by the registry; ``password-changed`` ``via`` ``reset-link``,
  by the user).
"""

from __future__ import annotations

import hmac
import logging
import re
import secrets
from datetime import timedelta
from typing import Any

from chalicelib.accounts import memberships, passwords, signin
from chalicelib.accounts.tokens import service as tokens_service
from chalicelib.accounts.users import service as users_service
from chalicelib.accounts.users import store as users_store
from chalicelib.accounts.users.store import UserModel
from chalicelib.core.api.errors import ApiError
from chalicelib.core.api.links import NoPublicAddress, can_make_links, link_base_url
from chalicelib.core.audit import events
from chalicelib.core.auth import Principal, hash_token
from chalicelib.core.data.ids import now

log = logging.getLogger("registry.resets")

RESET_SECONDS = 60 * 60
RESET_PATH = "/app/password-reset/"
_TOKEN = re.compile(r"(user-[A-Za-z0-9]{1,64})\.([A-Za-z0-9_-]{43})")


def unavailable() -> str | None:
    """Why the site cannot mail reset links (the form says so, and to ask an
    administrator), or None when it can."""
    sender = memberships.mail()
    if not (sender and sender.configured()):
        return "this registry cannot send mail"
    if not can_make_links():
        return "this registry has no public address configured to put in a link"
    return None


def request(login: str, source: str) -> dict[str, str] | None:
    """Count a reset asked for ``login`` and give the job that mails its link (None: no
    account can have that login, e.g. an empty one). Raises ``signin.Throttled`` past the
    bounds. Nothing is read or sent here (see the module's docstring)."""
    signin.count_reset_request(login, source)
    login = login.strip()
    if not login or len(login) > signin.MAX_LOGIN_LENGTH:
        return None
    return {"login": login}


def deliver(job: dict[str, Any]) -> None:
    """The queued job of ``request``: mail a reset link to the account its login names, if
    there is one that may have one."""
    user = signin.find_user(str(job.get("login") or ""))
    sender = memberships.mail()
    if user is None or not user.may_sign_in or not user.email or sender is None:
        log.info("password reset asked for no account that may have one")
        return
    try:
        base = link_base_url("password reset links")
    except NoPublicAddress as missing:
        log.warning("password reset link not mailed: %s", missing.detail)
        return
    secret = secrets.token_urlsafe(32)
    actions = [
        UserModel.reset_hash.set(hash_token(secret)),
        UserModel.reset_expires_at.set(now() + timedelta(seconds=RESET_SECONDS)),
    ]
    # The registry makes the link (asked for by someone who named the account, unknown).
    if not users_store.change_user(
        user, actions, None, _event(None, user, "password-reset-link-made")
    ):
        return  # deleted meanwhile
    link = f"{base}{RESET_PATH}{user.id}.{secret}"
    try:
        sender.send_password_reset(user.email, link)
    except ApiError as failed:
        log.warning("password reset mail for %s not delivered: %s", user.id, failed.detail)
        return
    log.info("password reset link mailed for %s", user.id)


def open_link(token: str) -> UserModel | None:
    """The user whose live reset link ``token`` is (None: forged, used, withdrawn, expired)."""
    match = _TOKEN.fullmatch(token or "")
    if match is None:
        return None
    user = users_service.find_user(match.group(1))
    if user is None or user.reset_hash is None or user.reset_expires_at is None:
        return None
    if not user.may_sign_in or user.reset_expires_at <= now():
        return None
    if not hmac.compare_digest(user.reset_hash.encode(), hash_token(match.group(2)).encode()):
        return None
    return user


def use(token: str, password: str, again: str) -> UserModel | None:
    """Set the new password through a live link, once: the user, or None when the link is
    not (or no longer) live. A password the policy refuses is a 422 that changes nothing."""
    user = open_link(token)
    if user is None:
        return None
    passwords.check(password, again)
    actions = [
        UserModel.password_hash.set(passwords.hash_password(password)),
        UserModel.reset_hash.remove(),
        UserModel.reset_expires_at.remove(),
    ]
    # Whoever holds the mailed link acts for the user (the link signs no one in).
    person = Principal(kind="user", id=user.id, token_id="")
    event = _event(person, user, "password-changed", {"via": "reset-link"})
    if not users_store.change_user(user, actions, UserModel.reset_hash == user.reset_hash, event):
        return None  # used (or replaced) meanwhile
    tokens_service.end_sessions(user.id)
    log.info("password reset for %s", user.id)
    return user


def _event(
    principal: Principal | None, user: UserModel, action: str, meta: dict[str, Any] | None = None
) -> events.Event:
    """The audit event of a reset link made (by the registry) or used (the user acting)."""
    return events.event(
        principal,
        organization=None,
        resource_type="user",
        resource_id=user.id,
        action=action,
        meta=meta,
    )
