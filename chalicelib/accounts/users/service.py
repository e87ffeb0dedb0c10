"""Users: who they are (usernames unique in any case, email addresses), their flags (site
admin, suspended) and their deletion.

The site keeps one active site admin at least: a user's flags change in one place
(``_change_flags``), in one transaction with the kept count of them (``store``). The
names of organizations, users and teams share one pattern (``NAME``).
"""

from __future__ import annotations

import re
from typing import Any

from pynamodb.exceptions import UpdateError
from pynamodb.expressions.update import Action

from chalicelib.accounts.teams import store as teams_store
from chalicelib.accounts.tokens import store as tokens_store
from chalicelib.accounts.users import store
from chalicelib.accounts.users.store import UserModel
from chalicelib.core.api import bounds
from chalicelib.core.api.bounds import utf8_length
from chalicelib.core.api.errors import Conflict, NotFound, Unprocessable
from chalicelib.core.api.pagination import Page
from chalicelib.core.audit import events
from chalicelib.core.auth import Principal, hash_token, mint_token
from chalicelib.core.data import db, lists
from chalicelib.core.data.ids import new_id, now

# The names of organizations, users and teams: letters, numbers, - and _.
NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]*\Z")
EMAIL = re.compile(r"^[^@\s]+@[^@\s]+\Z")
MAX_USERNAME = 64
MAX_EMAIL = 254


def get_user(user_id: str, *, consistent: bool = False) -> UserModel:
    """The user of that id, or 404 (``consistent``: as just written, for who wrote it)."""
    if not store.is_user_key(user_id):  # a username claim or the admin count, not a user
        raise NotFound(f"user {user_id} not found")
    user = store.read_user(user_id, consistent=consistent)
    if user is None:
        raise NotFound(f"user {user_id} not found")
    return user


def find_user(user_id: str) -> UserModel | None:
    try:
        return get_user(user_id)
    except NotFound:
        return None


def members_among(organization: str, user_ids: list[str]) -> list[UserModel]:
    """The users of ``user_ids`` who are members of ``organization`` (``is_member``), each
    once, in the order given: ids of no user, or of a non-member, left out (one BatchGetItem
    per hundred ids)."""
    wanted = [u for u in dict.fromkeys(user_ids) if store.is_user_key(u)]
    if not wanted:
        return []
    found = {u.id: u for u in store.users_by_ids(wanted)}
    return [found[u] for u in wanted if u in found and found[u].is_member(organization)]


def shown_as_site_admin(principal: Principal) -> bool:
    """Whether to show the caller the way to site administration: the cached user item (no
    read on a warm instance; a flag changed elsewhere shows within the token cache's window).
    A display hint only: the admin pages and API check ``is_site_admin``."""
    if not principal.is_user:
        return False
    user = store.cached_user(principal.id)
    return bool(user and user.is_site_admin)


def shown_username(principal: Principal) -> str | None:
    """The signed-in user's username for the page header (the cached user item, as
    ``shown_as_site_admin``); None for a team or organization token."""
    if not principal.is_user:
        return None
    user = store.cached_user(principal.id)
    return user.username if user else None


def validate_username(username: str | None, pointer: str = "/data/attributes/username") -> str:
    """422 naming ``pointer`` unless ``username`` is 1 to ``MAX_USERNAME`` letters, numbers,
    - and _ (starting with a letter or number)."""
    if not username or len(username) > MAX_USERNAME or not NAME.match(username):
        raise Unprocessable(
            f"username may contain letters, numbers, - and _ (at most {MAX_USERNAME})",
            pointer=pointer,
        )
    return username


def new_user(
    username: str,
    email: str,
    *,
    site_admin: bool = False,
    scim: bool = False,
    user_id: str | None = None,
    password_hash: str | None = None,
) -> UserModel:
    """A new user's item, its username checked and free (any case), not yet written: the
    caller writes it with its username claim (``store.insert_user``, or an invitation's
    transaction)."""
    validate_username(username, pointer="username")
    if find_user_by_name(username) is not None:
        raise taken_username(username)
    return UserModel(
        user_id or new_id("user"),
        username=username,
        email=email,
        email_key=store.email_key(email),
        directory=store.USER_DIRECTORY,
        username_key=store.username_key(username),
        is_site_admin=site_admin,
        scim_provisioned=scim or None,
        created_at=now(),
        password_hash=password_hash,
    )


def taken_username(username: str, pointer: str | None = None) -> Unprocessable:
    return Unprocessable(f"username {username!r} has already been taken", pointer=pointer)


def create_user(
    username: str,
    email: str,
    *,
    site_admin: bool = False,
    scim: bool = False,
    user_id: str | None = None,
) -> UserModel:
    """A new user; usernames are unique whatever their case (``ADMIN`` is ``admin``'s).
    ``scim``: provisioned by SCIM (which may link it again after deprovisioning);
    ``user_id``: the id an invitation reserved (else a new one)."""
    user = new_user(username, email, site_admin=site_admin, scim=scim, user_id=user_id)
    if not store.insert_user(user):
        raise taken_username(username)
    return user


