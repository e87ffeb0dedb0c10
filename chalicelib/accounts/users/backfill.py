"""The backfills of the users table: what users made before an index or a claim need
(``python -m infrastructure.backfill``). Each is idempotent; the kept count of active site
admins derives itself (``store.backfill_admin_count``)."""

from __future__ import annotations

from pynamodb.exceptions import PutError, UpdateError

from chalicelib.accounts.users.store import (
    USER_DIRECTORY,
    UserModel,
    UsernameClaimModel,
    claim_key,
    email_key,
    user_id_of_name,
    username_key,
)
from chalicelib.core.data import db, lists


def backfill_email_keys() -> dict[str, int]:
    """Give every user made before the ``by-email`` index its ``email_key``: idempotent."""
    report = {"keyed": 0, "kept": 0}
    for user in UserModel.scan(filter_condition=UserModel.username.exists()):
        wanted = email_key(user.email or "")
        if user.email_key == wanted:
            report["kept"] += 1
            continue
        try:
            user.update(
                actions=[UserModel.email_key.set(wanted)],
                condition=UserModel.email == user.email,
            )
            report["keyed"] += 1
        except UpdateError as exc:  # changed meanwhile: that write set the key
            if not db.conditional_failure(exc):
                raise
    return report


def backfill_user_directory() -> dict[str, int]:
    """Put every user made before the ``user-directory`` index in it (its ``directory`` and
    ``username_key``), then set the kept count of users to the index's size: idempotent."""
    report = {"listed": 0, "kept": 0}
    for user in UserModel.scan(filter_condition=UserModel.username.exists()):
        wanted = username_key(user.username)
        if user.directory == USER_DIRECTORY and user.username_key == wanted:
            report["kept"] += 1
            continue
        try:
            user.update(
                actions=[
                    UserModel.directory.set(USER_DIRECTORY),
                    UserModel.username_key.set(wanted),
                ],
                condition=UserModel.username == user.username,
            )
            report["listed"] += 1
        except UpdateError as exc:  # renamed meanwhile: that write set the key
            if not db.conditional_failure(exc):
                raise
    total = sum(1 for _ in UserModel.user_directory.query(USER_DIRECTORY))
    lists.set_counts(USER_DIRECTORY, {lists.ALL: total})
    report["counted"] = total
    return report


def backfill_username_claims() -> dict[str, int]:
    """Claim every existing user's username (users made before the claims were): idempotent.
    Two users whose names differ only in case cannot both hold the claim: the second is
    counted as ``conflicts`` (rename one by hand)."""
    report = {"claimed": 0, "kept": 0, "conflicts": 0}
    for user in UserModel.scan(filter_condition=UserModel.username.exists()):
        holder = user_id_of_name(user.username)
        if holder == user.id:
            report["kept"] += 1
            continue
        if holder is not None:
            report["conflicts"] += 1
            continue
        try:
            UsernameClaimModel(claim_key(user.username), user_id=user.id).save(
                condition=UsernameClaimModel.id.does_not_exist()
            )
            report["claimed"] += 1
        except PutError as exc:
            if not db.conditional_failure(exc):
                raise
            report["conflicts"] += 1
    return report
