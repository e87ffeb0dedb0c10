"""Keeping in step what follows a SCIM group's membership: the teams linked to it (exactly
the group's active members, unless the link's sync is paused) and, for the site-admin group,
the site-admin flag of its members.

Every change of a user or a group (``scim.users``, ``scim.groups``) and of the settings
(``scim.service``) ends here. SCIM takes the flag back only from users it granted it to;
``take_back_grants`` comes first in a request that ends grants, so that the last active site
admin's is a 422 before SCIM writes anything else.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable

from chalicelib.accounts.teams import service as teams_service
from chalicelib.accounts.users import service as users_service
from chalicelib.core.api.errors import NotFound
from chalicelib.scim import store
from chalicelib.scim.store import ScimGroupModel, ScimMappingModel, ScimSettingsModel, ScimUserModel


def members_changed(group: ScimGroupModel, *, added: set[str], removed: set[str]) -> None:
    """Record the membership on the users' side, then bring linked teams and the site-admin
    grant in line."""
    for user_id in added:
        store.update_user_if_present(user_id, ScimUserModel.group_ids.add({group.id}))
    for user_id in removed:
        store.update_user_if_present(user_id, ScimUserModel.group_ids.delete({group.id}))
    fresh = store.get_group(group.id) or group
    linked_teams(fresh)
    item = store.load_settings()
    if item.site_admin_group_id == group.id:
        for user in store.users_by_ids(added | removed):
            site_admin_flag(user, item)


def linked_teams(group: ScimGroupModel) -> None:
    """Bring the group's linked teams (those not paused) in line with its members."""
    for mapping in store.mappings_of_group(group.id):
        if not mapping.paused:
            team_members(mapping, group)


def team_members(mapping: ScimMappingModel, group: ScimGroupModel) -> None:
    """The linked team's members become the group's active members."""
    team = teams_service.find_team(mapping.team_id)
    if team is None:  # the team was deleted: the link goes with it
        mapping.delete()
        return
    members = store.users_by_ids(set(group.member_ids or ()))
    teams_service.set_team_members(team, {user.user_id for user in members if user.active})


def user_everywhere(user: ScimUserModel) -> None:
    """After a user's ``active`` changed: its groups' teams and its site-admin flag."""
    fresh = store.get_user(user.id) or user
    for group in store.groups_by_ids(set(fresh.group_ids or ())):
        linked_teams(group)
    site_admin_flag(fresh, store.load_settings())


def site_admin_flag(user: ScimUserModel, item: ScimSettingsModel) -> None:
    """Grant the flag to an active member of the site-admin group, or take back SCIM's."""
    should = bool(
        user.active
        and item.site_admin_group_id
        and item.site_admin_group_id in (user.group_ids or set())
    )
    if should and not user.granted_site_admin:
        instance = users_service.get_user(user.user_id)
        if not instance.is_site_admin:
            users_service.set_site_admin(user.user_id, True)
            _mark_granted(user, True)
    elif not should and user.granted_site_admin:
        take_back_grants([user])


def take_back_grants(users: Iterable[ScimUserModel]) -> None:
    """Take back the site-admin flag SCIM gave these users (``users_service.set_site_admin``:
    the last active site admin's is a 422). Called first in a request that ends grants, so
    a refusal comes before SCIM writes anything else. A user deleted meanwhile has no flag."""
    for user in users:
        if not user.granted_site_admin:
            continue
        with contextlib.suppress(NotFound):
            users_service.set_site_admin(user.user_id, False)
        _mark_granted(user, False)


def _mark_granted(user: ScimUserModel, flag: bool) -> None:
    store.update_user_if_present(user.id, ScimUserModel.granted_site_admin.set(flag))
    user.granted_site_admin = flag
