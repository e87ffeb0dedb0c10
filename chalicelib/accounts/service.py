"""Organizations, users, teams and tokens: rules, permissions and cascades.

Permissions follow SPEC.md's Authentication section: site admins may do everything;
members of an organization's teams may read it; ``manage-modules`` (or the owners team)
allows publishing modules, ``manage-providers`` (or the owners team) publishing providers
and their GPG keys; updating and deleting modules, and managing teams and tokens, needs the
owners team. A caller without a permission gets 404, as if the thing did not exist. The
roles are read, and each action decided, in ``accounts.authorization`` (this file asks it).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from datetime import datetime
from typing import TYPE_CHECKING, Any

from pynamodb.exceptions import UpdateError
from pynamodb.expressions.update import Action

from chalicelib.accounts import authorization, store

# The roles a caller holds are read in ``accounts.authorization`` (the one home of the access
# decisions); the names stay importable from here for the rooms that read them with the rest.
from chalicelib.accounts.authorization import (
    OrgAccess,
    access,
    is_site_admin,
    refuse_disabled,
)
from chalicelib.accounts.authorization import is_disabled as is_disabled
from chalicelib.accounts.authorization import organization_access as organization_access
from chalicelib.accounts.store import (
    DIRECTORY,
    OrganizationModel,
    TeamModel,
    UserModel,
    get_organization,
)
from chalicelib.core.api import bounds
from chalicelib.core.api.bounds import utf8_length
from chalicelib.core.api.errors import Conflict, NotFound, Unprocessable
from chalicelib.core.api.pagination import Page
from chalicelib.core.auth import Principal, PrincipalKind, TokenModel, mint_token, verified
from chalicelib.core.data import db, lists
from chalicelib.core.data.ids import new_id, now

if TYPE_CHECKING:
    from pynamodb.expressions.update import Action

ORG_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]*$")
EMAIL = re.compile(r"^[^@\s]+@[^@\s]+$")
OWNERS = "owners"
# Users added to or removed from a team in one request (a 422 naming it, before any write):
# two calls each; the tfe provider's tfe_team_members sends a whole team at once.
MAX_MEMBERS_PER_REQUEST = 500
# A user token created without ``expired-at`` expires this many years later, as in TFE
# (go-tfe's ``defaultTokenExpirationYears``); an explicit date is kept as given.
USER_TOKEN_DEFAULT_YEARS = 2


# ----- principals ---------------------------------------------------------------------------


def get_user(user_id: str) -> UserModel:
    if not store.is_user_key(user_id):  # a username claim or the admin count, not a user
        raise NotFound(f"user {user_id} not found")
    try:
        return UserModel.get(user_id)
    except UserModel.DoesNotExist:
        raise NotFound(f"user {user_id} not found") from None


def find_user(user_id: str) -> UserModel | None:
    try:
        return get_user(user_id)
    except NotFound:
        return None


def shown_as_site_admin(principal: Principal) -> bool:
    """Whether to show the caller the way to site administration: the cached user item (no
    read on a warm instance; a flag changed elsewhere shows within the token cache's window).
    A display hint only: the admin pages and API check ``is_site_admin``."""
    if not principal.is_user:
        return False
    user = store.cached_user(principal.id)
    return bool(user and user.is_site_admin)


def readable_organization(principal: Principal, name: str) -> tuple[OrganizationModel, OrgAccess]:
    """The organization and the caller's access, or 404 when missing or not readable (403
    when disabled: ``refuse_disabled``, on the item read here)."""
    rights = authorization.roles(principal, name)
    org = get_organization(name) if rights.can_read else None
    if org is None:
        raise NotFound(f"organization {name!r} not found")
    if not rights.site_admin:
        refuse_disabled(name, org)
    return org, rights


def can_read_organization(principal: Principal, name: str) -> bool:
    """Whether the caller may read the existing organization ``name``, in the fewest reads
    (see ``read_in_organization``)."""
    return read_in_organization(principal, name, None)[0]


def read_in_organization(
    principal: Principal, name: str, wanted: tuple[Any, Any, Any] | None
) -> tuple[bool, Any]:
    """Whether the caller may read the existing organization ``name``, and the item
    ``wanted`` (``(model, hash_key, range_key)``: what the caller reads next, None for
    nothing; None when missing), in the fewest reads: the registry protocol asks on every
    ``terraform init`` request.

    A team or organization token carries its organization and exists only while it does
    (no read); a user is the cached user item (``store.cached_user``: none on a warm
    instance, and on a cold one read together with ``wanted``); only a site admin's answer
    reads the organizations table. The item is read whatever the answer: the caller must
    not show it when the answer is no. A member of a disabled organization, or its token, is
    refused (``refuse_disabled``): while this instance does not know whether it is, the
    organization item is read in the same call as the rest."""
    # The organization item is read with the rest while whether it is disabled is not known.
    unknown = store.known_disabled(name) is None
    more = [wanted] if wanted is not None else []
    if unknown:
        more.append((OrganizationModel, name, None))
    user = None
    if principal.kind in ("team", "organization"):
        if principal.organization != name:
            return False, None
        member = True
        items = db.get_together(*more) if more else []
    else:
        user, items = store.cached_user_with(principal.id, *more)
        member = user is not None and any(
            ref.startswith(f"{name}/") for ref in user.team_refs or ()
        )
    item = items[0] if wanted is not None else None
    if unknown:
        store.note_disabled(name, items[-1])
    if user is not None and user.is_site_admin:
        return bool(OrganizationModel.count(name, limit=1)), item
    if member:
        refuse_disabled(name)
    return member, item


def readable_organization_names(principal: Principal) -> list[str]:
    """Names of every organization the principal can read (for cross-organization lists)."""
    if principal.kind in ("team", "organization"):
        return [principal.organization] if principal.organization else []
    try:
        user = UserModel.get(principal.id)
    except UserModel.DoesNotExist:
        return []
    if user.is_site_admin:
        return [org.name for org in OrganizationModel.by_directory.query(DIRECTORY)]
    return sorted({ref.split("/", 1)[0] for ref in user.team_refs or ()})


def owned_organization(principal: Principal, name: str) -> OrganizationModel:
    """The organization when the caller may ``own`` it (``accounts.authorization``), else
    404."""
    org, rights = readable_organization(principal, name)
    refusal = f"organization {name!r} not found or you are not one of its owners"
    authorization.require(rights, "own", refusal)
    return org


# ----- users --------------------------------------------------------------------------------


MAX_USERNAME = 64
MAX_EMAIL = 254


def validate_username(username: str | None, pointer: str = "/data/attributes/username") -> str:
    """422 naming ``pointer`` unless ``username`` is 1 to ``MAX_USERNAME`` letters, numbers,
    - and _ (starting with a letter or number)."""
    if not username or len(username) > MAX_USERNAME or not ORG_NAME.match(username):
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
        try:
            return UserModel.get(user_id)
        except UserModel.DoesNotExist:
            return None
    return next(iter(UserModel.by_username.query(username)), None)


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
        from chalicelib.core.auth import hash_token

        try:
            existing = TokenModel.get(hash_token(token))
            if existing.owner_id == user.id:
                return user, None
            existing.delete()
        except TokenModel.DoesNotExist:
            pass
        mint_token("user", user.id, description="initial admin token", secret=token)
        return user, None
    if any(owned_tokens("user", user.id)):
        return user, None
    _, secret = mint_token("user", user.id, description="initial admin token")
    return user, secret


# ----- organizations ------------------------------------------------------------------------


def validate_org_name(name: str | None) -> str:
    if not name:
        raise Unprocessable("name is required", pointer="/data/attributes/name")
    if len(name) > 64 or not ORG_NAME.match(name):
        raise Unprocessable(
            "name must be 1 to 64 letters, numbers, - or _, starting with a letter or number",
            pointer="/data/attributes/name",
        )
    return name


def validate_email(email: str | None) -> str:
    if not email or len(email) > MAX_EMAIL or not EMAIL.match(email):
        raise Unprocessable("email must be a valid email address", pointer="/data/attributes/email")
    return email


def create_organization(
    principal: Principal, name: str | None, email: str | None, *, limited: bool
) -> OrganizationModel:
    """``limited``: the site lets only site admins create organizations."""
    admin = is_site_admin(principal)
    if not principal.is_user:
        raise NotFound("organizations can only be created with a user token")
    if limited and not admin:
        raise NotFound("only site administrators may create organizations on this instance")
    name = validate_org_name(name)
    email = validate_email(email)
    moment = now()
    org = OrganizationModel(
        name, external_id=new_id("org"), email=email, created_at=moment, updated_at=moment
    )
    if not store.insert_organization(org):
        raise Unprocessable("name has already been taken", pointer="/data/attributes/name")
    owners = _new_team(name, OWNERS, "secret", {})
    store.insert_team(owners)
    store.add_team_members(owners, [principal.id])
    return org


def list_organizations(principal: Principal) -> list[OrganizationModel]:
    """The organizations the caller reads: a site admin every one, anyone else those it
    belongs to that are not disabled (``refuse_disabled``; the items read say it)."""
    if is_site_admin(principal):
        return list(OrganizationModel.by_directory.query(DIRECTORY))
    if principal.kind in ("team", "organization"):
        name = principal.organization
        found = list(OrganizationModel.batch_get([name])) if name else []
    else:
        user = get_user(principal.id)
        names = sorted({ref.split("/", 1)[0] for ref in user.team_refs or ()})
        found = sorted(OrganizationModel.batch_get(names), key=lambda o: o.name) if names else []
    return [org for org in found if not store.note_disabled(org.name, org)]


def update_organization(
    principal: Principal, name: str, *, email: str | None, new_name: str | None
) -> OrganizationModel:
    org = owned_organization(principal, name)
    if new_name is not None and new_name != name:
        raise Unprocessable(
            "renaming an organization is not supported", pointer="/data/attributes/name"
        )
    if email is not None:
        org.update(
            actions=[
                OrganizationModel.email.set(validate_email(email)),
                OrganizationModel.updated_at.set(now()),
            ]
        )
    return org


def organization_external_id(name: str) -> str | None:
    """The ``org-`` id of the organization of that name now (None when there is none): tells
    a reused name from the organization that had it before."""
    try:
        return OrganizationModel.get(name, attributes_to_get=["external_id"]).external_id
    except OrganizationModel.DoesNotExist:
        return None


def organizations_by_external_id(external_ids: set[str]) -> dict[str, OrganizationModel]:
    """The organizations whose ``external-id`` is among ``external_ids`` (bounded by the
    caller), by external id. Reads the organization directory with a filter: only the
    deprecated Admin Module Sharing API names organizations this way."""
    if not external_ids:
        return {}
    found = OrganizationModel.by_directory.query(
        DIRECTORY, filter_condition=OrganizationModel.external_id.is_in(*external_ids)
    )
    return {org.external_id: org for org in found}


def delete_organization_records(name: str) -> None:
    """The last step of deleting an organization (``lifecycle.delete_organization``): its
    teams, tokens and record, once what hung off it is gone."""
    org = get_organization(name)
    if org is None:
        return
    for team in TeamModel.by_organization.query(name):
        _delete_team(team)
    store.delete_token(org.token_hash)
    for token in owned_tokens("organization", name):  # any the index still shows
        token.delete()
    forget_module_consumer(name)
    org.delete()


# ----- teams --------------------------------------------------------------------------------


def _new_team(org: str, name: str, visibility: str, flags: dict[str, bool]) -> TeamModel:
    team = TeamModel(
        new_id("team"), organization=org, name=name, visibility=visibility, created_at=now()
    )
    for flag, value in flags.items():
        setattr(team.access, flag, value)
    return team


def validate_team_name(name: str | None) -> str:
    if not name:
        raise Unprocessable("name is required", pointer="/data/attributes/name")
    if len(name) > 64 or not ORG_NAME.match(name):
        raise Unprocessable(
            "name may contain letters, numbers, - and _ (at most 64)",
            pointer="/data/attributes/name",
        )
    return name


def create_team(
    principal: Principal, org: str, name: str | None, visibility: str | None, flags: dict[str, bool]
) -> TeamModel:
    owned_organization(principal, org)
    name = validate_team_name(name)
    if any(TeamModel.by_organization.query(org, TeamModel.name == name)):
        raise Unprocessable("name has already been taken", pointer="/data/attributes/name")
    team = _new_team(org, name, visibility or "secret", flags)
    store.insert_team(team)
    return team


def list_teams(principal: Principal, org: str, names: list[str] | None) -> list[TeamModel]:
    """The organization's teams the caller may see (``sees_team``)."""
    _, rights = readable_organization(principal, org)
    teams = [t for t in TeamModel.by_organization.query(org) if sees_team(principal, t, rights)]
    if names:
        wanted = set(names)
        teams = [t for t in teams if t.name in wanted]
    return teams


