"""The users table: users, their username claims and the kept count of active site admins.

Memberships are kept on both sides (``TeamModel.user_ids`` and ``UserModel.team_refs``) so
that a permission check is a GetItem of the user plus a BatchGet of their teams in one
organization, and a team's member list is a single GetItem. Whether a user is a member of
an organization is decided by ``UserModel.is_member`` (its refs), and nowhere else.

Every read of the table happens here (and in ``backfill``, run once per deployment); the
writes that carry a condition live here too: each does the DynamoDB write and reports the
outcome (a ``bool`` where a failed condition is an expected answer); the services decide
which error the caller gets.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from pynamodb.attributes import (
    BooleanAttribute,
    JSONAttribute,
    NumberAttribute,
    UnicodeAttribute,
    UnicodeSetAttribute,
    UTCDateTimeAttribute,
)
from pynamodb.exceptions import PutError, TransactWriteError, UpdateError
from pynamodb.expressions.update import Action
from pynamodb.indexes import (
    AllProjection,
    GlobalSecondaryIndex,
    IncludeProjection,
    KeysOnlyProjection,
)
from pynamodb.transactions import TransactWrite

from chalicelib.core.audit import trail
from chalicelib.core.auth import TtlCache
from chalicelib.core.data import db, lists
from chalicelib.core.settings import get_settings

if TYPE_CHECKING:
    from pynamodb.expressions.condition import Condition

    from chalicelib.core.audit.events import Event


class UserByName(GlobalSecondaryIndex):
    class Meta:
        index_name = "by-username"
        projection = AllProjection()

    username = UnicodeAttribute(hash_key=True)


class UserByEmail(GlobalSecondaryIndex):
    """Users by their email address in lower case (``email_key``): finding a user by email
    is a Query, not a Scan. Keys only (about 80 bytes a user); the caller reads the user.
    Sparse: username claims carry no ``email_key``."""

    class Meta:
        index_name = "by-email"
        projection = KeysOnlyProjection()

    email_key = UnicodeAttribute(hash_key=True)


# The ``directory`` value of every user item (claims have none): the one partition of the
# ``user-directory`` index, and the scope of the kept count of users (``lists.CountModel``).
USER_DIRECTORY = "users"


class UserDirectory(GlobalSecondaryIndex):
    """Every user under one key, by its username in any case (``username_key``): a page of
    the site admin's user list is one Query of this index (up to the page's end) and one
    BatchGetItem of the page's users, whatever the number of users; a username-prefix search
    is a ``begins_with`` on the range key. It projects what the filters read (the username,
    the email key and the two flags: about 120 bytes a user). Sparse: claims carry no
    ``directory``; users made before it get one from ``backfill_user_directory``."""

    class Meta:
        index_name = "user-directory"
        projection = IncludeProjection(["username", "email_key", "is_site_admin", "suspended"])

    directory = UnicodeAttribute(hash_key=True)
    username_key = UnicodeAttribute(range_key=True)


def username_key(username: str) -> str:
    """How the user directory orders and searches usernames: casefolded."""
    return username.casefold()


def email_key(email: str) -> str:
    """How an email address is looked up: in lower case, as invitations store it."""
    return email.strip().lower()


@db.register
class UserModel(db.Model):
    Meta = db.table("users")

    id = UnicodeAttribute(hash_key=True)
    username = UnicodeAttribute()
    email = UnicodeAttribute()
    is_site_admin = BooleanAttribute(default=False)
    # A site auditor reads the site's audit trail and nothing else of site administration
    # (granted and revoked by site admins: ``users.service.set_site_auditor``).
    is_site_auditor = BooleanAttribute(null=True)
    # Set on the users SCIM provisioned (chalicelib.scim): only those may it link again.
    scim_provisioned = BooleanAttribute(null=True)
    # SCIM's userName for the user and when SCIM last wrote it (``scim-username``,
    # ``scim-updated-at``), kept by chalicelib.scim through ``users.service.set_scim_identity``.
    scim_username = UnicodeAttribute(null=True)
    scim_updated_at = UTCDateTimeAttribute(null=True)
    # Set while a site admin suspends the user: its tokens carry the flag too (core.auth).
    suspended = BooleanAttribute(null=True)
    # Set while the suspension is SCIM's (its identity provider deactivated or deleted it):
    # SCIM lifts only a suspension of its own (``users.service.set_suspended``).
    suspended_by_scim = BooleanAttribute(null=True)
    # "<organization>/<team id>" for every team the user belongs to, and "<organization>/"
    # (``member_ref``) for an organization joined through an invitation: ``is_member``.
    team_refs = UnicodeSetAttribute(default=set)
    created_at = UTCDateTimeAttribute()
    # The argon2id hash of the user's password (accounts.passwords); None: no password.
    password_hash = UnicodeAttribute(null=True)
    by_username = UserByName()
    # ``email`` in lower case, the key of the ``by-email`` index (``email_key``); kept with
    # every write of ``email`` (``backfill_email_keys`` for users made before it).
    email_key = UnicodeAttribute(null=True)
    by_email = UserByEmail()
    # A changed email address waiting for its confirmation (``PATCH /account/update``): the
    # address, the SHA-256 of the mailed link's secret (``core.auth.hash_token``) and when
    # the link stops working. The user keeps ``email`` until the link is followed.
    unconfirmed_email = UnicodeAttribute(null=True)
    email_link_hash = UnicodeAttribute(null=True)
    email_link_expires_at = UTCDateTimeAttribute(null=True)
    # Set while nobody has shown that ``email`` reaches the account's owner: an account made
    # from an invitation link no mail carried (whoever held the link chose its password).
    # Single sign-on never links to such an account; following a confirmation link mailed
    # to the address (``account``: the same link as a changed address) clears it.
    email_unconfirmed = BooleanAttribute(null=True)
    # ``USER_DIRECTORY`` and the casefolded username: the keys of the ``user-directory``
    # index, kept with every write of ``username`` (``backfill_user_directory`` for users
    # made before it).
    directory = UnicodeAttribute(null=True)
    username_key = UnicodeAttribute(null=True)
    user_directory = UserDirectory()

    # Every write forgets this instance's cached copy (``cached_user``) at once.
    def save(self, *args: Any, **kwargs: Any) -> Any:
        result = super().save(*args, **kwargs)
        _users.forget(self.id)
        return result

    def update(self, *args: Any, **kwargs: Any) -> Any:
        result = super().update(*args, **kwargs)
        _users.forget(self.id)
        return result

    def delete(self, *args: Any, **kwargs: Any) -> Any:
        result = super().delete(*args, **kwargs)
        _users.forget(self.id)
        return result

    # Two-factor sign-in (``accounts.twofactor``): the TOTP secret sealed with KMS (pending
    # until confirmed with a code), the time step of the last code accepted (a code works
    # once), the SHA-256 of each unused recovery code. A password reset link
    # (``accounts.resets``): the SHA-256 of its secret and when it expires.
    totp_secret = JSONAttribute(null=True)
    totp_pending = JSONAttribute(null=True)
    totp_last_step = NumberAttribute(null=True)
    recovery_hashes = UnicodeSetAttribute(null=True)
    reset_hash = UnicodeAttribute(null=True)
    reset_expires_at = UTCDateTimeAttribute(null=True)

    @property
    def may_sign_in(self) -> bool:
        """Whether this user may sign in at all: the one rule every way in asks (a password,
        a two-factor code, a reset link, SAML). A suspended user may not: a site admin
        suspended it, or its identity provider deactivated or deleted it through SCIM (which
        suspends, as TFE does); a deleted user has no item to ask. API tokens carry the
        suspension themselves (``core.auth``)."""
        return not self.suspended

    def is_member(self, organization: str) -> bool:
        """Whether the user is a member of ``organization``: on one of its teams, or joined
        through an invitation (``member_ref``). The one place that decides it."""
        prefix = member_ref(organization)
        return any(ref.startswith(prefix) for ref in self.team_refs or ())

    def organizations(self) -> list[str]:
        """The names of the organizations the user is a member of (``is_member``), sorted."""
        return sorted({ref.split("/", 1)[0] for ref in self.team_refs or ()})

    def team_ids(self, organization: str) -> list[str]:
        """The ids of ``organization``'s teams the user is on (the membership ref left out)."""
        prefix = member_ref(organization)
        return sorted(
            ref[len(prefix) :]
            for ref in self.team_refs or ()
            if ref.startswith(prefix) and ref != prefix
        )

    def two_factor(self) -> dict[str, bool]:
        """The ``two-factor`` attribute of a rendered user (TFE's shape)."""
        on = self.totp_secret is not None
        return {"enabled": on, "verified": on}


