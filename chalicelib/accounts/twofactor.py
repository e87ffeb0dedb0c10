"""Two-factor sign-in: TOTP codes (RFC 6238, through pyotp) and single-use recovery codes.

* Enrolling: ``begin(user)`` makes a random base32 secret, keeps it sealed with KMS
  (``core.secrets``) as the user's pending secret and returns it with its ``otpauth://``
  URI; ``confirm(user, code)`` checks a current code against the pending secret, makes it
  the live one and stores the SHA-256 of ``RECOVERY_CODES`` new recovery codes, which it
  returns (shown once, never stored in clear).
* Checking (``verify(user, code)``): a six-digit code of the current 30-second step, or of
  the step before or after (clock drift), works once: the step of the last code accepted is
  kept on the user and a conditional update refuses a step at or before it, so a code seen
  over a shoulder, or sent twice in parallel, is refused. A recovery code is taken out of the
  user's set by a conditional update that requires it to be there: it works once.
* ``disable(user_id)`` removes all of it (the user, a site admin's action).
* Each change records its audit event in the same write (``user`` ``two-factor-setup-started``,
  ``two-factor-enabled``, ``two-factor-disabled``, ``two-factor-setup-cancelled``: turned
  off when it was not on), the user acting; a site admin's
  ``disable`` records none here: the admin's action records it (``chalicelib.admin``).
* Turning two-factor on or off is a credential change: the user's other browser sessions
  end (``tokens_service.end_sessions``; ``keep_token_id`` is the session that made the change, none
  for a site admin's ``disable``). On: a session opened with the password alone (by anyone
  who knew it) must now pass the code. Off: a session that turns the second factor off
  ends the others, so the owner notices.

Nothing here logs a code, a secret or a recovery code.
"""

from __future__ import annotations

import hmac
import re
import secrets as stdlib_secrets
import time
from typing import TYPE_CHECKING

from pynamodb.exceptions import UpdateError

from chalicelib.accounts.tokens import service as tokens_service
from chalicelib.accounts.users import store as users_store
from chalicelib.accounts.users.store import UserModel
from chalicelib.core import secrets
from chalicelib.core.audit import events
from chalicelib.core.auth import Principal, hash_token
from chalicelib.core.data import db

if TYPE_CHECKING:
    import pyotp

ISSUER = "Terraform module registry"
PURPOSE = "accounts/totp-secret"
RECOVERY_CODES = 10
STEP_SECONDS = 30
DRIFT_STEPS = 1
_CODE = re.compile(r"[0-9]{6}")
_RECOVERY = re.compile(r"[0-9a-f]{16}")


def _totp(secret: str) -> pyotp.TOTP:
    import pyotp  # loads with the first code checked, not with the function

    return pyotp.TOTP(secret, interval=STEP_SECONDS)


def enabled(user: UserModel) -> bool:
    return user.totp_secret is not None


def begin(user: UserModel) -> tuple[str, str]:
    """A new pending secret for ``user`` (replacing any earlier pending one): the secret and
    its ``otpauth://`` URI. The live secret, if any, is untouched until ``confirm``."""
    import pyotp

    secret = pyotp.random_base32()
    sealed = secrets.seal(secret, purpose=PURPOSE)
    event = _event(user.id, None, "two-factor-setup-started")
    users_store.change_user(user, [UserModel.totp_pending.set(sealed)], None, event)
    user.totp_pending = sealed
    return secret, uri(user, secret)


def _event(user_id: str, token_id: str | None, action: str) -> events.Event:
    """The audit event of the user's own change of their second factor (only the user, in
    their session ``token_id``, turns it on or off here)."""
    person = Principal(kind="user", id=user_id, token_id=token_id or "")
    return events.event(
        person, organization=None, resource_type="user", resource_id=user_id, action=action
    )


def uri(user: UserModel, secret: str) -> str:
    return _totp(secret).provisioning_uri(name=user.username, issuer_name=ISSUER)


def pending_secret(user: UserModel) -> str | None:
    """The secret ``begin`` made, while it waits to be confirmed."""
    if user.totp_pending is None:
        return None
    return secrets.unseal(user.totp_pending, purpose=PURPOSE)