def page_teams(
    principal: Principal, org: str, names: list[str] | None, page: Page
) -> tuple[list[TeamModel], int]:
    """One page of the teams the caller may see and how many there are. Who sees every team
    (``sees_all_teams``) pages on the lean index (``TeamModel.listed``, keys only, about 60
    bytes a team: a bounded read, counted rather than kept: an organization has few teams),
    reading only the page's teams by id. Anyone else reads the organization's teams (one
    Query) to leave out the secret teams they are not on."""
    _, rights = readable_organization(principal, org)
    wanted = set(names or ())
    if not sees_all_teams(principal, rights):
        teams = [
            t
            for t in TeamModel.by_organization.query(org)
            if (not wanted or t.name in wanted) and sees_team(principal, t, rights)
        ]
        return teams[page.offset : page.offset + page.size], len(teams)
    source = lists.KeyedList(TeamModel, org, lean=TeamModel.listed)
    return lists.read_page(
        source, page, total=None, matches=lambda team: not wanted or team.name in wanted
    )


def sees_all_teams(principal: Principal, rights: OrgAccess) -> bool:
    """The organization's owners, site admins and its organization token see every team."""
    return rights.is_owner or rights.site_admin or principal.kind == "organization"


def sees_team(principal: Principal, team: TeamModel, rights: OrgAccess) -> bool:
    """As in TFE: a ``secret`` team is visible only to its members (and its own token) and
    to those who see every team; a ``organization`` team to every reader."""
    if team.visibility != "secret" or sees_all_teams(principal, rights):
        return True
    if principal.kind == "team":
        return principal.id == team.id
    return principal.is_user and principal.id in (team.user_ids or ())


