"""The caller's own account (TFE's Account API): ``PATCH /account/update`` and
``PATCH /account/password``, and the link that confirms a changed email address.

* A username changes through its claim (``users_store.rename_user``): never two users of one
  name in any case.
* A changed email address waits as ``unconfirmed_email``: the user keeps their email until
  they follow the one-time link mailed to the new address (a random secret, of which only
  the SHA-256 (``core.auth.hash_token``) is stored; it works once, for ``EMAIL_LINK_HOURS``).
  The link opens a web page (``CONFIRM_PATH``) that shows ``email_link``'s user and confirms
  with a button (``confirm_email``): a mail scanner fetching the link confirms nothing. The
  older API link (``API_CONFIRM_PATH``) redirects to that page.
  The link names the configured public address (``core.api.links.link_base_url``), never
  the request's host; without one the change is refused (503) before anything is written.
  Mail goes through the site's SMTP settings (``memberships.Mailer``, given by the app factory:
  ``entry.wiring``, since accounts may not import admin). Without SMTP
  the change waits and no link exists anywhere; asking again once SMTP is set up sends one.
  Sending the current address again drops a waiting change; for an account whose email is
  unconfirmed (``UserModel.email_unconfirmed``: made through an invitation link no mail
  carried) it mails the same kind of link to the current address instead, and following it
  confirms the address.
* A password change needs the current password (a user without one, such as the token-only
  bootstrap admin, sends none) and passes the invitations' policy (``passwords.check``).
  Wrong current passwords are throttled with the account's failed sign-ins
  (``signin.check_current``): past the bound ``signin.Throttled`` is raised unchecked.
  The user's other browser sessions end (``tokens_service.end_sessions``); the one that made the
  change stays signed in (an API token's change ends every browser session).

Each change records one audit event in the site's partition (``user`` ``updated`` naming
the attributes, ``email-confirmed``, ``password-changed``), in the same transaction where the
change is one write, right after it otherwise.

Everything is checked before anything is written: a bad request is a 422 naming the field
that changes nothing. Only user tokens have an account here (404 for team and organization
tokens). Neither a password nor a link is logged or returned.
"""

from __future__ import annotations

import hmac
import secrets
from datetime import timedelta
from typing import Any
from urllib.parse import quote

from chalicelib.accounts import memberships, passwords, signin
from chalicelib.accounts.tokens import service as tokens_service
from chalicelib.accounts.users import service as users_service
from chalicelib.accounts.users import store as users_store
from chalicelib.accounts.users.store import UserModel
from chalicelib.core.api.errors import NotFound, Unprocessable
from chalicelib.core.api.links import link_base_url
from chalicelib.core.audit import events, trail
from chalicelib.core.auth import Principal, hash_token
from chalicelib.core.data.ids import now

EMAIL_LINK_HOURS = 24
CONFIRM_PATH = "/app/account/confirm-email/"
API_CONFIRM_PATH = "/api/v2/account/confirm-email/"
USERNAME = "/data/attributes/username"
EMAIL = "/data/attributes/email"
CURRENT_PASSWORD = "/data/attributes/current-password"
PASSWORD = "/data/attributes/password"


def confirm_path(user_id: str, secret: str) -> str:
    """The path of the confirmation page of a link (the mailed link, without the host)."""
    return CONFIRM_PATH + f"{quote(user_id, safe='')}/{quote(secret, safe='')}"


def _send(email: str, link: str) -> bool:
    """Whether a message went out (False: no mail set up)."""
    mail = memberships.mail()
    return bool(mail and mail.send_email_confirmation(email, link))


def own_user(principal: Principal) -> UserModel:
    if not principal.is_user:
        raise NotFound("only a user token has an account")
    return users_service.get_user(principal.id)


def update(principal: Principal, username: str | None, email: str | None) -> UserModel:
    """Change the caller's username and/or email address (see the module's docstring)."""
    user = own_user(principal)
    renamed = username if username is not None and username != user.username else None
    if renamed is not None:
        users_service.validate_username(renamed, USERNAME)
        holder = users_service.find_user_by_name(renamed)
        if holder is not None and holder.id != user.id:
            raise users_service.taken_username(renamed, USERNAME)
    if email is not None:
        email = users_service.validate_email(email.strip()).strip()
        others = [i for i in users_store.user_ids_with_email(email) if i != user.id]
        if others:
            raise Unprocessable("email has already been taken", pointer=EMAIL)
    base_url = ""
    same_address = email is not None and users_store.email_key(email) == users_store.email_key(
        user.email or ""
    )
    if email is not None and (not same_address or user.email_unconfirmed):
        base_url = link_base_url("email confirmation links")  # a link is made: refuse first
    before = (user.unconfirmed_email, user.email_link_hash, user.email_link_expires_at)
    changed = []
    if email is not None:
        changed += _change_email(user, email, base_url, principal)
    if renamed is not None:
        if not users_store.rename_user(user, renamed):
            _restore_email_change(user, before)
            if changed:  # written and taken back: the attempt is recorded
                trail.record(user_event(principal, user, "updated", changed, outcome="failed"))
            raise users_service.taken_username(renamed, USERNAME)
        changed.append("username")
    if changed:
        trail.record(user_event(principal, user, "updated", changed))
    return users_service.get_user(user.id, consistent=True)