def find_user_by_name(username: str) -> UserModel | None:
    """The user of ``username`` in any case, as TFE resolves usernames: by its claim, else
    (a user made before the claims, until the backfill) by the exact name. A name longer
    than any (``bounds.NAME`` bytes) names nobody: it is never made a key."""
    if not username or utf8_length(username) > bounds.NAME:
        return None
    user_id = store.user_id_of_name(username)
    if user_id is not None:
        return store.read_user(user_id)
    return store.user_by_username(username)


def find_user_by_email(email: str) -> UserModel | None:
    """The user of that email address (any case), if exactly one has it (SCIM may give two
    users one address): a Query of the ``by-email`` index, then the user."""
    if not email or len(email) > MAX_EMAIL:
        return None
    found = store.user_ids_with_email(email)
    return find_user(found[0]) if len(found) == 1 else None


def bootstrap_admin(token: str | None, username: str = "admin") -> tuple[UserModel, str | None]:
    """Make sure a site admin exists; with ``token``, that this exact token is theirs.

    Returns the admin and the token secret when one was minted (to print once).
    """
    user = find_user_by_name(username)
    if user is None:
        user = create_user(username, f"{username}@localhost", site_admin=True)
    elif not user.is_site_admin:
        set_site_admin(user.id, True)
    if token is not None:
        existing = tokens_store.token_of_hash(hash_token(token))
        if existing is not None:
            if existing.owner_id == user.id:
                return user, None
            existing.delete()
        mint_token("user", user.id, description="initial admin token", secret=token)
        return user, None
    if any(tokens_store.owned_tokens("user", user.id)):
        return user, None
    _, secret = mint_token("user", user.id, description="initial admin token")
    return user, secret


def validate_email(email: str | None) -> str:
    if not email or len(email) > MAX_EMAIL or not EMAIL.match(email):
        raise Unprocessable("email must be a valid email address", pointer="/data/attributes/email")
    return email


def set_site_admin(user_id: str, flag: bool) -> None:
    """Grant or revoke the site-admin flag of an existing user (404 when there is none).
    Revoking it from the last active site admin is a 422 that changes nothing, whoever asks
    (the admin API and pages, SCIM, SAML): ``_change_flags``."""
    _change_flags(user_id, "demoted", admin=flag)


def set_site_auditor(principal: Principal, user_id: str, flag: bool) -> UserModel:
    """Grant or revoke a user's site-auditor flag (site admins: the admin users API), with
    its event; 404 when there is no such user."""
    user = get_user(user_id)
    event = events.event(
        principal,
        organization=None,
        resource_type="user",
        resource_id=user.id,
        action="auditor-granted" if flag else "auditor-revoked",
        meta={"username": user.username},
    )
    flagged = store.UserModel.is_site_auditor
    if not store.change_user(user, [flagged.set(True) if flag else flagged.remove()], None, event):
        raise NotFound(f"user {user_id} not found")
    return get_user(user.id)


def set_user_email(user_id: str, email: str) -> None:
    """The email of an existing user, as its identity provider now says."""
    UserModel(user_id).update(
        actions=[UserModel.email.set(email), UserModel.email_key.set(store.email_key(email))],
        condition=UserModel.id.exists(),
    )


def set_scim_identity(user_id: str, scim_username: str) -> None:
    """What SCIM last wrote of an existing user: its SCIM userName, and now. A user a site
    admin deleted meanwhile is left deleted (SCIM still writes its own record)."""
    try:
        UserModel(user_id).update(
            actions=[
                UserModel.scim_username.set(scim_username),
                UserModel.scim_updated_at.set(now()),
            ],
            condition=UserModel.id.exists(),
        )
    except UpdateError as exc:
        if not db.conditional_failure(exc):
            raise


def all_users() -> list[UserModel]:
    """Every user (a Scan: site administration only), by username."""
    users = store.all_users()
    return sorted(users, key=lambda user: user.username.casefold())


def page_users(
    page: Page, term: str = "", admin: bool | None = None, suspended: bool | None = None
) -> tuple[list[UserModel], int]:
    """One page of the users, by username (any case), and how many match: read on the
    ``user-directory`` index (``store.UserDirectory``), never the users table.

    ``term`` matches the usernames it begins (any case), and the email address it is (any
    case; one Query of the ``by-email`` index, only when it holds an ``@``). ``admin`` and
    ``suspended`` filter on the flags the index projects. Without them the page is one Query
    of the index up to the page's end, one BatchGetItem and the kept count; with them, the
    matching index entries are read (a prefix reads only its own) and the page's users by id.
    """
    term = term.strip()
    if not term and admin is None and suspended is None:
        source = lists.ClaimList(UserModel.user_directory, store.USER_DIRECTORY, _users_of)
        return lists.read_page(source, page, total=store.user_count())
    entries = {e.id: e for e in store.directory_entries(term)}
    known: dict[str, UserModel] = {}
    if "@" in term:
        by_email = [i for i in store.user_ids_with_email(term, limit=10) if i not in entries]
        known = {user.id: user for user in store.users_by_ids(by_email)}
        entries.update(known)

    def keep(user: UserModel) -> bool:
        return (admin is None or bool(user.is_site_admin) == admin) and (
            suspended is None or bool(user.suspended) == suspended
        )

    found = sorted(
        (e for e in entries.values() if keep(e)), key=lambda u: store.username_key(u.username)
    )
    return _users_of(found[page.offset : page.offset + page.size], known), len(found)