def hidden_teams(principal: Principal, org: str, rights: OrgAccess) -> set[str]:
    """The ids of ``org``'s teams the caller may not see (none for who sees them all)."""
    if sees_all_teams(principal, rights):
        return set()
    return {
        t.id for t in TeamModel.by_organization.query(org) if not sees_team(principal, t, rights)
    }


def readable_team(principal: Principal, team_id: str) -> tuple[TeamModel, OrgAccess]:
    """The team and the caller's access; 404 when it cannot read the organization, or the
    team is a secret one it is not on."""
    try:
        team = TeamModel.get(team_id)
    except TeamModel.DoesNotExist:
        raise NotFound(f"team {team_id} not found") from None
    rights = access(principal, team.organization)
    is_self = principal.kind == "team" and principal.id == team_id
    if not (is_self or (rights.can_read and sees_team(principal, team, rights))):
        raise NotFound(f"team {team_id} not found")
    return team, rights


def owned_team(principal: Principal, team_id: str) -> TeamModel:
    """The team when the caller may ``own`` its organization (``accounts.authorization``),
    else 404."""
    team, rights = readable_team(principal, team_id)
    refusal = f"team {team_id} not found or you are not an owner of its organization"
    authorization.require(rights, "own", refusal)
    return team


def update_team(
    principal: Principal,
    team_id: str,
    name: str | None,
    visibility: str | None,
    flags: dict[str, bool],
) -> TeamModel:
    team = owned_team(principal, team_id)
    actions: list[Action] = []
    if name is not None and name != team.name:
        if team.is_owners:
            raise Unprocessable(
                "the owners team cannot be renamed", pointer="/data/attributes/name"
            )
        name = validate_team_name(name)
        if any(TeamModel.by_organization.query(team.organization, TeamModel.name == name)):
            raise Unprocessable("name has already been taken", pointer="/data/attributes/name")
        actions.append(TeamModel.name.set(name))
    if visibility is not None:
        actions.append(TeamModel.visibility.set(visibility))
    for flag, value in flags.items():
        actions.append(getattr(TeamModel.access, flag).set(value))
    if actions:
        team.update(actions=actions)
    return team