def member_ref(organization: str) -> str:
    """The ``team_refs`` entry of a member who joined through an invitation: the
    organization's prefix with no team id. ``UserModel.is_member`` counts it as every team
    ref; ``UserModel.team_ids`` skips it."""
    return f"{organization}/"


CLAIM_PREFIX = "username#"


class UsernameClaimModel(db.Model):
    """The claim of a username, case-insensitively: an item of the users table keyed
    ``username#`` + the casefolded name, naming its user. Put in the transaction that puts the
    user, so two usernames differing only in case cannot both exist (``ADMIN`` next to
    ``admin``). It lives in the users table (every function that writes users may write it;
    the ``by-username`` index skips it, having no ``username``); no user id has its prefix."""

    Meta = db.table("users")

    id = UnicodeAttribute(hash_key=True)
    user_id = UnicodeAttribute()


def claim_key(username: str) -> str:
    return CLAIM_PREFIX + username.casefold()


def is_user_key(key: str) -> bool:
    """Whether ``key`` may name a user: the users table also holds the username claims and
    the kept count of site admins (``AdminCountModel``)."""
    return not key.startswith(CLAIM_PREFIX) and key != ADMIN_COUNT_KEY


# ----- the kept count of active site admins ---------------------------------------------------

ADMIN_COUNT_KEY = "count#active-site-admins"