def _step_of(secret: str, code: str) -> int | None:
    """The time step whose code ``code`` is (now, or one step either side), else None."""
    code = re.sub(r"\s", "", code)
    if not _CODE.fullmatch(code):
        return None
    totp = _totp(secret)
    current = int(time.time() // STEP_SECONDS)
    for step in range(current - DRIFT_STEPS, current + DRIFT_STEPS + 1):
        if hmac.compare_digest(totp.generate_otp(step).encode(), code.encode()):
            return step
    return None


def _new_recovery_codes() -> list[str]:
    codes = [stdlib_secrets.token_hex(8) for _ in range(RECOVERY_CODES)]
    return [f"{c[:4]}-{c[4:8]}-{c[8:12]}-{c[12:]}" for c in codes]


def _recovery_hashes(codes: list[str]) -> set[str]:
    """What is stored of freshly made recovery codes (each is well-formed)."""
    hashes = {_recovery_hash(code) for code in codes}
    return {h for h in hashes if h is not None}


def _recovery_hash(code: str) -> str | None:
    plain = re.sub(r"[\s-]", "", code).lower()
    return hash_token("recovery:" + plain) if _RECOVERY.fullmatch(plain) else None


def confirm(user: UserModel, code: str, *, keep_token_id: str | None = None) -> list[str] | None:
    """Turn two-factor on when ``code`` is a current code of the pending secret: the new
    recovery codes (to show once), else None (nothing changed). The user's browser sessions
    but ``keep_token_id``'s end."""
    secret = pending_secret(user)
    step = _step_of(secret, code) if secret else None
    if step is None:
        return None
    codes = _new_recovery_codes()
    turned_on = users_store.change_user(
        user,
        [
            UserModel.totp_secret.set(user.totp_pending),
            UserModel.totp_pending.remove(),
            UserModel.totp_last_step.set(step),
            UserModel.recovery_hashes.set(_recovery_hashes(codes)),
        ],
        UserModel.totp_pending == user.totp_pending,
        _event(user.id, keep_token_id, "two-factor-enabled"),
    )
    if not turned_on:
        return None  # confirmed (or begun again) meanwhile
    tokens_service.end_sessions(user.id, keep_token_id=keep_token_id)
    return codes


def verify(user: UserModel, code: str) -> bool:
    """Whether ``code`` is a TOTP code or a recovery code of ``user`` not used before; using
    it is recorded in the same conditional update that accepts it."""
    if user.totp_secret is None:
        return False
    recovery = _recovery_hash(code)
    if recovery is not None:
        return _use_recovery_code(user, recovery)
    step = _step_of(secrets.unseal(user.totp_secret, purpose=PURPOSE), code)
    if step is None:
        return False
    last = UserModel.totp_last_step
    return _conditional(
        user,
        [last.set(step)],
        (UserModel.totp_secret == user.totp_secret) & (last.does_not_exist() | (last < step)),
    )


def _use_recovery_code(user: UserModel, recovery: str) -> bool:
    return _conditional(
        user,
        [UserModel.recovery_hashes.delete({recovery})],
        UserModel.recovery_hashes.contains(recovery),
    )


def _conditional(user: UserModel, actions: list, condition: object) -> bool:
    try:
        user.update(actions=actions, condition=condition)
    except UpdateError as exc:
        if db.conditional_failure(exc):
            return False
        raise
    return True


def recovery_codes_left(user: UserModel) -> int:
    return len(user.recovery_hashes or ())


def disable(user_id: str, *, keep_token_id: str | None = None) -> None:
    """Two-factor off for the user; the user's browser sessions but ``keep_token_id``'s end
    (all of them when a site admin turns it off). When it was off, only a pending setup is
    dropped and no session ends.

    ``keep_token_id`` given: the user turned it off in that session, and the change records
    its audit event (``two-factor-disabled``) in the same write; None: a site admin's
    action, whose event the admin's service records."""
    actions = [
        UserModel.totp_secret.remove(),
        UserModel.totp_pending.remove(),
        UserModel.totp_last_step.remove(),
        UserModel.recovery_hashes.remove(),
    ]
    if keep_token_id is None:
        turned_off = _conditional(UserModel(user_id), actions, UserModel.totp_secret.exists())
    else:
        event = _event(user_id, keep_token_id, "two-factor-disabled")
        turned_off = users_store.change_user(
            UserModel(user_id), actions, UserModel.totp_secret.exists(), event
        )
    if not turned_off:  # off already: a pending setup is dropped
        drop = [UserModel.totp_pending.remove()]
        if keep_token_id is None or not users_store.change_user(
            UserModel(user_id),
            drop,
            None,
            _event(user_id, keep_token_id, "two-factor-setup-cancelled"),
        ):  # an unknown user raises UpdateError here
            UserModel(user_id).update(actions=drop, condition=UserModel.id.exists())
        return
    tokens_service.end_sessions(user_id, keep_token_id=keep_token_id)