def delete_team(principal: Principal, team_id: str) -> None:
    team = owned_team(principal, team_id)
    if team.is_owners:
        raise Unprocessable("the owners team cannot be deleted")
    _delete_team(team)


def _delete_team(team: TeamModel) -> None:
    store.remove_team_members(team, list(team.user_ids or ()))
    store.delete_token(team.token_hash)
    for token in owned_tokens("team", team.id):
        token.delete()
    team.delete()


def team_members(teams: Iterable[TeamModel]) -> list[UserModel]:
    """The members of ``teams``, each once, in the order of the teams' ``users``
    relationships (one BatchGet). A user deleted meanwhile is left out."""
    ids = list(dict.fromkeys(u for team in teams for u in sorted(team.user_ids or ())))
    found = {user.id: user for user in UserModel.batch_get(ids)} if ids else {}
    return [found[i] for i in ids if i in found]


def resolve_usernames(usernames: list[str]) -> list[UserModel]:
    users = []
    for index, username in enumerate(usernames):
        user = find_user_by_name(username)
        if user is None:
            raise NotFound(f"user {username!r} not found", pointer=f"/data/{index}/id")
        users.append(user)
    return users


def refuse_if_scim_linked(team: TeamModel) -> None:
    """A team following a SCIM group changes its members only there (422)."""
    if team.scim_group_name is not None and not team.scim_sync_paused:
        raise Unprocessable(
            f"team {team.id}'s members follow the SCIM group {team.scim_group_name!r}: change "
            "them in the identity provider, or pause or remove the link first"
        )


