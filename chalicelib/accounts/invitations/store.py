"""The organization-memberships table: memberships that began as invitations
(``MembershipModel``), every read of it and its conditional writes. A member added straight
to teams has no item here: their membership is their team refs (``UserModel.is_member``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pynamodb.attributes import (
    BooleanAttribute,
    UnicodeAttribute,
    UnicodeSetAttribute,
    UTCDateTimeAttribute,
)
from pynamodb.exceptions import PutError, TransactWriteError
from pynamodb.indexes import AllProjection, GlobalSecondaryIndex
from pynamodb.transactions import TransactWrite

from chalicelib.accounts.users.store import (
    USER_DIRECTORY,
    UserModel,
    UsernameClaimModel,
    claim_key,
)
from chalicelib.core.audit import trail
from chalicelib.core.data import db, lists

if TYPE_CHECKING:
    from pynamodb.expressions.condition import Condition
    from pynamodb.expressions.update import Action

    from chalicelib.core.audit.events import Event


class MembershipsByOrganization(GlobalSecondaryIndex):
    class Meta:
        index_name = "by-organization"
        projection = AllProjection()

    organization = UnicodeAttribute(hash_key=True)
    email = UnicodeAttribute(range_key=True)


class MembershipsByUser(GlobalSecondaryIndex):
    class Meta:
        index_name = "by-user"
        projection = AllProjection()

    user_id = UnicodeAttribute(hash_key=True)


class MembershipsByEmail(GlobalSecondaryIndex):
    """The invitations of an email address (lower case), in every organization: a site
    admin finds a person invited by email before they have a user."""

    class Meta:
        index_name = "by-email"
        projection = AllProjection()

    email = UnicodeAttribute(hash_key=True)


class MembershipsByToken(GlobalSecondaryIndex):
    """Sparse: only invitations not yet accepted carry a ``token_hash``."""

    class Meta:
        index_name = "by-token"
        projection = AllProjection()

    token_hash = UnicodeAttribute(hash_key=True)


@db.register
class MembershipModel(db.Model):
    """A membership that began as an invitation (members added straight to teams have no
    item: their membership is their team refs). Its id is ``membership_id(organization,
    user_id)`` (accounts.render): for a new email the user id is reserved at invitation and
    the user created with it on acceptance, so the id never changes.

    ``team_ids``: the teams the invitation puts the person on when accepted. Only the
    SHA-256 of the invitation link's token is stored, until it is used."""

    Meta = db.table("organization-memberships")

    id = UnicodeAttribute(hash_key=True)
    organization = UnicodeAttribute()
    email = UnicodeAttribute()  # lower case
    user_id = UnicodeAttribute()
    status = UnicodeAttribute()  # "invited", then "active"
    team_ids = UnicodeSetAttribute(default=set)
    token_hash = UnicodeAttribute(null=True)
    expires_at = UTCDateTimeAttribute(null=True)
    invited_by = UnicodeAttribute(null=True)
    # True once the link went out by mail (to the invited address). Unset: no mail carried it
    # (no SMTP), so whoever holds the link may not own the address: a person who joins
    # through it gets an account whose email is unconfirmed (``UserModel.email_unconfirmed``).
    mailed = BooleanAttribute(null=True)
    created_at = UTCDateTimeAttribute()
    by_organization = MembershipsByOrganization()
    by_user = MembershipsByUser()
    by_token = MembershipsByToken()
    by_email = MembershipsByEmail()


def insert_membership(item: MembershipModel) -> bool:
    """Save a new invitation; False when its id (the organization and user) is taken."""
    try:
        item.save(condition=MembershipModel.id.does_not_exist())
    except PutError as exc:
        if db.conditional_failure(exc):
            return False
        raise
    return True


def mark_invitation_mailed(item: MembershipModel, event: Event) -> None:
    """Record that the invitation's link went out by mail, with the invitation's audit
    ``event`` (the event alone when it was withdrawn meanwhile)."""
    try:
        with TransactWrite(connection=db.connection()) as tx:
            tx.update(
                item,
                actions=[MembershipModel.mailed.set(True)],
                condition=MembershipModel.id.exists(),
            )
            trail.record_in(tx, event)
    except TransactWriteError as exc:
        if db.cancellation_codes(exc)[:1] != [db.TRANSACTION_CONDITION_FAILED]:
            raise
        trail.record(event)


