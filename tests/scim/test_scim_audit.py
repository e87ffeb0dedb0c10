"""SCIM in the audit trail (issue #37): the settings, each SCIM token created or revoked, and
each user and group the identity provider provisions, changes or removes record one event in
the site's partition; the identity provider's changes name the SCIM token as their actor; no
event holds a token's value. A team's link to a SCIM group is recorded in its organization's
partition."""

from __future__ import annotations

import json
from typing import Any

from tests.admin.helpers import admin_id, trail_events
from tests.conftest import Api, make_org, make_team
from tests.scim.helpers import (
    ADMIN,
    PATCH_OP,
    SETTINGS,
    TOKENS,
    Scim,
    body,
    enable_saml,
    new_token,
)


def new_events(before: int, organization: str | None = None) -> list[dict[str, Any]]:
    return trail_events(organization)[before:]


def test_settings_and_tokens_record_their_events_never_the_token(api: Api) -> None:
    enable_saml(api)
    before = len(trail_events())
    assert api.patch(SETTINGS, body(enabled=True)).status == 200
    [enabled] = new_events(before)
    assert enabled["resource"]["type"] == "setting" and enabled["resource"]["id"] == "scim"
    assert enabled["resource"]["meta"]["changed"] == ["enabled"]
    assert enabled["auth"]["accessor_id"] == admin_id()

    before = len(trail_events())
    created = new_token(api, description="okta")
    assert created.status == 201
    secret = created.data["attributes"]["token"]
    token_id = created.data["id"]
    [made] = new_events(before)
    assert made["resource"]["type"] == "scim-token" and made["resource"]["id"] == token_id
    assert made["resource"]["action"] == "created"
    assert made["resource"]["meta"]["description"] == "okta"
    assert secret not in json.dumps(trail_events())

    before = len(trail_events())
    assert api.delete(f"{TOKENS}/{token_id}").status == 204
    [revoked] = new_events(before)
    assert revoked["resource"]["action"] == "deleted"

    before = len(trail_events())
    assert api.delete(SETTINGS).status == 204
    [disabled] = new_events(before)
    assert disabled["resource"]["action"] == "deleted"
    assert disabled["resource"]["meta"]["changed"] == ["enabled"]


def test_what_the_identity_provider_changes_names_its_scim_token(api: Api) -> None:
    enable_saml(api)
    assert api.patch(SETTINGS, body(enabled=True)).status == 200
    created = new_token(api, description="okta")
    token_id, secret = created.data["id"], created.data["attributes"]["token"]
    idp = Scim(api, secret)

    before = len(trail_events())
    user = idp.user("jane@example.com")
    [provisioned] = new_events(before)
    assert provisioned["auth"]["accessor_id"] == token_id
    assert provisioned["auth"]["description"] == "SCIM token okta"
    assert provisioned["auth"]["organization_id"] == ""
    assert provisioned["resource"]["type"] == "scim-user"
    assert provisioned["resource"]["id"] == user["id"]
    assert provisioned["resource"]["action"] == "created"
    assert provisioned["resource"]["meta"]["user-name"] == "jane@example.com"

    before = len(trail_events())
    operation = {"op": "replace", "path": "active", "value": False}
    assert idp.patch(f"/Users/{user['id']}", operation).status == 200
    [deactivated] = new_events(before)
    assert deactivated["resource"]["action"] == "updated"
    assert deactivated["resource"]["meta"]["active"] is False

    before = len(trail_events())
    group = idp.group("engineers", user["id"])
    [grouped] = new_events(before)
    assert grouped["resource"]["type"] == "scim-group"
    assert grouped["resource"]["meta"] == {
        "display-name": "engineers",
        "members": 1,
        "outcome": "succeeded",
    }
    rename = {
        "schemas": [PATCH_OP],
        "Operations": [{"op": "replace", "value": {"displayName": "eng"}}],
    }
    before = len(trail_events())
    assert idp.call("PATCH", f"/Groups/{group['id']}", rename).status == 200
    assert [e["resource"]["action"] for e in new_events(before)] == ["updated"]

    make_org(api, "acme")
    team_id, _ = make_team(api, "acme", "platform")
    mapping = {
        "data": {"type": "scim-group-mappings", "attributes": {"scim-group-id": group["id"]}}
    }
    before_org = len(trail_events("acme"))
    assert api.post(f"{ADMIN}/teams/{team_id}/scim-group-mapping", mapping).status == 204
    [linked] = new_events(before_org, "acme")
    assert linked["resource"]["type"] == "scim-group-mapping"
    assert linked["resource"]["id"] == team_id and linked["resource"]["action"] == "created"
    assert api.delete(f"{ADMIN}/teams/{team_id}/scim-group-mapping").status == 204
    assert new_events(before_org + 1, "acme")[0]["resource"]["action"] == "deleted"

    for path in (f"/Groups/{group['id']}", f"/Users/{user['id']}"):
        before = len(trail_events())
        assert idp.delete(path).status == 204
        [removed] = new_events(before)
        assert removed["resource"]["action"] == "deleted", path
    assert secret not in json.dumps(trail_events())