def change_membership(
    principal: Principal, team_id: str, usernames: list[str], *, add: bool
) -> None:
    team = owned_team(principal, team_id)
    refuse_if_scim_linked(team)
    users = resolve_usernames(usernames)
    if add:
        store.add_team_members(team, [u.id for u in users])
    else:
        if team.is_owners and set(team.user_ids or ()) <= {u.id for u in users}:
            raise Unprocessable("the owners team must keep at least one member")
        store.remove_team_members(team, [u.id for u in users])


# ----- tokens -------------------------------------------------------------------------------


def owned_tokens(kind: str, owner_id: str) -> Iterable[TokenModel]:
    """The tokens of one owner. Owner ids share one key space (an organization may be named
    like a user or team id), so the kind must always be part of the lookup."""
    return TokenModel.by_owner.query(owner_id, filter_condition=TokenModel.kind == kind)


# The description of the user tokens browser sessions are opened with (``web.session``'s
# ``start_for_user``: a password, an invitation or SAML proved who the user is); a session
# lives as long as its token.
SESSION_TOKEN = "browser session"


def end_sessions(user_id: str, *, keep_token_id: str | None = None) -> int:
    """End the user's browser sessions, because a credential of theirs changed (a password
    set or reset, two-factor turned on or off): the tokens minted for them are deleted, so
    each session is refused at once on this instance and within the token cache's seconds
    (``token_cache_ttl``) on the others. ``keep_token_id``: the token of the session that
    made the change, which stays signed in. The user's API tokens (and a session opened by
    pasting one) are theirs and stay. How many ended."""
    ended = 0
    for token in owned_tokens("user", user_id):
        if token.description == SESSION_TOKEN and token.id != keep_token_id:
            token.delete()
            ended += 1
    return ended