class AdminCountModel(db.Model):
    """The number of active site admins (``is_site_admin`` and not ``suspended``): one item
    of the users table, keyed ``ADMIN_COUNT_KEY`` (no user id has that form; it carries no
    username, directory nor email key, so no index and no user scan shows it). It lives
    with the users so that every function that writes users may write it, in the same
    transaction as the user's change.

    The site keeps one active site admin at least: every write that makes a user stop
    being one (demotion, suspension, deletion, by any path) decrements it on the condition
    that it stays at 1 or more, in one TransactWriteItems with the user's change, itself
    conditioned on the flags it was read with (``write_admin_change``). Two demotions
    racing each other cannot both pass: DynamoDB serializes the two transactions on the
    counter, and the second one's condition fails. A write that makes a user an active
    site admin increments it, on the condition that it exists.

    Data written before it has no counter: the first write that needs it (or ``python -m
    infrastructure.backfill``) counts the active site admins once (a consistent Scan of the
    users, ``backfill_admin_count``) and puts it only if it is still absent."""

    Meta = db.table("users")

    id = UnicodeAttribute(hash_key=True)
    admins = NumberAttribute()


def _active_admin(user: UserModel) -> bool:
    return bool(user.is_site_admin) and not user.suspended


def _flags_as_read(user: UserModel) -> Any:
    """The condition that the user exists and its two flags are still as ``user`` has them."""
    admin = (
        UserModel.is_site_admin == True  # noqa: E712 - a DynamoDB condition
        if user.is_site_admin
        else UserModel.is_site_admin.does_not_exist() | (UserModel.is_site_admin == False)  # noqa: E712
    )
    suspended = (
        UserModel.suspended == True  # noqa: E712
        if user.suspended
        else UserModel.suspended.does_not_exist() | (UserModel.suspended == False)  # noqa: E712
    )
    return UserModel.id.exists() & admin & suspended


