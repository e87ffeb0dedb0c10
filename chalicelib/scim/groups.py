"""SCIM Groups (``/scim/v2/Groups``) and the teams that follow them (the admin API's team links).

* A team linked to a group has exactly the group's active members, kept so on every change
  the identity provider makes (unless the link's sync is paused; resuming reconciles:
  ``scim.sync``). The owners team cannot be linked, nor can the site-admin group.
* Members of the site-admin group (``site-admin-group-scim-id``) are site admins; SCIM takes
  the flag back only from users it granted it to. Taking the flag SCIM gave the last active
  site admin (leaving the site-admin group, deleting or changing that group) is a 422, made
  before SCIM writes anything of that request.
"""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING, Any

from chalicelib.accounts.teams import service as teams_service
from chalicelib.core.api import bounds
from chalicelib.core.api.bounds import utf8_length
from chalicelib.core.api.errors import Conflict, NotFound, Unprocessable, attribute_pointer
from chalicelib.core.audit import events, trail
from chalicelib.core.data.ids import now
from chalicelib.scim import protocol, resources, store, sync
from chalicelib.scim.errors import ScimError, bad_request, not_found
from chalicelib.scim.store import ScimGroupModel, ScimMappingModel, ScimUserModel

if TYPE_CHECKING:
    from pynamodb.expressions.update import Action

    from chalicelib.core.auth import Principal

# A member's value (a User's SCIM id: ours are far shorter).
MAX_ID = bounds.IDENTIFIER
MAX_MEMBERS_PER_REQUEST = 1000


def get_group(scim_id: str) -> ScimGroupModel:
    group = store.get_group(scim_id)
    if group is None:
        raise not_found(f"Group {scim_id} not found")
    return group


def _member_ids(value: Any) -> set[str]:
    """The user ids of a ``members`` value: ``[{"value": id}, ...]`` (a single object too)."""
    items = value if isinstance(value, list) else [value] if isinstance(value, dict) else None
    if items is None:
        raise bad_request('members must be an array of {"value": "<user id>"} objects')
    if len(items) > MAX_MEMBERS_PER_REQUEST:
        raise _too_many_members(len(items))
    ids = set()
    for item in items:
        member = protocol.lookup(item, "value") if isinstance(item, dict) else None
        if not isinstance(member, str) or not member:
            raise bad_request('each member needs a "value": the SCIM id of a User')
        if utf8_length(member) > MAX_ID:
            raise bad_request(f"a member's value is at most {MAX_ID} bytes", "invalidValue")
        ids.add(member)
    return ids


def _existing_users(ids: set[str]) -> set[str]:
    found = {user.id for user in store.users_by_ids(ids)}
    missing = ids - found
    if missing:
        raise bad_request(f"no such User: {', '.join(sorted(missing))}", "invalidValue")
    return found


def _group_fields(body: Any) -> tuple[str, str | None, set[str] | None]:
    if not isinstance(body, dict):
        raise bad_request("the request body must be a JSON object", "invalidSyntax")
    display = resources.string(protocol.lookup(body, "displayname"), "displayName", required=True)
    external_id = resources.string(protocol.lookup(body, "externalid"), "externalId")
    members_raw = protocol.lookup(body, "members")
    members = None if members_raw is None else _member_ids(members_raw)
    return display.strip(), external_id, members  # type: ignore[union-attr]


def create_group(body: Any) -> ScimGroupModel:
    display, external_id, members = _group_fields(body)
    if store.groups_by_name(display):
        raise ScimError(409, f"displayName {display!r} is already provisioned", "uniqueness")
    members = _existing_users(members or set())
    moment = now()
    group = ScimGroupModel(
        str(uuid.uuid4()),
        display_name=display,
        display_name_lower=display.lower(),
        external_id=external_id,
        member_ids=members,
        created_at=moment,
        updated_at=moment,
    )
    group.save(condition=ScimGroupModel.id.does_not_exist())
    sync.members_changed(group, added=members, removed=set())
    return group


