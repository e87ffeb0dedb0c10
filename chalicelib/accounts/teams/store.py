"""The teams table: its model, every read of it, and the membership writes, which keep
both sides (``TeamModel.user_ids`` and the users' ``team_refs``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pynamodb.attributes import (
    BooleanAttribute,
    MapAttribute,
    UnicodeAttribute,
    UnicodeSetAttribute,
    UTCDateTimeAttribute,
)
from pynamodb.exceptions import UpdateError
from pynamodb.expressions.update import Action
from pynamodb.indexes import AllProjection, GlobalSecondaryIndex, KeysOnlyProjection
from pynamodb.transactions import TransactWrite

from chalicelib.accounts.users.store import UserModel
from chalicelib.core.audit import trail
from chalicelib.core.data import db, lists

if TYPE_CHECKING:
    from chalicelib.core.audit.events import Event


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


def insert_team(team: TeamModel, event: Event) -> None:
    """Save a new team with its audit ``event``, in one transaction. Its id is freshly
    minted; names are checked unique before."""
    with TransactWrite(connection=db.connection()) as tx:
        tx.save(team, condition=TeamModel.id.does_not_exist())
        trail.record_in(tx, event)


def update_team(team: TeamModel, actions: list[Action], event: Event) -> None:
    """Change an existing team with its audit ``event``, in one transaction."""
    with TransactWrite(connection=db.connection()) as tx:
        tx.update(team, actions=actions, condition=TeamModel.id.exists())
        trail.record_in(tx, event)


def delete_team(team: TeamModel, event: Event | None) -> None:
    """Delete the team's item, with its audit ``event`` in one transaction (None: the team
    goes with its organization, whose deletion records the event)."""
    if event is None:
        team.delete()
        return
    with TransactWrite(connection=db.connection()) as tx:
        tx.delete(team)
        trail.record_in(tx, event)


def _change_team_side(team: TeamModel, action: Action, event: Event | None) -> None:
    """The team's side of a membership change, with the change's audit ``event`` (if any) in
    one transaction: written last, it commits the change."""
    if event is None:
        team.update(actions=[action])
        return
    with TransactWrite(connection=db.connection()) as tx:
        tx.update(team, actions=[action])
        trail.record_in(tx, event)


def add_team_members(team: TeamModel, user_ids: list[str], event: Event | None = None) -> None:
    """Record membership on both sides: each user's ``team_refs``, then the team's ``user_ids``
    (with ``event``, the change's audit event, when the caller records one here).

    The user updates require the user to exist: an UpdateItem on a missing key would create
    a stub user item. A user gone meanwhile fails the call.
    """
    ref = f"{team.organization}/{team.id}"
    for user_id in user_ids:
        UserModel(user_id).update(
            actions=[UserModel.team_refs.add({ref})], condition=UserModel.id.exists()
        )
    if user_ids:
        _change_team_side(team, TeamModel.user_ids.add(set(user_ids)), event)


def remove_team_members(team: TeamModel, user_ids: list[str], event: Event | None = None) -> None:
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
        _change_team_side(team, TeamModel.user_ids.delete(set(user_ids)), event)


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


def find_team(team_id: str) -> TeamModel | None:
    try:
        return TeamModel.get(team_id)
    except TeamModel.DoesNotExist:
        return None


def teams_of(organization: str, name: str | None = None) -> list[TeamModel]:
    """The organization's teams, by name (one Query); ``name``: only the team of that name."""
    condition = TeamModel.name == name if name is not None else None
    return list(TeamModel.by_organization.query(organization, condition))


def teams_by_ids(team_ids: list[str]) -> list[TeamModel]:
    """The teams of those ids (one BatchGetItem per hundred; gone ones left out)."""
    return list(TeamModel.batch_get(team_ids)) if team_ids else []


def team_list(organization: str) -> lists.KeyedList:
    """The organization's teams as a list to page (``lists.read_page``) on the lean index."""
    return lists.KeyedList(TeamModel, organization, lean=TeamModel.listed)