def _count_admins(tx: TransactWrite, delta: int) -> None:
    """Change the kept count inside ``tx``: a decrement only while it stays at 1 or more,
    an increment only once the count exists (``backfill_admin_count``)."""
    counter = AdminCountModel(ADMIN_COUNT_KEY)
    condition = AdminCountModel.admins > 1 if delta < 0 else AdminCountModel.admins.exists()
    tx.update(counter, actions=[AdminCountModel.admins.add(delta)], condition=condition)


def admin_count() -> int | None:
    """The kept number of active site admins (None: not derived yet), read consistently."""
    try:
        return int(AdminCountModel.get(ADMIN_COUNT_KEY, consistent_read=True).admins)
    except AdminCountModel.DoesNotExist:
        return None


def backfill_admin_count() -> dict[str, int]:
    """Count the active site admins (a consistent Scan of the users: once per deployment)
    and put the count unless one exists already (then it is kept: transactions keep it
    exact from then on). Idempotent; also run by the first write that needs the count."""
    kept = admin_count()
    if kept is not None:
        return {"kept": kept}
    admins = UserModel.is_site_admin == True  # noqa: E712 - a DynamoDB condition
    found = UserModel.scan(
        filter_condition=admins & UserModel.username.exists(), consistent_read=True
    )
    counted = sum(1 for user in found if _active_admin(user))
    try:
        AdminCountModel(ADMIN_COUNT_KEY, admins=counted).save(
            condition=AdminCountModel.id.does_not_exist()
        )
    except PutError as exc:  # another instance derived it first: that one stands
        if not db.conditional_failure(exc):
            raise
        return {"kept": admin_count() or 0}
    return {"counted": counted}


def read_for_change(user_id: str) -> UserModel | None:
    """The user as a flag change reads it (consistently: its condition is what it read)."""
    return read_user(user_id, consistent=True)


def write_admin_change(
    user: UserModel, actions: list[Action] | None, *, admin: bool, suspended: bool
) -> str:
    """Change a user read by ``read_for_change`` so that its flags become ``admin`` and
    ``suspended`` (``actions`` sets them; None deletes the user, with its place in the kept
    count of users), in one transaction with the kept count of active site admins when the
    change makes it one more or one fewer.

    ``"ok"``; ``"changed"``: the user is gone or its flags are no longer as read (read it
    again); ``"last"``: it is the last active site admin (nothing written); ``"uncounted"``:
    the count is not derived yet (``backfill_admin_count``, then again)."""
    active_after = admin and not suspended and actions is not None
    delta = int(active_after) - int(_active_admin(user))
    try:
        with TransactWrite(connection=db.connection()) as tx:
            if actions is None:
                tx.delete(user, condition=_flags_as_read(user))
            else:
                tx.update(user, actions=actions, condition=_flags_as_read(user))
            if delta:
                _count_admins(tx, delta)
            if actions is None:
                lists.count_update(tx, USER_DIRECTORY, lists.ALL, -1)
    except TransactWriteError as exc:  # sent as: the user, the admin count, the user count
        codes = db.cancellation_codes(exc) + [None, None]
        if codes[0] == db.TRANSACTION_CONDITION_FAILED:
            return "changed"
        if delta and codes[1] == db.TRANSACTION_CONDITION_FAILED:
            return "last" if delta < 0 and admin_count() is not None else "uncounted"
        raise
    finally:
        _users.forget(user.id)
    return "ok"


def user_id_of_name(username: str) -> str | None:
    """The id of the user holding ``username`` in any case (None: nobody, or no claim yet)."""
    try:
        return UsernameClaimModel.get(claim_key(username), consistent_read=True).user_id
    except UsernameClaimModel.DoesNotExist:
        return None


