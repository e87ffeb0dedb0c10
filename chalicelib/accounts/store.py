"""PynamoDB models of organizations, users and teams.

Memberships are kept on both sides (``TeamModel.user_ids`` and ``UserModel.team_refs``) so
that a permission check is a GetItem of the user plus a BatchGet of their teams in one
organization, and a team's member list is a single GetItem.

The writes that carry a condition live here too: each does the DynamoDB write and reports
the outcome (a ``bool`` where a failed condition is an expected answer); the service
decides which error the caller gets.
"""

from __future__ import annotations

from typing import Any

from pynamodb.attributes import (
    BooleanAttribute,
    JSONAttribute,
    MapAttribute,
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

from chalicelib.core.auth import TokenModel, TtlCache
from chalicelib.core.data import db, lists
from chalicelib.core.settings import get_settings

DIRECTORY = "organizations"


class OrganizationDirectory(GlobalSecondaryIndex):
    """Every organization under one constant key, so listing all of them is a Query."""

    class Meta:
        index_name = "directory"
        projection = AllProjection()

    directory = UnicodeAttribute(hash_key=True)
    name = UnicodeAttribute(range_key=True)


@db.register
class OrganizationModel(db.Model):
    Meta = db.table("organizations")

    name = UnicodeAttribute(hash_key=True)
    external_id = UnicodeAttribute()
    email = UnicodeAttribute()
    directory = UnicodeAttribute(default=DIRECTORY)
    collaborator_auth_policy = UnicodeAttribute(default="password")
    cost_estimation_enabled = BooleanAttribute(default=False)
    session_timeout = UnicodeAttribute(null=True)
    # The organization's single token: its id and the hash it is stored under.
    token_id = UnicodeAttribute(null=True)
    token_hash = UnicodeAttribute(null=True)
    created_at = UTCDateTimeAttribute()
    updated_at = UTCDateTimeAttribute()
    # Module sharing (site admins set it, chalicelib.admin): the organizations that may read
    # this one's private modules through the registry protocol, or every one of them.
    module_consumers = UnicodeSetAttribute(null=True)
    global_module_sharing = BooleanAttribute(null=True)
    # The other attributes the admin API sets and shows (kebab names: access-beta-tools,
    # is-disabled, the worker timeouts ...).
    admin_values = JSONAttribute(null=True)
    by_directory = OrganizationDirectory()


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
    # Set on the users SCIM provisioned (chalicelib.scim): only those may it link again.
    scim_provisioned = BooleanAttribute(null=True)
    # SCIM's userName for the user and when SCIM last wrote it (``scim-username``,
    # ``scim-updated-at``), kept by chalicelib.scim through ``service.set_scim_identity``.
    scim_username = UnicodeAttribute(null=True)
    scim_updated_at = UTCDateTimeAttribute(null=True)
    # Set while a site admin suspends the user: its tokens carry the flag too (core.auth).
    suspended = BooleanAttribute(null=True)
    # Set while the suspension is SCIM's (its identity provider deactivated or deleted it):
    # SCIM lifts only a suspension of its own (``accounts.service.set_suspended``).
    suspended_by_scim = BooleanAttribute(null=True)
    # "<organization>/<team id>" for every team the user belongs to.
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

    def two_factor(self) -> dict[str, bool]:
        """The ``two-factor`` attribute of a rendered user (TFE's shape)."""
        on = self.totp_secret is not None
        return {"enabled": on, "verified": on}


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
    try:
        return UserModel.get(user_id, consistent_read=True)
    except UserModel.DoesNotExist:
        return None


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


def get_organization(name: str) -> OrganizationModel | None:
    try:
        return OrganizationModel.get(name)
    except OrganizationModel.DoesNotExist:
        return None


# organization name -> whether a site admin disabled it (``is-disabled``), for the token
# cache's window: ``accounts.authorization.refuse_disabled`` reads it on every organization
# access.
_disabled = TtlCache(lambda: get_settings().token_cache_ttl)


def is_disabled(org: OrganizationModel | None) -> bool:
    return bool(org is not None and (org.admin_values or {}).get("is-disabled"))


def known_disabled(name: str) -> bool | None:
    """Whether ``name`` is disabled as this instance last read it (None: not known)."""
    return _disabled.get(name)


def note_disabled(name: str, org: OrganizationModel | None) -> bool:
    """Remember what an organization item just read says (a missing one: not disabled)."""
    flag = is_disabled(org)
    _disabled.put(name, flag)
    return flag


def forget_disabled(name: str) -> None:
    _disabled.forget(name)


class TeamsByOrganization(GlobalSecondaryIndex):
    class Meta:
        index_name = "by-organization"
        projection = AllProjection()

    organization = UnicodeAttribute(hash_key=True)
    name = UnicodeAttribute(range_key=True)


class TeamList(GlobalSecondaryIndex):
    """The lean index of an organization's teams (``chalicelib.core.data.lists``): keys only
    (organization, name, id: about 60 bytes a team), in the list's order."""

    class Meta:
        index_name = "list"
        projection = KeysOnlyProjection()

    organization = UnicodeAttribute(hash_key=True)
    name = UnicodeAttribute(range_key=True)


class OrganizationAccess(MapAttribute):
    manage_modules = BooleanAttribute(default=False)
    manage_workspaces = BooleanAttribute(default=False)
    manage_policies = BooleanAttribute(default=False)
    manage_providers = BooleanAttribute(default=False)
    manage_vcs_settings = BooleanAttribute(default=False)
    manage_membership = BooleanAttribute(default=False)
    manage_projects = BooleanAttribute(default=False)
    read_workspaces = BooleanAttribute(default=False)
    read_projects = BooleanAttribute(default=False)


ACCESS_FLAGS = [name for name in OrganizationAccess.get_attributes()]


@db.register
class TeamModel(db.Model):
    Meta = db.table("teams")

    id = UnicodeAttribute(hash_key=True)
    organization = UnicodeAttribute()
    name = UnicodeAttribute()
    visibility = UnicodeAttribute(default="secret")
    sso_team_id = UnicodeAttribute(null=True)
    access = OrganizationAccess(default=OrganizationAccess)
    user_ids = UnicodeSetAttribute(default=set)
    # The team's single token: its id and the hash it is stored under.
    token_id = UnicodeAttribute(null=True)
    token_hash = UnicodeAttribute(null=True)
    created_at = UTCDateTimeAttribute()
    # Set while the team follows a SCIM group (chalicelib.scim keeps its members in step).
    scim_group_name = UnicodeAttribute(null=True)
    scim_sync_paused = BooleanAttribute(null=True)
    by_organization = TeamsByOrganization()
    listed = TeamList()

    @property
    def is_owners(self) -> bool:
        return self.name == "owners"


# ----- writes -------------------------------------------------------------------------------


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


def confirm_email_change(user: UserModel, link_hash: str) -> bool:
    """Make the waiting address the user's email, once: False when the link was used or
    replaced meanwhile (the condition is the link it was read with)."""
    email = user.unconfirmed_email or ""
    try:
        user.update(
            actions=[
                UserModel.email.set(email),
                UserModel.email_key.set(email_key(email)),
                UserModel.email_unconfirmed.remove(),  # the mailbox answered: confirmed
                *_forget_email_change(),
            ],
            condition=(UserModel.email_link_hash == link_hash)
            & (UserModel.unconfirmed_email == email),
        )
    except UpdateError as exc:
        if db.conditional_failure(exc):
            return False
        raise
    return True


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


def user_count() -> int | None:
    """The kept number of users (None before ``backfill_user_directory`` or any new user)."""
    return lists.counts(USER_DIRECTORY).get(lists.ALL)


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


def insert_organization(org: OrganizationModel) -> bool:
    """Save a new organization; False when its name (the key) is already taken."""
    try:
        org.save(condition=OrganizationModel.name.does_not_exist())
    except PutError as exc:
        if db.conditional_failure(exc):
            return False
        raise
    return True


def insert_team(team: TeamModel) -> None:
    """Save a new team. Its id is freshly minted; names are checked unique before."""
    team.save(condition=TeamModel.id.does_not_exist())


def add_team_members(team: TeamModel, user_ids: list[str]) -> None:
    """Record membership on both sides: each user's ``team_refs``, then the team's ``user_ids``.

    The user updates require the user to exist: an UpdateItem on a missing key would create
    a stub user item. A user gone meanwhile fails the call.
    """
    ref = f"{team.organization}/{team.id}"
    for user_id in user_ids:
        UserModel(user_id).update(
            actions=[UserModel.team_refs.add({ref})], condition=UserModel.id.exists()
        )
    if user_ids:
        team.update(actions=[TeamModel.user_ids.add(set(user_ids))])


def remove_team_members(team: TeamModel, user_ids: list[str]) -> None:
    """Undo ``add_team_members``. A user gone meanwhile is skipped (without re-creating it)."""
    ref = f"{team.organization}/{team.id}"
    for user_id in user_ids:
        try:
            UserModel(user_id).update(
                actions=[UserModel.team_refs.delete({ref})], condition=UserModel.id.exists()
            )
        except UpdateError as exc:
            if not db.conditional_failure(exc):
                raise
    if user_ids:
        team.update(actions=[TeamModel.user_ids.delete(set(user_ids))])


def set_scim_link(team_id: str, group_name: str | None, paused: bool) -> None:
    """Record (or, with no group, forget) the SCIM group a team follows; a team deleted
    meanwhile is left alone (never re-created as a stub)."""
    actions: list[Action]
    if group_name is None:
        actions = [TeamModel.scim_group_name.remove(), TeamModel.scim_sync_paused.remove()]
    else:
        actions = [
            TeamModel.scim_group_name.set(group_name),
            TeamModel.scim_sync_paused.set(paused),
        ]
    try:
        TeamModel(team_id).update(actions=actions, condition=TeamModel.id.exists())
    except UpdateError as exc:
        if not db.conditional_failure(exc):
            raise


def delete_token(token_hash: str | None) -> None:
    if token_hash:
        TokenModel(token_hash).delete()


def replace_held_token(holder: TeamModel | OrganizationModel, token: TokenModel) -> bool:
    """Make the freshly minted ``token`` the single token of a team or organization, and
    delete the one it held before.

    The swap is conditional on the hash ``holder`` was read with, so two concurrent rotations
    cannot both succeed and leave an untracked live token. When the swap fails, ``token`` is
    deleted; the result is False when another rotation won.
    """
    model = type(holder)
    old_hash = holder.token_hash
    expected = model.token_hash == old_hash if old_hash else model.token_hash.does_not_exist()
    try:
        holder.update(
            actions=[model.token_id.set(token.id), model.token_hash.set(token.token_hash)],
            condition=expected,
        )
    except UpdateError as exc:
        token.delete()
        if db.conditional_failure(exc):
            return False
        raise
    delete_token(old_hash)
    return True


def drop_held_token(holder: TeamModel | OrganizationModel, token: TokenModel) -> None:
    """Forget a team's or organization's single ``token``, then delete it."""
    model = type(holder)
    holder.update(actions=[model.token_id.remove(), model.token_hash.remove()])
    token.delete()


# ----- organization memberships and invitations ----------------------------------------------


def member_ref(organization: str) -> str:
    """The ``team_refs`` entry of a member who joined through an invitation: the
    organization's prefix with no team id. Readers that ask "is this user in the
    organization?" (a ref starting ``<organization>/``) count it as every team ref; readers
    of team ids skip it (``team_ids_of``)."""
    return f"{organization}/"


def team_ids_of(user: UserModel, organization: str) -> list[str]:
    """The ids of ``organization``'s teams the user is on (the membership ref left out)."""
    prefix = member_ref(organization)
    return sorted(
        ref[len(prefix) :]
        for ref in user.team_refs or ()
        if ref.startswith(prefix) and ref != prefix
    )


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


def mark_invitation_mailed(item: MembershipModel) -> None:
    """Record that the invitation's link went out by mail (nothing when it was withdrawn
    meanwhile)."""
    try:
        item.update(
            actions=[MembershipModel.mailed.set(True)], condition=MembershipModel.id.exists()
        )
    except UpdateError as exc:
        if not db.conditional_failure(exc):
            raise


def use_invitation(item: MembershipModel, token_hash: str) -> bool:
    """Mark the invitation accepted and forget its token, once: False when another request
    used it first (the condition is the token it was read with)."""
    try:
        item.update(
            actions=[
                MembershipModel.status.set("active"),
                MembershipModel.token_hash.remove(),
                MembershipModel.expires_at.remove(),
            ],
            condition=(MembershipModel.token_hash == token_hash)
            & (MembershipModel.status == "invited"),
        )
    except UpdateError as exc:
        if db.conditional_failure(exc):
            return False
        raise
    return True


def accept_invitation_as_new_user(item: MembershipModel, token_hash: str, user: UserModel) -> str:
    """Use the invitation and create the person it invited, in one transaction: mark it
    accepted (on the token it was read with, as ``use_invitation``), claim the username and
    put the user (its id the one the invitation reserved). ``"ok"``; ``"used"`` when another
    request used (or an owner withdrew) the invitation first: nothing is written;
    ``"taken"`` when the username is taken in any case."""
    claim = UsernameClaimModel(claim_key(user.username), user_id=user.id)
    try:
        with TransactWrite(connection=db.connection()) as tx:
            tx.update(
                item,
                actions=[
                    MembershipModel.status.set("active"),
                    MembershipModel.token_hash.remove(),
                    MembershipModel.expires_at.remove(),
                ],
                condition=(MembershipModel.token_hash == token_hash)
                & (MembershipModel.status == "invited"),
            )
            tx.save(claim, condition=UsernameClaimModel.id.does_not_exist())
            tx.save(user, condition=UserModel.id.does_not_exist())
            lists.count_update(tx, USER_DIRECTORY, lists.ALL, 1)
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
