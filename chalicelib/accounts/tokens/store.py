"""The reads and writes of the tokens table (``core.auth.TokenModel``) that accounts makes:
the tokens of an owner, a token by id or hash, and the single token a team or organization
holds (swapped in on the condition of the hash it was read with)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from pynamodb.exceptions import TransactWriteError, UpdateError
from pynamodb.transactions import TransactWrite

from chalicelib.core.audit import trail
from chalicelib.core.auth import TokenModel, verified
from chalicelib.core.data import db

if TYPE_CHECKING:
    from chalicelib.accounts.organizations.store import OrganizationModel
    from chalicelib.accounts.teams.store import TeamModel
    from chalicelib.core.audit.events import Event


def delete_token(token_hash: str | None) -> None:
    if token_hash:
        TokenModel(token_hash).delete()


def insert_token(token: TokenModel, event: Event) -> None:
    """Save a new token (``core.auth.new_token``) with its audit ``event``, in one
    transaction."""
    with TransactWrite(connection=db.connection()) as tx:
        tx.save(token, condition=TokenModel.token_hash.does_not_exist())
        trail.record_in(tx, event)


def replace_held_token(
    holder: TeamModel | OrganizationModel, token: TokenModel, event: Event
) -> bool:
    """Make the new ``token`` (``core.auth.new_token``, not yet written) the single token of
    a team or organization and delete the one it held before, with the audit ``event``, in
    one transaction.

    The swap is conditional on the hash ``holder`` was read with, so two concurrent rotations
    cannot both succeed and leave an untracked live token: False (nothing written) when
    another rotation won.
    """
    model = type(holder)
    old_hash = holder.token_hash
    expected = model.token_hash == old_hash if old_hash else model.token_hash.does_not_exist()
    try:
        with TransactWrite(connection=db.connection()) as tx:
            tx.save(token, condition=TokenModel.token_hash.does_not_exist())
            if old_hash:
                tx.delete(TokenModel(old_hash))
            tx.update(
                holder,
                actions=[model.token_id.set(token.id), model.token_hash.set(token.token_hash)],
                condition=expected,
            )
            trail.record_in(tx, event)
    except TransactWriteError as exc:
        if db.TRANSACTION_CONDITION_FAILED in db.cancellation_codes(exc):
            return False
        raise
    finally:
        if old_hash:
            verified.forget(old_hash)  # as ``TokenModel.delete`` does
    holder.token_id, holder.token_hash = token.id, token.token_hash
    return True


def drop_held_token(holder: TeamModel | OrganizationModel, token: TokenModel, event: Event) -> None:
    """Forget a team's or organization's single ``token`` and delete it, with the audit
    ``event``, in one transaction."""
    model = type(holder)
    try:
        with TransactWrite(connection=db.connection()) as tx:
            tx.delete(token)
            tx.update(holder, actions=[model.token_id.remove(), model.token_hash.remove()])
            trail.record_in(tx, event)
    finally:
        verified.forget(token.token_hash)  # as ``TokenModel.delete`` does


def revoke_token(token: TokenModel, event: Event) -> None:
    """Delete one token with its audit ``event``, in one transaction (this instance forgets
    it at once, as ``TokenModel.delete`` does)."""
    try:
        with TransactWrite(connection=db.connection()) as tx:
            tx.delete(token)
            trail.record_in(tx, event)
    finally:
        verified.forget(token.token_hash)


def swap_audit_token(org: OrganizationModel, token: TokenModel, event: Event) -> bool:
    """One transaction: ``token`` stored and held as the organization's audit trail token
    (on the condition of the one ``org`` was read with, which is deleted), with ``event``.
    False when another swap, or the organization's deletion, came first (nothing written)."""
    model = type(org)
    old = org.audit_token_hash
    held = model.audit_token_hash == old if old else model.audit_token_hash.does_not_exist()
    try:
        with TransactWrite(connection=db.connection()) as tx:
            tx.update(
                org,
                actions=[
                    model.audit_token_id.set(token.id),
                    model.audit_token_hash.set(token.token_hash),
                ],
                condition=model.name.exists() & held,
            )
            tx.save(token, condition=TokenModel.token_hash.does_not_exist())
            if old:
                tx.delete(TokenModel(old))
            trail.record_in(tx, event)
    except TransactWriteError as exc:
        if db.cancellation_codes(exc)[:1] == [db.TRANSACTION_CONDITION_FAILED]:
            return False
        raise
    if old:
        verified.forget(old)
    return True


def drop_audit_token(org: OrganizationModel, event: Event) -> bool:
    """One transaction: the organization's audit trail token deleted and forgotten, with
    ``event``; False when it was swapped or dropped since ``org`` was read."""
    model = type(org)
    held = org.audit_token_hash
    assert held is not None
    try:
        with TransactWrite(connection=db.connection()) as tx:
            tx.update(
                org,
                actions=[model.audit_token_id.remove(), model.audit_token_hash.remove()],
                condition=model.audit_token_hash == held,
            )
            tx.delete(TokenModel(held))
            trail.record_in(tx, event)
    except TransactWriteError as exc:
        if db.cancellation_codes(exc)[:1] == [db.TRANSACTION_CONDITION_FAILED]:
            return False
        raise
    verified.forget(held)
    return True


def owned_tokens(kind: str, owner_id: str) -> Iterable[TokenModel]:
    """The tokens of one owner. Owner ids share one key space (an organization may be named
    like a user or team id), so the kind must always be part of the lookup."""
    return TokenModel.by_owner.query(owner_id, filter_condition=TokenModel.kind == kind)


def token_of_hash(token_hash: str) -> TokenModel | None:
    try:
        return TokenModel.get(token_hash)
    except TokenModel.DoesNotExist:
        return None


def token_of_id(token_id: str) -> TokenModel | None:
    return next(iter(TokenModel.by_id.query(token_id)), None)


def mark_suspended(token: TokenModel, flag: bool) -> None:
    """Set (or lift) a token's suspension; this instance forgets it at once."""
    action = TokenModel.suspended.set(True) if flag else TokenModel.suspended.remove()
    try:
        token.update(actions=[action], condition=TokenModel.token_hash.exists())
    except UpdateError as exc:  # deleted meanwhile: nothing to refuse
        if not db.conditional_failure(exc):
            raise
    verified.forget(token.token_hash)
