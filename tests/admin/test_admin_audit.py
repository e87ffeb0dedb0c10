"""The audit events of site administration (issue #37): each settings change, OIDC key
change and site admin's change to a user or an organization records one event, in the site's
partition (an organization's changes in its own), naming the attributes changed, never a
value (some are secrets)."""

from __future__ import annotations

import json
from typing import Any

from chalicelib.accounts.users import service as users_service
from tests.admin.helpers import admin_id, events_of, make_user, trail_events
from tests.conftest import Api, make_org

ADMIN = "/api/v2/admin"


def body(**attributes: Any) -> dict[str, Any]:
    return {"data": {"type": "", "attributes": attributes}}


def one_event(before: int, organization: str | None = None) -> dict[str, Any]:
    """The one event recorded since the partition held ``before`` events."""
    found = trail_events(organization)
    assert len(found) == before + 1, [e["resource"] for e in found[before:]]
    return found[-1]


def test_a_settings_change_records_which_attributes_changed_never_a_secret(api: Api) -> None:
    secret = "cost-secret-key-that-must-not-be-seen"
    before = len(trail_events())
    reply = api.patch(
        f"{ADMIN}/cost-estimation-settings",
        body(**{"aws-access-key-id": "AKIAEXAMPLE", "aws-secret-key": secret}),
    )
    assert reply.status == 200
    event = one_event(before)
    assert event["resource"]["type"] == "setting"
    assert event["resource"]["id"] == "cost-estimation"
    assert event["resource"]["action"] == "updated"
    assert event["resource"]["meta"]["changed"] == ["cloud-a-access-key-id", "cloud-a-secret-key"]
    assert event["resource"]["meta"]["outcome"] == "succeeded"
    assert event["auth"]["accessor_id"] == admin_id()
    assert event["auth"]["description"] == "admin"
    assert secret not in json.dumps(event) and "AKIAEXAMPLE" not in json.dumps(event)


def test_each_settings_area_records_one_event_and_a_refused_change_none(api: Api) -> None:
    # path -> (attributes sent, the names the event lists)
    changes = {
        "general-settings": ({"api-rate-limit": 50}, ["api-rate-limit"]),
        "customization-settings": ({"footer": "hello"}, ["footer"]),
        "sms-settings": (
            {"account-sid": "AC1", "auth-token": "sms-token-never-shown"},
            ["account-sid", "auth-token"],
        ),
        "saml-settings": ({"attr-username": "User"}, ["attr-username"]),
        "smtp-settings": ({"host": "smtp.example.com"}, ["host"]),
    }
    for path, (attributes, changed) in changes.items():
        before = len(trail_events())
        assert api.patch(f"{ADMIN}/{path}", body(**attributes)).status == 200, path
        event = one_event(before)  # in the site's partition
        assert event["resource"]["action"] == "updated"
        assert event["resource"]["meta"]["changed"] == changed, path
        assert event["auth"]["organization_id"] == ""
        assert "sms-token-never-shown" not in json.dumps(event)
    before = len(trail_events())
    assert api.patch(f"{ADMIN}/general-settings", body(**{"api-rate-limit": 1})).status == 422
    assert len(trail_events()) == before


def test_retention_policy_and_oidc_keys_record_their_events(api: Api) -> None:
    before = len(trail_events())
    policy = {
        "data": {
            "type": "data-retention-policy-delete-olders",
            "attributes": {"delete-older-than-n-days": 30},
        }
    }
    assert api.post(f"{ADMIN}/data-retention-policy-settings", policy).status == 201
    assert one_event(before)["resource"]["action"] == "created"
    before += 1
    assert api.delete(f"{ADMIN}/data-retention-policy-settings").status == 204
    assert one_event(before)["resource"]["action"] == "deleted"
    before += 1
    assert api.delete(f"{ADMIN}/data-retention-policy-settings").status == 204
    assert len(trail_events()) == before  # none was set: nothing changed

    assert api.client.http.get("/.well-known/jwks").status_code == 200  # the first key
    created = events_of("created")[-1]
    assert created["resource"]["id"] == "oidc" and created["auth"]["type"] == "System"
    before = len(trail_events())
    assert api.post(f"{ADMIN}/oidc-settings/actions/rotate-key").status == 204
    rotated = one_event(before)
    assert rotated["resource"]["id"] == "oidc"
    assert "keys" in rotated["resource"]["meta"]["changed"]
    assert rotated["auth"]["accessor_id"] == admin_id()


def test_admin_people_actions_record_one_event_each(api: Api) -> None:
    bob_id, _ = make_user("bob")
    actions = {
        "grant_admin": "admin-granted",
        "revoke_admin": "admin-revoked",
        "suspend": "suspended",
        "unsuspend": "unsuspended",
        "disable_two_factor": "two-factor-disabled",
    }
    for action, recorded in actions.items():
        before = len(trail_events())
        assert api.post(f"{ADMIN}/users/{bob_id}/actions/{action}").status == 200, action
        event = one_event(before)
        assert event["resource"] == {
            "id": bob_id,
            "type": "user",
            "action": recorded,
            "meta": {"username": "bob", "outcome": "succeeded"},
        }
        assert event["auth"]["accessor_id"] == admin_id()
    before = len(trail_events())
    assert api.post(f"{ADMIN}/users/{admin_id()}/actions/revoke_admin").status == 422
    assert len(trail_events()) == before  # refused: the last site admin
    assert api.delete(f"{ADMIN}/users/{bob_id}").status == 204
    assert one_event(before)["resource"]["action"] == "deleted"
    assert users_service.find_user(bob_id) is None


def test_an_organizations_admin_attributes_are_recorded_in_its_partition(api: Api) -> None:
    make_org(api, "acme")
    make_org(api, "other")
    before = len(trail_events("acme"))
    reply = api.patch(
        f"{ADMIN}/organizations/acme",
        {"data": {"type": "organizations", "attributes": {"global-module-sharing": True}}},
    )
    assert reply.status == 200
    event = one_event(before, "acme")
    assert event["resource"]["type"] == "organization"
    assert event["resource"]["meta"]["changed"] == ["global-module-sharing"]
    consumers = {"data": [{"type": "organizations", "id": "other"}]}
    reply = api.patch(f"{ADMIN}/organizations/acme/relationships/module-consumers", consumers)
    assert reply.status == 200
    assert one_event(before + 1, "acme")["resource"]["meta"]["changed"] == ["module-consumers"]