def _rotate_single_token(
    holder: TeamModel | OrganizationModel,
    kind: PrincipalKind,
    owner: str,
    organization: str,
    principal: Principal,
    description: str | None,
) -> tuple[TokenModel, str]:
    """Teams and organizations hold one token, found by the hash kept on their own item.

    The new token is minted first, then swapped in (``store.replace_held_token``): 409 when
    a concurrent rotation swapped its own in first.
    """
    token, secret = mint_token(
        kind, owner, organization=organization, description=description, created_by=principal.id
    )
    if not store.replace_held_token(holder, token):
        raise Conflict("the token was rotated concurrently; try again")
    return token, secret


def _held_token(holder: TeamModel | OrganizationModel, what: str) -> TokenModel:
    if holder.token_hash:
        try:
            return TokenModel.get(holder.token_hash)
        except TokenModel.DoesNotExist:
            pass
    raise NotFound(f"{what} has no token")


def _revoke_held_token(holder: TeamModel | OrganizationModel, what: str) -> None:
    store.drop_held_token(holder, _held_token(holder, what))


def create_team_token(
    principal: Principal, team_id: str, description: str | None
) -> tuple[TokenModel, str]:
    """A team has one token; creating a new one revokes the old one."""
    team = owned_team(principal, team_id)
    return _rotate_single_token(team, "team", team.id, team.organization, principal, description)


def team_token(principal: Principal, team_id: str) -> TokenModel:
    return _held_token(owned_team(principal, team_id), f"team {team_id}")


def delete_team_token(principal: Principal, team_id: str) -> None:
    _revoke_held_token(owned_team(principal, team_id), f"team {team_id}")


def create_organization_token(
    principal: Principal, org: str, description: str | None
) -> tuple[TokenModel, str]:
    holder = owned_organization(principal, org)
    return _rotate_single_token(holder, "organization", org, org, principal, description)


def organization_token(principal: Principal, org: str) -> TokenModel:
    return _held_token(owned_organization(principal, org), f"organization {org!r}")


def delete_organization_token(principal: Principal, org: str) -> None:
    _revoke_held_token(owned_organization(principal, org), f"organization {org!r}")


def _own_user(principal: Principal, user_id: str) -> UserModel:
    if principal.is_user and (principal.id == user_id or is_site_admin(principal)):
        return get_user(user_id)
    raise NotFound(f"user {user_id} not found")


def years_later(moment: datetime, years: int) -> datetime:
    """The same instant ``years`` calendar years on (29 February gives 28 February)."""
    try:
        return moment.replace(year=moment.year + years)
    except ValueError:
        return moment.replace(year=moment.year + years, day=28)


def create_user_token(
    principal: Principal, user_id: str, description: str | None, expired_at: datetime | None
) -> tuple[TokenModel, str]:
    """A token of the user's own. Without ``expired_at`` it expires
    ``USER_TOKEN_DEFAULT_YEARS`` years from now."""
    user = _own_user(principal, user_id)
    if expired_at is None:
        expired_at = years_later(now(), USER_TOKEN_DEFAULT_YEARS)
    token, secret = mint_token(
        "user", user.id, description=description, created_by=principal.id, expired_at=expired_at
    )
    if user.suspended:  # a site admin minting for a suspended user: refused until unsuspended
        _mark_suspended(token, True)
    return token, secret