def _write_group(
    group: ScimGroupModel, display: str, external_id: str | None, members: set[str]
) -> ScimGroupModel:
    if display.lower() != group.display_name_lower and any(
        other.id != group.id for other in store.groups_by_name(display)
    ):
        raise ScimError(409, f"displayName {display!r} is already provisioned", "uniqueness")
    before = set(group.member_ids or ())
    added = _existing_users(members - before)
    removed = before - members
    actions: list[Action] = [
        ScimGroupModel.display_name.set(display),
        ScimGroupModel.display_name_lower.set(display.lower()),
        ScimGroupModel.updated_at.set(now()),
        ScimGroupModel.external_id.set(external_id)
        if external_id
        else ScimGroupModel.external_id.remove(),
    ]
    if added:
        actions.append(ScimGroupModel.member_ids.add(added))
    if removed and store.load_settings().site_admin_group_id == group.id:
        sync.take_back_grants(store.users_by_ids(removed))  # first: the last admin's is a 422
    renamed = display != group.display_name
    group.update(actions=actions)
    if removed:  # DynamoDB takes one action per attribute and update
        group.update(actions=[ScimGroupModel.member_ids.delete(removed)])
    if renamed:  # linked teams show their group's name
        for mapping in store.mappings_of_group(group.id):
            teams_service.set_team_scim_link(mapping.team_id, display, mapping.paused)
    sync.members_changed(group, added=added, removed=removed)
    return group


def replace_group(scim_id: str, body: Any) -> ScimGroupModel:
    group = get_group(scim_id)
    display, external_id, members = _group_fields(body)
    return _write_group(group, display, external_id, members or set())


def _too_many_members(count: int) -> ScimError:
    return ScimError(413, f"at most {MAX_MEMBERS_PER_REQUEST} members per request, not {count}")


def _members_named(operations: list[protocol.Operation]) -> int:
    """How many members a PatchOp names, all operations together (a Group's only
    multi-valued attribute is ``members``)."""
    values = [o.value for o in operations]
    values += [v for value in values if isinstance(value, dict) for v in value.values()]
    return sum(len(v) for v in values if isinstance(v, list))


def patch_group(scim_id: str, body: Any) -> ScimGroupModel:
    group = get_group(scim_id)
    display = group.display_name
    external_id: str | None = group.external_id
    members = set(group.member_ids or ())
    operations = protocol.patch_operations(body)
    if (named := _members_named(operations)) > MAX_MEMBERS_PER_REQUEST:
        raise _too_many_members(named)
    for operation in operations:
        if operation.path is None:
            for key, value in operation.value.items():
                display, external_id, members = _apply_group(
                    operation.op, key, value, display, external_id, members
                )
        else:
            display, external_id, members = _apply_group(
                operation.op, operation.path, operation.value, display, external_id, members
            )
    display = resources.string(display, "displayName", required=True)  # type: ignore[assignment]
    return _write_group(group, display.strip(), external_id, members)


def _apply_group(
    op: str, path_text: str, value: Any, display: str, external_id: str | None, members: set[str]
) -> tuple[str, str | None, set[str]]:
    path = protocol.parse_path(path_text)
    attribute = path.attribute.lower()
    if attribute == "displayname":
        if op == "remove":
            raise bad_request("displayName is required and cannot be removed", "mutability")
        return resources.string(value, "displayName", required=True), external_id, members  # type: ignore[return-value]
    if attribute == "externalid":
        return display, None if op == "remove" else resources.string(value, "externalId"), members
    if attribute in ("id", "meta", "schemas"):
        if op == "replace" and path.filter is None:
            return display, external_id, members  # Entra ID repeats the id: harmless
        raise bad_request(f"{path_text} cannot be changed", "mutability")
    if attribute != "members":
        raise bad_request(f"unknown attribute {path_text!r}", "invalidPath")
    if path.filter is not None:  # members[value eq "id"]
        chosen = {m for m in members if protocol.matches({"value": m}, path.filter)}
        if op != "remove":
            raise bad_request("only remove takes a members[...] path", "invalidPath")
        return display, external_id, members - chosen
    if op == "remove":
        return display, external_id, members - _member_ids(value) if value is not None else set()
    given = _member_ids(value)
    return display, external_id, (members | given) if op == "add" else given


