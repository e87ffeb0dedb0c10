"""Documents of SCIM provisioning: SCIM resources for ``/scim/v2`` (``application/scim+json``)
and the JSON:API resources of the admin API."""

from __future__ import annotations

import json
from typing import Any

from chalice import Response

from chalicelib.core.api.jsonapi import resource
from chalicelib.core.auth import TokenModel
from chalicelib.core.data.ids import iso
from chalicelib.scim import protocol, store
from chalicelib.scim.errors import SCIM_JSON
from chalicelib.scim.store import ScimGroupModel, ScimSettingsModel, ScimUserModel

SCIM_BASE = "/scim/v2"


def scim_response(body: Any, status: int = 200, location: str | None = None) -> Response:
    headers: dict[str, str | list[str]] = {"Content-Type": SCIM_JSON}
    if location:
        headers["Location"] = location
    return Response(body=json.dumps(body), status_code=status, headers=headers)


def _meta(kind: str, item: ScimUserModel | ScimGroupModel, base: str) -> dict[str, Any]:
    return {
        "resourceType": kind,
        "created": iso(item.created_at),
        "lastModified": iso(item.updated_at),
        "location": f"{base}/{kind}s/{item.id}",
    }


def scim_user(user: ScimUserModel, base: str, groups: dict[str, str]) -> dict[str, Any]:
    """``groups``: SCIM group id -> displayName, for the user's ``groups``."""
    attributes = dict(user.attributes or {})
    schemas = [protocol.USER_SCHEMA]
    if protocol.ENTERPRISE_SCHEMA in attributes:
        schemas.append(protocol.ENTERPRISE_SCHEMA)
    out: dict[str, Any] = {"schemas": schemas, "id": user.id}
    if user.external_id:
        out["externalId"] = user.external_id
    out["userName"] = user.user_name
    out.update(attributes)
    out["active"] = bool(user.active)
    out["groups"] = [
        {"value": gid, "display": groups[gid], "$ref": f"{base}/Groups/{gid}", "type": "direct"}
        for gid in sorted(user.group_ids or ())
        if gid in groups
    ]
    out["meta"] = _meta("User", user, base)
    return out


def scim_group(group: ScimGroupModel, base: str, users: dict[str, str]) -> dict[str, Any]:
    """``users``: SCIM user id -> userName, for the group's ``members``."""
    out: dict[str, Any] = {"schemas": [protocol.GROUP_SCHEMA], "id": group.id}
    if group.external_id:
        out["externalId"] = group.external_id
    out["displayName"] = group.display_name
    out["members"] = [
        {"value": uid, "display": users[uid], "$ref": f"{base}/Users/{uid}", "type": "User"}
        for uid in sorted(group.member_ids or ())
        if uid in users
    ]
    out["meta"] = _meta("Group", group, base)
    return out


def group_names(users: list[ScimUserModel]) -> dict[str, str]:
    ids = {gid for user in users for gid in user.group_ids or ()}
    return {g.id: g.display_name for g in store.groups_by_ids(ids)}


def user_names(groups: list[ScimGroupModel]) -> dict[str, str]:
    ids = {uid for group in groups for uid in group.member_ids or ()}
    return {u.id: u.user_name for u in store.users_by_ids(ids)}


def scim_users(users: list[ScimUserModel], base: str) -> list[dict[str, Any]]:
    names = group_names(users)
    return [scim_user(user, base, names) for user in users]


def scim_groups(
    groups: list[ScimGroupModel], base: str, *, members: bool = True
) -> list[dict[str, Any]]:
    names = user_names(groups) if members else {}
    return [scim_group(group, base, names) for group in groups]


# ----- JSON:API (admin) ------------------------------------------------------------------------


def settings_resource(item: ScimSettingsModel, group: ScimGroupModel | None) -> dict[str, Any]:
    return resource(
        "scim-settings",
        store.SETTINGS_ID,
        {
            "enabled": bool(item.enabled),
            "paused": bool(item.paused),
            "site-admin-group-scim-id": group.id if group else None,
            "site-admin-group-display-name": group.display_name if group else None,
            "link-existing-users": bool(item.link_existing_users),
        },
    )


def token_resource(token: TokenModel, secret: str | None = None) -> dict[str, Any]:
    """``secret`` only in the response that created the token."""
    attributes = {
        "created-at": iso(token.created_at),
        "last-used-at": None,
        "description": token.description,
        "expired-at": iso(token.expired_at),
    }
    if secret is not None:
        attributes["token"] = secret
    return resource("authentication-tokens", token.id, attributes)


def group_resource(group: ScimGroupModel) -> dict[str, Any]:
    return resource("scim-groups", group.id, {"name": group.display_name})