def list_user_tokens(principal: Principal, user_id: str) -> list[TokenModel]:
    user = _own_user(principal, user_id)
    return list(owned_tokens("user", user.id))


def create_additional_team_token(
    principal: Principal, team_id: str, description: str | None, expired_at: datetime | None
) -> tuple[TokenModel, str]:
    """One more token for a team (``/teams/:id/authentication-tokens``): unlike the team's
    single legacy token, creating it revokes nothing."""
    team = owned_team(principal, team_id)
    return mint_token(
        "team",
        team.id,
        organization=team.organization,
        description=description,
        created_by=principal.id,
        expired_at=expired_at,
    )


def list_organization_team_tokens(principal: Principal, org: str) -> list[TokenModel]:
    """Every team token of the organization (one Query per team)."""
    owned_organization(principal, org)
    tokens: list[TokenModel] = []
    for team in TeamModel.by_organization.query(org):
        tokens += owned_tokens("team", team.id)
    return sorted(tokens, key=lambda t: t.created_at)


def token_by_id(principal: Principal, token_id: str) -> TokenModel:
    """A user token for its user (or a site admin), a team token for the organization's
    owners, a SCIM token for site admins; anything else is 404."""
    token = next(iter(TokenModel.by_id.query(token_id)), None)
    if token is None or token.kind not in ("user", "team", "scim"):
        raise NotFound(f"authentication token {token_id} not found")
    if token.kind == "scim":  # SCIM provisioning tokens: site admins only
        if not is_site_admin(principal):
            raise NotFound(f"authentication token {token_id} not found")
    elif token.kind == "user":
        _own_user(principal, token.owner_id)
    else:
        try:
            owned_team(principal, token.owner_id)
        except NotFound:
            raise NotFound(f"authentication token {token_id} not found") from None
    return token


def delete_token_by_id(principal: Principal, token_id: str) -> None:
    token = token_by_id(principal, token_id)
    if token.kind == "team":
        team = TeamModel.get(token.owner_id)
        if team.token_hash == token.token_hash:
            _revoke_held_token(team, f"team {team.id}")
            return
    token.delete()


# ----- provisioning (SCIM: chalicelib.scim drives these) -------------------------------------


def find_team(team_id: str) -> TeamModel | None:
    try:
        return TeamModel.get(team_id)
    except TeamModel.DoesNotExist:
        return None


def set_site_admin(user_id: str, flag: bool) -> None:
    """Grant or revoke the site-admin flag of an existing user (404 when there is none).
    Revoking it from the last active site admin is a 422 that changes nothing, whoever asks
    (the admin API and pages, SCIM, SAML): ``_change_flags``."""
    _change_flags(user_id, "demoted", admin=flag)


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


def revoke_user_tokens(user_id: str) -> int:
    """Delete every API token of a user (a deprovisioned user keeps no way in)."""
    tokens = list(owned_tokens("user", user_id))
    for token in tokens:
        token.delete()
    return len(tokens)


def set_team_scim_link(team_id: str, group_name: str | None, paused: bool = False) -> None:
    """What the team shows of its SCIM link (``scim-linked``, ``scim-group-name``,
    ``scim-sync-paused``); no group: not linked."""
    store.set_scim_link(team_id, group_name, paused)


def set_team_members(team: TeamModel, user_ids: set[str]) -> None:
    """Make exactly ``user_ids`` the members of ``team`` (both sides of the membership)."""
    current = set(team.user_ids or ())
    store.add_team_members(team, sorted(user_ids - current))
    store.remove_team_members(team, sorted(current - user_ids))


# ----- site administration (chalicelib.admin drives these) -----------------------------------


def all_users() -> list[UserModel]:
    """Every user (a Scan: site administration only), by username."""
    users = UserModel.scan(filter_condition=UserModel.username.exists())
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
    condition = UserModel.username_key.startswith(store.username_key(term)) if term else None
    entries = {e.id: e for e in UserModel.user_directory.query(store.USER_DIRECTORY, condition)}
    known: dict[str, UserModel] = {}
    if "@" in term:
        by_email = [i for i in store.user_ids_with_email(term, limit=10) if i not in entries]
        known = {user.id: user for user in UserModel.batch_get(by_email)} if by_email else {}
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
    if wanted:
        found.update((user.id, user) for user in UserModel.batch_get(wanted))
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