def delete_group(scim_id: str) -> None:
    """Delete the group: its teams are unlinked (keeping the members they have), and when it
    was the site-admin group, the admins it granted lose the flag."""
    group = get_group(scim_id)
    item = store.load_settings()
    was_admin_group = item.site_admin_group_id == group.id
    if was_admin_group:  # first: the last active site admin's grant is a 422
        sync.take_back_grants(store.users_by_ids(set(group.member_ids or ())))
    for mapping in store.mappings_of_group(group.id):
        mapping.delete()
        teams_service.set_team_scim_link(mapping.team_id, None)
    if was_admin_group:
        item.site_admin_group_id = None
        store.save_versioned(item)
    members = store.users_by_ids(set(group.member_ids or ()))
    for user in members:
        user.update(actions=[ScimUserModel.group_ids.delete({group.id})])
    group.delete()
    if was_admin_group:
        for user in members:
            sync.site_admin_flag(user, item)


def list_groups(node: protocol.Filter | None) -> list[ScimGroupModel]:
    """The groups a list with filter ``node`` may show (see ``list_users``)."""
    return resources.candidates(
        node,
        {
            "displayname": store.groups_by_name,
            "externalid": store.groups_by_external_id,
            "id": resources.one_or_none(store.get_group),
        },
        store.all_groups,
    )


def search_groups(q: str | None) -> list[ScimGroupModel]:
    """The admin API's list: ``q`` matches part of the name, case-insensitively."""
    groups = store.all_groups()
    if q:
        needle = q.lower()
        groups = [g for g in groups if needle in g.display_name_lower]
    return groups


# ----- team links (the admin API) --------------------------------------------------------------

# TFE's texts, which go-tfe's errors compare whole ("<title>\n\n<detail>").
ALREADY_LINKED = "Team is already linked to a SCIM group"
NOT_LINKED = "Team is not linked to a SCIM group"


def _refused(detail: str) -> Unprocessable:
    return Unprocessable(
        detail, pointer=attribute_pointer("scim-group-id"), title="unprocessable entity"
    )


def _team(team_id: str):  # noqa: ANN202
    team = teams_service.find_team(team_id) if store.MAX_KEY >= len(team_id) > 0 else None
    if team is None:
        raise NotFound(f"team {team_id} not found")
    return team


def _mapping_changed(
    principal: Principal, team: Any, group_id: str | None, action: str, paused: bool = False
) -> None:
    """Record a site admin's change to a team's link to a SCIM group, in the team's
    organization's partition (its owners read it)."""
    event = events.event(
        principal,
        organization=team.organization,
        resource_type="scim-group-mapping",
        resource_id=team.id,
        action=action,
        meta={"team": team.name, "scim-group-id": group_id, "paused": paused},
    )
    trail.record(event)


def create_mapping(principal: Principal, team_id: str, group_id: str) -> ScimMappingModel:
    team = _team(team_id)
    if team.is_owners:
        raise _refused("Owners team SCIM linking is not yet supported")
    group = store.get_group(group_id)
    if group is None:
        raise NotFound(f"SCIM group {group_id} not found")
    if store.load_settings().site_admin_group_id == group_id:
        raise _refused("The site admin group cannot be linked to a team")
    mapping = ScimMappingModel(team.id, group_id=group.id, paused=False, created_at=now())
    if not store.insert_mapping(mapping):
        raise Conflict(ALREADY_LINKED)
    teams_service.set_team_scim_link(team.id, group.display_name)
    sync.team_members(mapping, group)
    _mapping_changed(principal, team, group.id, "created")
    return mapping


def mapping_of(team_id: str) -> ScimMappingModel:
    _team(team_id)
    mapping = store.get_mapping(team_id)
    if mapping is None:
        raise Conflict(NOT_LINKED)
    return mapping


def update_mapping(principal: Principal, team_id: str, paused: bool) -> ScimMappingModel:
    mapping = mapping_of(team_id)
    resumed = mapping.paused and not paused
    mapping.update(actions=[ScimMappingModel.paused.set(paused)])
    group = store.get_group(mapping.group_id)
    teams_service.set_team_scim_link(team_id, group.display_name if group else None, paused)
    if resumed and group is not None:  # resuming reconciles what changed while paused
        sync.team_members(mapping, group)
    _mapping_changed(principal, _team(team_id), mapping.group_id, "updated", paused)
    return mapping


def delete_mapping(principal: Principal, team_id: str) -> None:
    """Unlink: the team keeps its members, and stops following the group."""
    mapping = mapping_of(team_id)
    mapping.delete()
    teams_service.set_team_scim_link(team_id, None)
    _mapping_changed(principal, _team(team_id), mapping.group_id, "deleted")