def _users_of(entries: list[Any], known: dict[str, UserModel] | None = None) -> list[UserModel]:
    """The full users of index entries, in their order: one BatchGetItem (a page is at most
    100) for those not ``known``; gone ones left out."""
    found = dict(known or {})
    wanted = [e.id for e in entries if e.id not in found]
    found.update((user.id, user) for user in store.users_by_ids(wanted))
    return [found[e.id] for e in entries if e.id in found]


# A flag change reads the user again when another change of its flags got there first.
_CHANGE_ATTEMPTS = 5


def _change_flags(
    user_id: str,
    what: str,
    *,
    admin: bool | None = None,
    suspended: bool | None = None,
    delete: bool = False,
    scim: bool = False,
) -> UserModel | None:
    """Set a user's site-admin flag (``admin``) or suspension (``suspended``), or delete it:
    the one place either changes, so the one place the site keeps an active site admin.

    The user is read (consistently), then written on the condition that its flags are still
    as read, in one transaction with the kept count of active site admins when the change
    makes one more or one fewer (``store.write_admin_change``: the count is decremented only
    while it stays at 1 or more). Taking the last one away (``what``: demoted, suspended,
    deleted) is a 422 that writes nothing, even when two such changes race: both may read
    two admins, only one transaction passes. Returns the user as it was read (404: none).

    ``scim``: SCIM suspends (or restores) the user, marking the suspension its own; it
    leaves a suspension a site admin made, and lifts only its own (None: left alone). A
    site admin's change makes the suspension theirs."""
    for _ in range(_CHANGE_ATTEMPTS):
        user = store.read_for_change(user_id) if store.is_user_key(user_id) else None
        if user is None:
            raise NotFound(f"user {user_id} not found")
        if scim and (user.suspended if suspended else not user.suspended_by_scim):
            return None  # suspended already, or not by SCIM: SCIM leaves it
        admin_after = bool(user.is_site_admin) if admin is None else admin
        suspended_after = bool(user.suspended) if suspended is None else suspended
        actions: list[Action] | None = None
        if not delete:
            actions = [
                UserModel.is_site_admin.set(admin_after),
                UserModel.suspended.set(True) if suspended_after else UserModel.suspended.remove(),
            ]
            if suspended is not None:
                marked = scim and suspended_after
                by_scim = UserModel.suspended_by_scim
                actions.append(by_scim.set(True) if marked else by_scim.remove())
        outcome = store.write_admin_change(
            user, actions, admin=admin_after, suspended=suspended_after
        )
        if outcome == "ok":
            return user
        if outcome == "last":
            raise Unprocessable(
                f"the last site administrator cannot be {what}: make another user a site "
                "administrator first"
            )
        if outcome == "uncounted":
            store.backfill_admin_count()
    raise Conflict(f"user {user_id} changed meanwhile; try again")


def set_suspended(user_id: str, flag: bool, *, scim: bool = False) -> None:
    """Suspend (or restore) an existing user (404 when there is none): the flag goes on the
    user (``_change_flags``: suspending the last active site admin is a 422 that changes
    nothing), then on each of its tokens, which ``core.auth`` refuses while it is set (web
    sessions too: they hold a token). This instance forgets the tokens at once; others
    within ``token_cache_ttl`` seconds. A suspended user may not sign in
    (``UserModel.may_sign_in``). ``scim``: SCIM deactivates (or reactivates) the user: it
    leaves a site admin's suspension alone and lifts only its own."""
    if _change_flags(user_id, "suspended", suspended=flag, scim=scim) is None:
        return
    for token in tokens_store.owned_tokens("user", user_id):
        tokens_store.mark_suspended(token, flag)


def delete_user(user: UserModel) -> None:
    """Delete a user: the user item first (``_change_flags``: the last active site admin is
    a 422 and nothing is deleted), then its tokens, its team memberships and its username
    claim (a token left by a failure midway names a user that no longer exists: it reads
    nothing)."""
    deleted = _change_flags(user.id, "deleted", delete=True)
    user = deleted or user
    for token in tokens_store.owned_tokens("user", user.id):
        token.delete()
    for organization in user.organizations():  # a membership ref names no team: skipped
        for team_id in user.team_ids(organization):
            team = teams_store.find_team(team_id)
            if team is not None:
                teams_store.remove_team_members(team, [user.id])
    if store.user_id_of_name(user.username) == user.id:
        store.UsernameClaimModel(store.claim_key(user.username)).delete()