def _mark_suspended(token: TokenModel, flag: bool) -> None:
    action = TokenModel.suspended.set(True) if flag else TokenModel.suspended.remove()
    try:
        token.update(actions=[action], condition=TokenModel.token_hash.exists())
    except UpdateError as exc:  # deleted meanwhile: nothing to refuse
        if not db.conditional_failure(exc):
            raise
    verified.forget(token.token_hash)


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
    for token in owned_tokens("user", user_id):
        _mark_suspended(token, flag)


def delete_user(user: UserModel) -> None:
    """Delete a user: the user item first (``_change_flags``: the last active site admin is
    a 422 and nothing is deleted), then its tokens, its team memberships and its username
    claim (a token left by a failure midway names a user that no longer exists: it reads
    nothing)."""
    deleted = _change_flags(user.id, "deleted", delete=True)
    user = deleted or user
    for token in owned_tokens("user", user.id):
        token.delete()
    for ref in sorted(user.team_refs or ()):
        team = find_team(ref.split("/", 1)[1])
        if team is not None:
            store.remove_team_members(team, [user.id])
    if store.user_id_of_name(user.username) == user.id:
        store.UsernameClaimModel(store.claim_key(user.username)).delete()


def all_organizations() -> list[OrganizationModel]:
    """Every organization, by name (one Query of the directory index)."""
    return list(OrganizationModel.by_directory.query(DIRECTORY))


def owners_of(org: str) -> list[UserModel]:
    """The members of an organization's owners team."""
    teams = [t for t in TeamModel.by_organization.query(org) if t.is_owners]
    return team_members(teams)


def set_organization_admin_values(
    org: OrganizationModel, values: dict[str, Any], global_sharing: bool | None
) -> None:
    """The admin attributes of an organization (merged over what is stored)."""
    actions: list[Action] = [OrganizationModel.updated_at.set(now())]
    if values:
        merged = {**(org.admin_values or {}), **values}
        actions.append(OrganizationModel.admin_values.set(merged))
    if global_sharing is not None:
        actions.append(OrganizationModel.global_module_sharing.set(global_sharing))
    org.update(actions=actions, condition=OrganizationModel.name.exists())
    store.forget_disabled(org.name)  # this instance at once, others within the window


def set_module_consumers(org: OrganizationModel, consumers: set[str]) -> None:
    """Exactly ``consumers`` may read ``org``'s private modules (besides global sharing)."""
    action = (
        OrganizationModel.module_consumers.set(consumers)
        if consumers
        else OrganizationModel.module_consumers.remove()
    )
    org.update(actions=[action], condition=OrganizationModel.name.exists())


def forget_module_consumer(name: str) -> None:
    """Take a deleted organization out of every producer's module consumers: sharing is by
    name, and a new organization of that name must not inherit it."""
    for org in all_organizations():
        if name in (org.module_consumers or ()):
            org.update(actions=[OrganizationModel.module_consumers.delete({name})])


def display_names(team_ids: Iterable[str], user_ids: Iterable[str]) -> dict[tuple[str, str], str]:
    """``("team", id)`` -> ``organization/team name`` and ``("user", id)`` -> the username,
    in one BatchGet per kind; deleted ones are left out. For reports of who did something
    (a module's consumers)."""
    names: dict[tuple[str, str], str] = {}
    teams = sorted(set(team_ids))
    users = sorted(set(user_ids))
    for team in TeamModel.batch_get(teams) if teams else ():
        names[("team", team.id)] = f"{team.organization}/{team.name}"
    for user in UserModel.batch_get(users) if users else ():
        names[("user", user.id)] = user.username
    return names
