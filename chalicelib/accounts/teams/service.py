"""Teams: who sees them (a secret team only its members and those who see every team), who
manages them (the organization's owners), their members (kept on both sides: ``store``),
and their link to a SCIM group.

A team's changes record their audit event (``team`` ``created``, ``updated`` naming what
changed, ``deleted``, ``members-added``, ``members-removed``) with the write that commits
them; SCIM's (``set_team_members``, ``set_team_scim_link``) are recorded by SCIM.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from pynamodb.expressions.update import Action

from chalicelib.accounts import authorization
from chalicelib.accounts.authorization import (
    OrgAccess,
    access,
    owned_organization,
    readable_organization,
)
from chalicelib.accounts.organizations import store as organizations_store
from chalicelib.accounts.teams import store
from chalicelib.accounts.teams.store import TeamModel
from chalicelib.accounts.tokens import store as tokens_store
from chalicelib.accounts.users import store as users_store
from chalicelib.accounts.users.service import NAME, find_user_by_name
from chalicelib.accounts.users.store import UserModel
from chalicelib.core.api.errors import NotFound, Unprocessable
from chalicelib.core.api.pagination import Page
from chalicelib.core.audit import events
from chalicelib.core.auth import Principal
from chalicelib.core.data import lists
from chalicelib.core.data.ids import new_id, now

OWNERS = "owners"
# Users added to or removed from a team in one request (a 422 naming it, before any write):
# two calls each; the tfe provider's tfe_team_members sends a whole team at once.
MAX_MEMBERS_PER_REQUEST = 500


def new_team(org: str, name: str, visibility: str, flags: dict[str, bool]) -> TeamModel:
    team = TeamModel(
        new_id("team"), organization=org, name=name, visibility=visibility, created_at=now()
    )
    for flag, value in flags.items():
        setattr(team.access, flag, value)
    return team


def validate_team_name(name: str | None) -> str:
    if not name:
        raise Unprocessable("name is required", pointer="/data/attributes/name")
    if len(name) > 64 or not NAME.match(name):
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
    if store.teams_of(org, name):
        raise Unprocessable("name has already been taken", pointer="/data/attributes/name")
    team = new_team(org, name, visibility or "secret", flags)
    store.insert_team(team, team_event(principal, team, "created", {"name": name}))
    return team


def team_event(
    principal: Principal, team: TeamModel, action: str, meta: dict[str, Any] | None = None
) -> events.Event:
    """The audit event of a change of ``team`` (in its organization's partition)."""
    return events.event(
        principal,
        organization=team.organization,
        resource_type="team",
        resource_id=team.id,
        action=action,
        meta=meta,
    )


def list_teams(principal: Principal, org: str, names: list[str] | None) -> list[TeamModel]:
    """The organization's teams the caller may see (``sees_team``)."""
    _, rights = readable_organization(principal, org)
    teams = [t for t in store.teams_of(org) if sees_team(principal, t, rights)]
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
            for t in store.teams_of(org)
            if (not wanted or t.name in wanted) and sees_team(principal, t, rights)
        ]
        return teams[page.offset : page.offset + page.size], len(teams)
    return lists.read_page(
        store.team_list(org),
        page,
        total=None,
        matches=lambda team: not wanted or team.name in wanted,
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
    return {t.id for t in store.teams_of(org) if not sees_team(principal, t, rights)}


def readable_team(principal: Principal, team_id: str) -> tuple[TeamModel, OrgAccess]:
    """The team and the caller's access; 404 when it cannot read the organization, or the
    team is a secret one it is not on."""
    team = store.find_team(team_id)
    if team is None:
        raise NotFound(f"team {team_id} not found")
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
    changed: list[str] = []
    if name is not None and name != team.name:
        if team.is_owners:
            raise Unprocessable(
                "the owners team cannot be renamed", pointer="/data/attributes/name"
            )
        name = validate_team_name(name)
        if store.teams_of(team.organization, name):
            raise Unprocessable("name has already been taken", pointer="/data/attributes/name")
        actions.append(TeamModel.name.set(name))
        changed.append("name")
    if visibility is not None:
        actions.append(TeamModel.visibility.set(visibility))
        changed += ["visibility"] if visibility != team.visibility else []
    for flag, value in flags.items():
        actions.append(getattr(TeamModel.access, flag).set(value))
        if value != getattr(team.access, flag):
            changed.append("organization-access." + flag.replace("_", "-"))
    if actions:
        event = team_event(principal, team, "updated", {"changed": changed})
        store.update_team(team, actions, event)
    return team


def delete_team(principal: Principal, team_id: str) -> None:
    team = owned_team(principal, team_id)
    if team.is_owners:
        raise Unprocessable("the owners team cannot be deleted")
    delete_team_records(team, team_event(principal, team, "deleted", {"name": team.name}))


def delete_team_records(team: TeamModel, event: events.Event | None = None) -> None:
    """Delete a team: its members' refs to it, its tokens, then its item with ``event`` (its
    audit event; None when it goes with its organization)."""
    store.remove_team_members(team, list(team.user_ids or ()))
    tokens_store.delete_token(team.token_hash)
    for token in tokens_store.owned_tokens("team", team.id):
        token.delete()
    store.delete_team(team, event)


def team_members(teams: Iterable[TeamModel]) -> list[UserModel]:
    """The members of ``teams``, each once, in the order of the teams' ``users``
    relationships (one BatchGet). A user deleted meanwhile is left out."""
    ids = list(dict.fromkeys(u for team in teams for u in sorted(team.user_ids or ())))
    found = {user.id: user for user in users_store.users_by_ids(ids)}
    return [found[i] for i in ids if i in found]


def mail_addresses(
    organization: str, team_ids: Iterable[str], user_ids: Iterable[str]
) -> list[str]:
    """The addresses of the members of the teams ``team_ids`` and of the users ``user_ids``,
    each person once, for a notice about one of ``organization``'s modules that they use (the
    notifications' consumer mail): one GetItem of the organization, one BatchGet of the
    teams, one of the users. Only people who may still read its private modules are kept:
    its members, site admins, and members of the organizations it shares its modules with
    (``consumer_roles``' rule); a team of another organization only while it is shared with.
    A suspended user, a user deleted meanwhile, and an address nobody confirmed reaches its
    owner (``email_unconfirmed``) are left out. A disabled organization mails no one."""
    producer = organizations_store.get_organization(organization)
    if producer is None or organizations_store.note_disabled(organization, producer):
        return []

    def reads(organizations: set[str]) -> bool:
        if organization in organizations:
            return True
        if producer.global_module_sharing:
            return bool(organizations)
        return bool(set(producer.module_consumers or ()) & organizations)

    teams = [t for t in store.teams_by_ids(sorted(set(team_ids))) if reads({t.organization})]
    ids = sorted({*user_ids, *(u for team in teams for u in team.user_ids or ())})
    found: dict[str, str] = {}
    for user in users_store.users_by_ids(ids):
        if user.suspended or user.email_unconfirmed or not user.email:
            continue
        if not user.is_site_admin and not reads(set(user.organizations())):
            continue
        found.setdefault(user.email.strip().lower(), user.email.strip())
    return sorted(found.values(), key=str.lower)


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
    ids = [u.id for u in users]
    event = members_event(principal, team, add=add, user_ids=ids)
    if add:
        store.add_team_members(team, ids, event)
    else:
        if team.is_owners and set(team.user_ids or ()) <= set(ids):
            raise Unprocessable("the owners team must keep at least one member")
        store.remove_team_members(team, ids, event)


def members_event(
    principal: Principal,
    team: TeamModel,
    *,
    add: bool,
    user_ids: list[str],
    membership_ids: list[str] | None = None,
) -> events.Event:
    """The audit event of users added to (or removed from) ``team``: ``members-added`` or
    ``members-removed``, naming the users (and invitations) by id."""
    meta: dict[str, Any] = {"user-ids": user_ids}
    if membership_ids:
        meta["invitation-ids"] = membership_ids
    return team_event(principal, team, "members-added" if add else "members-removed", meta)


def find_team(team_id: str) -> TeamModel | None:
    return store.find_team(team_id)


def set_team_scim_link(team_id: str, group_name: str | None, paused: bool = False) -> None:
    """What the team shows of its SCIM link (``scim-linked``, ``scim-group-name``,
    ``scim-sync-paused``); no group: not linked."""
    store.set_scim_link(team_id, group_name, paused)


def set_team_members(team: TeamModel, user_ids: set[str]) -> None:
    """Make exactly ``user_ids`` the members of ``team`` (both sides of the membership)."""
    current = set(team.user_ids or ())
    store.add_team_members(team, sorted(user_ids - current))
    store.remove_team_members(team, sorted(current - user_ids))


def display_names(team_ids: Iterable[str], user_ids: Iterable[str]) -> dict[tuple[str, str], str]:
    """``("team", id)`` -> ``organization/team name`` and ``("user", id)`` -> the username,
    in one BatchGet per kind; deleted ones are left out. For reports of who did something
    (a module's consumers)."""
    names: dict[tuple[str, str], str] = {}
    teams = sorted(set(team_ids))
    users = sorted(set(user_ids))
    for team in store.teams_by_ids(teams):
        names[("team", team.id)] = f"{team.organization}/{team.name}"
    for user in users_store.users_by_ids(users):
        names[("user", user.id)] = user.username
    return names