def read_user(user_id: str, *, consistent: bool = False) -> UserModel | None:
    """The user of that id (None: none). The caller checks ``is_user_key`` first where the
    id comes from a request."""
    try:
        return UserModel.get(user_id, consistent_read=consistent)
    except UserModel.DoesNotExist:
        return None


def user_by_username(username: str) -> UserModel | None:
    """The user of exactly ``username`` on the ``by-username`` index (users made before the
    claims; ``user_id_of_name`` first)."""
    return next(iter(UserModel.by_username.query(username)), None)


def users_by_ids(user_ids: list[str]) -> list[UserModel]:
    """The users of those ids (one BatchGetItem per hundred; gone ones left out)."""
    return list(UserModel.batch_get(user_ids)) if user_ids else []


def all_users() -> list[UserModel]:
    """Every user (a Scan of the users table, its claims and count left out)."""
    return list(UserModel.scan(filter_condition=UserModel.username.exists()))


def directory_entries(prefix: str = "") -> list[Any]:
    """The ``user-directory`` index's entries (their usernames starting ``prefix`` in any
    case), by username: the projected flags only, not full users."""
    condition = UserModel.username_key.startswith(username_key(prefix)) if prefix else None
    return list(UserModel.user_directory.query(USER_DIRECTORY, condition))


# user id -> UserModel | None, for the token cache's window (see ``cached_user``).
_users = TtlCache(lambda: get_settings().token_cache_ttl)


def cached_user(user_id: str) -> UserModel | None:
    """The user as this instance last read it, at most ``token_cache_ttl`` seconds ago: the
    registry protocol's hot path asks on every request which organizations a user reads.
    A change made through another instance (a membership, a site-admin flag) takes effect
    here within that window, as a token revocation does."""
    return cached_user_with(user_id)[0]


def cached_user_with(user_id: str, *wanted: tuple[Any, Any, Any]) -> tuple[Any, list[Any]]:
    """``cached_user``, and the items ``wanted`` (each ``(model, hash_key, range_key)``)
    read in the same round trip when the user is not cached: one BatchGetItem instead of
    several GetItems on a cold instance's hot path. An item is None when missing."""
    found = _users.get(user_id)
    items: list[Any] = []
    if found is None:
        found, *items = db.get_together((UserModel, user_id, None), *wanted)
        found = found or False
        _users.put(user_id, found)
    elif wanted:
        items = db.get_together(*wanted)
    return found or None, items


def insert_user(user: UserModel) -> bool:
    """Claim the username and put the new user, in one transaction; False when the username
    is taken in any case. Its id is freshly minted, so a taken id is an error."""
    claim = UsernameClaimModel(claim_key(user.username), user_id=user.id)
    for _ in range(2):  # a new active site admin counts itself: once the count exists
        try:
            with TransactWrite(connection=db.connection()) as tx:
                tx.save(claim, condition=UsernameClaimModel.id.does_not_exist())
                tx.save(user, condition=UserModel.id.does_not_exist())
                lists.count_update(tx, USER_DIRECTORY, lists.ALL, 1)
                if _active_admin(user):
                    _count_admins(tx, 1)
        except TransactWriteError as exc:  # sent as: claim, user, user count, admin count
            codes = db.cancellation_codes(exc)
            if codes[:1] == [db.TRANSACTION_CONDITION_FAILED]:
                return False
            if codes[3:4] == [db.TRANSACTION_CONDITION_FAILED]:
                backfill_admin_count()
                continue
            raise
        return True
    raise RuntimeError("the count of active site admins could not be derived")


def user_ids_with_email(email: str, limit: int = 2) -> list[str]:
    """The ids of (at most ``limit``) users with this email address in any case: one Query
    of the ``by-email`` index."""
    return [u.id for u in UserModel.by_email.query(email_key(email), limit=limit)]