def user_event(
    principal: Principal,
    user: UserModel,
    action: str,
    changed: list[str] | None = None,
    **options: Any,
) -> events.Event:
    """The audit event of a change of a user's own account (kept in the site's partition):
    ``changed`` names the attributes, never their values (an email address waiting for its
    link is ``unconfirmed-email``). The user, read already, names the actor (no read)."""
    return events.event(
        principal,
        organization=None,
        resource_type="user",
        resource_id=user.id,
        action=action,
        meta={"changed": changed} if changed is not None else None,
        description=user.username if principal.id == user.id else None,
        **options,
    )


def can_mail() -> bool:
    """Whether the site can mail a confirmation link now (SMTP set up)."""
    sender = memberships.mail()
    return bool(sender and sender.configured())


def _change_email(user: UserModel, email: str, base_url: str, principal: Principal) -> list[str]:
    """The names of what changed (for the audit event)."""
    if users_store.email_key(email) == users_store.email_key(user.email or ""):
        if user.email_unconfirmed:  # a link to the current address confirms it
            _start_link(user, email, base_url, principal)
            return ["email-confirmation"]
        if user.unconfirmed_email or email != user.email:  # back to the current address
            changed = ["email"] if email != user.email else ["unconfirmed-email"]
            user.update(actions=[UserModel.email.set(email)], condition=UserModel.id.exists())
            users_store.cancel_email_change(user)
            return changed
        return []
    _start_link(user, email, base_url, principal)
    return ["unconfirmed-email"]


def _start_link(user: UserModel, email: str, base_url: str, principal: Principal) -> None:
    """Wait for ``email`` to be confirmed, and mail it the link (when SMTP is set up)."""
    secret = secrets.token_urlsafe(32)
    before = (user.unconfirmed_email, user.email_link_hash, user.email_link_expires_at)
    expires = now() + timedelta(hours=EMAIL_LINK_HOURS)
    users_store.start_email_change(user, email, hash_token(secret), expires)
    link = base_url + confirm_path(user.id, secret)
    try:
        _send(email, link)
    except Exception:
        _restore_email_change(user, before)  # the mail did not go out: no change either
        changed = ["unconfirmed-email"]
        trail.record(user_event(principal, user, "updated", changed, outcome="failed"))
        raise


def _restore_email_change(user: UserModel, before: tuple) -> None:
    email, link_hash, expires = before
    if email and link_hash and expires:
        users_store.start_email_change(user, email, link_hash, expires)
    else:
        users_store.cancel_email_change(user)


def email_link(user_id: str, secret: str) -> UserModel | None:
    """The user whose live confirmation link this is (reads only: showing it changes
    nothing). None when the link is unknown, used, replaced, expired, or its address was
    taken by another user meanwhile."""
    if not secret or len(secret) > 200 or len(user_id) > 100:
        return None
    user = users_service.find_user(user_id)
    if user is None or not user.email_link_hash or not user.unconfirmed_email:
        return None
    if not hmac.compare_digest(hash_token(secret), user.email_link_hash):
        return None
    if user.email_link_expires_at is None or user.email_link_expires_at <= now():
        return None
    if any(i != user.id for i in users_store.user_ids_with_email(user.unconfirmed_email)):
        return None
    return user


def confirm_email(user_id: str, secret: str) -> UserModel | None:
    """Use a confirmation link: the waiting address becomes the user's email, once. None
    when the link is not live (``email_link``) or was used meanwhile."""
    user = email_link(user_id, secret)
    if user is None:
        return None
    # Whoever followed the link to the address acts for the user (the link is no sign-in).
    person = Principal(kind="user", id=user.id, token_id="")
    event = user_event(person, user, "email-confirmed", ["email"])
    if not users_store.confirm_email_change(user, hash_token(secret), event):
        return None
    return users_service.get_user(user.id, consistent=True)


def change_password(
    principal: Principal, current: str | None, password: str | None, again: str | None, source: str
) -> UserModel:
    """Set the caller's password: ``current`` must be their password (none when they have
    none; guesses throttled per user and ``source`` address), ``password`` pass the policy
    and equal ``again``. Ends the user's other browser sessions."""
    user = own_user(principal)
    has_one = user.password_hash is not None or bool(current)
    if has_one and not signin.check_current(user, current or "", source):
        raise Unprocessable("current password is not correct", pointer=CURRENT_PASSWORD)
    passwords.check(password or "", again or "", PASSWORD)
    old = user.password_hash
    expected = UserModel.password_hash == old if old else UserModel.password_hash.does_not_exist()
    actions = [
        UserModel.password_hash.set(passwords.hash_password(password or "")),
        # A reset link asked for earlier must not undo the change.
        UserModel.reset_hash.remove(),
        UserModel.reset_expires_at.remove(),
    ]
    event = user_event(principal, user, "password-changed")
    if not users_store.change_user(user, actions, expected, event):
        raise Unprocessable(
            "the password was changed meanwhile; try again", pointer=CURRENT_PASSWORD
        )
    tokens_service.end_sessions(user.id, keep_token_id=principal.token_id)
    return user