def delete_membership(membership_id: str, event: Event) -> None:
    """Delete a membership's item (none for a member added straight to teams: nothing to
    delete) with its audit ``event``, in one transaction."""
    with TransactWrite(connection=db.connection()) as tx:
        tx.delete(MembershipModel(membership_id))
        trail.record_in(tx, event)


# Accepting an invitation: it becomes an active membership and forgets its token, on the
# condition that it is still the invitation of the token it was read with.
def _accepted() -> list[Action]:
    return [
        MembershipModel.status.set("active"),
        MembershipModel.token_hash.remove(),
        MembershipModel.expires_at.remove(),
    ]


def _still_invited(token_hash: str) -> Condition:
    return (MembershipModel.token_hash == token_hash) & (MembershipModel.status == "invited")


def use_invitation(item: MembershipModel, token_hash: str, event: Event) -> bool:
    """Mark the invitation accepted and forget its token, once, with its audit ``event``:
    False when another request used it first (the condition is the token it was read
    with): nothing is written."""
    try:
        with TransactWrite(connection=db.connection()) as tx:
            tx.update(item, actions=_accepted(), condition=_still_invited(token_hash))
            trail.record_in(tx, event)
    except TransactWriteError as exc:
        if db.cancellation_codes(exc)[:1] == [db.TRANSACTION_CONDITION_FAILED]:
            return False
        raise
    return True


def accept_invitation_as_new_user(
    item: MembershipModel, token_hash: str, user: UserModel, recorded: list[Event]
) -> str:
    """Use the invitation and create the person it invited, in one transaction with the
    ``recorded`` audit events: mark it accepted (on the token it was read with, as
    ``use_invitation``), claim the username and put the user (its id the one the invitation
    reserved). ``"ok"``; ``"used"`` when another request used (or an owner withdrew) the
    invitation first: nothing is written; ``"taken"`` when the username is taken in any
    case."""
    claim = UsernameClaimModel(claim_key(user.username), user_id=user.id)
    try:
        with TransactWrite(connection=db.connection()) as tx:
            tx.update(
                item,
                actions=_accepted(),
                condition=_still_invited(token_hash),
            )
            tx.save(claim, condition=UsernameClaimModel.id.does_not_exist())
            tx.save(user, condition=UserModel.id.does_not_exist())
            lists.count_update(tx, USER_DIRECTORY, lists.ALL, 1)
            for event in recorded:
                trail.record_in(tx, event)
    except TransactWriteError as exc:
        # PynamoDB sends puts before updates: the claim, the user, the invitation, the count.
        claimed, put, used = (db.cancellation_codes(exc) + [None] * 3)[:3]
        if used == db.TRANSACTION_CONDITION_FAILED:
            return "used"
        if claimed == db.TRANSACTION_CONDITION_FAILED:
            return "taken"
        if put == db.TRANSACTION_CONDITION_FAILED:
            return "used"  # the reserved user exists: the invitation was used
        raise
    return "ok"


def find_invitation(membership_id: str) -> MembershipModel | None:
    try:
        return MembershipModel.get(membership_id)
    except MembershipModel.DoesNotExist:
        return None


def invitation_of_token(token_hash: str) -> MembershipModel | None:
    """The invitation whose link's token has that hash (only unused ones carry one)."""
    return next(iter(MembershipModel.by_token.query(token_hash)), None)


def invitations_of_organization(
    organization: str, email: str | None = None
) -> list[MembershipModel]:
    """The organization's invitations, by email (one Query); ``email``: only that address's."""
    condition = MembershipModel.email == email if email is not None else None
    return list(MembershipModel.by_organization.query(organization, condition))


def invitations_of_user(user_id: str) -> list[MembershipModel]:
    return list(MembershipModel.by_user.query(user_id))


def invitations_of_email(email: str) -> list[MembershipModel]:
    """The invitations of an address (lower case), in every organization."""
    return list(MembershipModel.by_email.query(email))


def change_invitation_teams(membership_id: str, team_id: str, *, add: bool) -> None:
    """Add ``team_id`` to (or take it from) the teams an invitation puts its person on."""
    action = MembershipModel.team_ids.add if add else MembershipModel.team_ids.delete
    MembershipModel(membership_id).update(
        actions=[action({team_id})], condition=MembershipModel.id.exists()
    )