def rename_user(user: UserModel, username: str) -> bool:
    """Give ``user`` a new username, in one transaction with the claims: claim the new name,
    release the old one, and change the user only if its name is still the one read. False
    when the name is taken (in any case) or the user changed meanwhile. A change of case
    only keeps the claim it has."""
    old_key, new_key = claim_key(user.username), claim_key(username)
    condition = UserModel.username == user.username
    try:
        with TransactWrite(connection=db.connection()) as tx:
            if new_key != old_key:
                tx.save(
                    UsernameClaimModel(new_key, user_id=user.id),
                    condition=UsernameClaimModel.id.does_not_exist(),
                )
                tx.delete(  # a user made before the claims may hold none
                    UsernameClaimModel(old_key),
                    condition=UsernameClaimModel.id.does_not_exist()
                    | (UsernameClaimModel.user_id == user.id),
                )
            tx.update(
                user,
                actions=[
                    UserModel.username.set(username),
                    UserModel.username_key.set(username_key(username)),
                ],
                condition=condition,
            )
    except TransactWriteError as exc:
        if db.TRANSACTION_CONDITION_FAILED in db.cancellation_codes(exc):
            return False
        raise
    user.username = username
    _users.forget(user.id)
    return True


def start_email_change(user: UserModel, email: str, link_hash: str, expires_at: Any) -> None:
    """Record a changed email address waiting for its link (a new change replaces an older
    one: only the last link works)."""
    user.update(
        actions=[
            UserModel.unconfirmed_email.set(email),
            UserModel.email_link_hash.set(link_hash),
            UserModel.email_link_expires_at.set(expires_at),
        ],
        condition=UserModel.id.exists(),
    )


def _forget_email_change() -> list[Action]:
    return [
        UserModel.unconfirmed_email.remove(),
        UserModel.email_link_hash.remove(),
        UserModel.email_link_expires_at.remove(),
    ]


def cancel_email_change(user: UserModel) -> None:
    user.update(actions=_forget_email_change(), condition=UserModel.id.exists())


def confirm_email_change(user: UserModel, link_hash: str, event: Event) -> bool:
    """Make the waiting address the user's email, once, with its audit ``event``: False when
    the link was used or replaced meanwhile (the condition is the link it was read with)."""
    email = user.unconfirmed_email or ""
    return change_user(
        user,
        [
            UserModel.email.set(email),
            UserModel.email_key.set(email_key(email)),
            UserModel.email_unconfirmed.remove(),  # the mailbox answered: confirmed
            *_forget_email_change(),
        ],
        (UserModel.email_link_hash == link_hash) & (UserModel.unconfirmed_email == email),
        event,
    )


def change_user(
    user: UserModel, actions: Sequence[Action], condition: Condition | None, event: Event
) -> bool:
    """Change a user (who exists) with the change's audit ``event``, in one transaction:
    False when ``condition`` (or the user's existence) failed, and nothing is written."""
    exists = UserModel.id.exists()
    try:
        with TransactWrite(connection=db.connection()) as tx:
            both = exists if condition is None else exists & condition
            tx.update(user, actions=list(actions), condition=both)
            trail.record_in(tx, event)
    except TransactWriteError as exc:
        if db.cancellation_codes(exc)[:1] == [db.TRANSACTION_CONDITION_FAILED]:
            return False
        raise
    finally:
        _users.forget(user.id)
    return True


def user_count() -> int | None:
    """The kept number of users (None before ``backfill_user_directory`` or any new user)."""
    return lists.counts(USER_DIRECTORY).get(lists.ALL)


def add_member_ref(user_id: str, organization: str) -> None:
    """Make an existing user a member of ``organization`` without a team."""
    UserModel(user_id).update(
        actions=[UserModel.team_refs.add({member_ref(organization)})],
        condition=UserModel.id.exists(),
    )


def remove_member_ref(user_id: str, organization: str) -> None:
    try:
        UserModel(user_id).update(
            actions=[UserModel.team_refs.delete({member_ref(organization)})],
            condition=UserModel.id.exists(),
        )
    except UpdateError as exc:
        if not db.conditional_failure(exc):
            raise
