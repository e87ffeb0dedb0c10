"""The audit trail's filters (actor, resource type, action, ``since``/``until``): what they
keep, their pages, their bounds (an unknown or overlong filter is a 422, never a 500), the
bound on what a filtered read examines; and an organization's trail beginning at its
creation, so a new organization under a deleted one's name reads none of its events."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from chalicelib.accounts.organizations.service import get_organization
from chalicelib.core.audit import events, store, trail
from chalicelib.core.auth import Principal
from tests.audit.test_audit_trail import ADMIN_TRAIL, ORG_TRAIL, START, decode_as_go_tfe
from tests.conftest import Api, doc, make_org

POLICY = "/api/v2/organizations/acme/registry-policy"
ALICE = Principal("user", "user-alice", "at-a")
BOB = Principal("user", "user-bob", "at-b")


def _record(
    who: Principal | None, resource_type: str, action: str, n: int, org: str | None = "acme"
) -> None:
    trail.record(
        events.event(
            who,
            organization=org,
            resource_type=resource_type,
            resource_id=f"id-{n}",
            action=action,
            description={ALICE: "alice", BOB: "bob"}.get(who) if who else None,
            moment=START + timedelta(seconds=n),
        )
    )


def _at(seconds: int) -> str:
    """START and ``seconds`` as a query value (ISO 8601, its ``Z`` needs no escaping)."""
    return (START + timedelta(seconds=seconds)).strftime("%Y-%m-%dT%H:%M:%SZ")


@pytest.fixture
def acme(api: Api) -> Api:
    make_org(api, "acme")
    return api


def _org_token(api: Api, org: str = "acme") -> Api:
    reply = api.post(f"/api/v2/organizations/{org}/authentication-token", raw="null")
    assert reply.status == 201, reply.json
    return api.as_(reply.data["attributes"]["token"])


def _ids(body: dict[str, Any]) -> list[str]:
    """The ids of the events the fixture recorded (the organization's own creation and its
    token's are in its trail too)."""
    return [e["resource"]["id"] for e in decode_as_go_tfe(body) if e["resource"]["id"][:3] == "id-"]


@pytest.fixture
def recorded(acme: Api) -> Api:
    """Eight events: alice and bob, modules and teams, created and deleted, one a second."""
    _record(ALICE, "registry-module", "created", 0)
    _record(BOB, "registry-module", "created", 1)
    _record(ALICE, "team", "created", 2)
    _record(ALICE, "registry-module", "deleted", 3)
    _record(BOB, "team", "deleted", 4)
    _record(ALICE, "registry-module", "created", 5)
    _record(None, "registry-module-version", "uploaded", 6)  # the registry's own worker
    _record(ALICE, "registry-module", "created", 7)
    return _org_token(acme)


def test_each_filter_keeps_only_its_events(recorded: Api) -> None:
    def read(query: str) -> list[str]:
        reply = recorded.get(f"{ORG_TRAIL}?{query}")
        assert reply.status == 200, reply.json
        return _ids(reply.json)

    assert read("filter[actor]=user-bob") == ["id-1", "id-4"]
    assert read("filter[actor]=alice") == ["id-0", "id-2", "id-3", "id-5", "id-7"]  # username
    assert read("filter[actor]=registry") == ["id-6"]  # the registry itself
    assert read("filter[resource-type]=team") == ["id-2", "id-4"]
    assert read("filter[action]=deleted") == ["id-3", "id-4"]
    assert read(
        "filter[actor]=alice&filter[resource-type]=registry-module&filter[action]=created"
    ) == ["id-0", "id-5", "id-7"]
    at = _at(2)
    until = _at(5)
    assert read(f"since={at}&until={until}") == ["id-3", "id-4"]  # neither end included
    assert read(f"until={until}") == ["id-0", "id-1", "id-2", "id-3", "id-4"]
    assert read(f"since={at}&until={until}&filter[actor]=alice") == ["id-3"]
    assert read("filter[actor]=nobody") == []


def test_a_filtered_trail_pages_in_hcps_shape(recorded: Api) -> None:
    """Pages of the matching events only, and their count, as the unfiltered trail pages."""
    query = "filter[actor]=alice&page[size]=2"
    first = recorded.get(f"{ORG_TRAIL}?{query}").json
    second = recorded.get(f"{ORG_TRAIL}?{query}&page[number]=2").json
    third = recorded.get(f"{ORG_TRAIL}?{query}&page[number]=3").json
    past = recorded.get(f"{ORG_TRAIL}?{query}&page[number]=9").json
    assert [_ids(first), _ids(second), _ids(third), _ids(past)] == [
        ["id-0", "id-2"],
        ["id-3", "id-5"],
        ["id-7"],
        [],
    ]
    assert second["pagination"] == {
        "current_page": 2,
        "prev_page": 1,
        "next_page": 3,
        "total_pages": 3,
        "total_count": 5,
    }
    assert past["pagination"]["total_count"] == 5
    # The unfiltered trail pages within until, too.
    until = _at(5)
    since = _at(-1)  # after the organization's own creation events
    window = recorded.get(
        f"{ORG_TRAIL}?since={since}&until={until}&page[size]=2&page[number]=2"
    ).json
    assert _ids(window) == ["id-2", "id-3"] and window["pagination"]["total_count"] == 5
    last = recorded.get(f"{ORG_TRAIL}?since={since}&until={until}&page[size]=2&page[number]=3").json
    assert _ids(last) == ["id-4"] and last["pagination"]["next_page"] is None


def test_a_change_recorded_in_its_transaction_is_filtered_too(acme: Api) -> None:
    """An event written inside its change's transaction (an UpdateItem, ``store.put_in``)
    carries the filtered attributes as an event written alone does."""
    reply = acme.patch(POLICY, doc("registry-policies", **{"require-readme": True}))
    assert reply.status == 200, reply.json
    token = _org_token(acme)
    by_type = token.get(f"{ORG_TRAIL}?filter[resource-type]=registry-policy").json
    assert [(e["resource"]["type"], e["resource"]["action"]) for e in by_type["data"]] == [
        ("registry-policy", "updated")
    ]
    by_admin = token.get(f"{ORG_TRAIL}?filter[actor]=admin").json["data"]
    assert ("organization", "acme") in [
        (e["resource"]["type"], e["resource"]["id"]) for e in by_admin
    ]
    assert token.get(f"{ORG_TRAIL}?filter[action]=deleted").json["data"] == []


@pytest.mark.parametrize(
    ("query", "parameter"),
    [
        ("filter[nothing]=x", "filter[nothing]"),
        ("filter[organization]=acme", "filter[organization]"),  # the admin trail's only
        ("filter[actor]=" + "a" * 256, "filter[actor]"),
        ("filter[actor]=a%00b", "filter[actor]"),
        ("filter[resource-type]=" + "a" * 65, "filter[resource-type]"),
        ("filter[resource-type]=Registry%20Module", "filter[resource-type]"),
        ("filter[action]=" + "x" * 5000, "filter[action]"),
        ("filter[action]=created;drop", "filter[action]"),
        ("since=" + "2" * 65, "since"),
        ("until=tomorrow", "until"),
    ],
)
def test_an_unknown_overlong_or_misshapen_filter_is_a_422(
    recorded: Api, query: str, parameter: str
) -> None:
    reply = recorded.get(f"{ORG_TRAIL}?{query}")
    assert reply.status == 422, reply.json
    assert reply.json["errors"][0]["source"] == {"parameter": parameter}


def test_the_admin_trail_takes_the_same_filters_and_its_organization(
    acme: Api, recorded: Api
) -> None:
    admin = acme  # the site admin
    reply = admin.get(f"{ADMIN_TRAIL}?filter[organization]=acme&filter[actor]=bob")
    assert reply.status == 200, reply.json
    assert _ids(reply.json) == ["id-1", "id-4"]
    _record(BOB, "user", "admin-granted", 9, org=None)
    assert _ids(admin.get(f"{ADMIN_TRAIL}?filter[action]=admin-granted").json) == ["id-9"]
    refused = admin.get(f"{ADMIN_TRAIL}?filter[who]=bob")
    assert refused.status == 422 and refused.json["errors"][0]["source"] == {
        "parameter": "filter[who]"
    }


def test_a_filter_that_would_read_too_many_events_is_a_422_that_says_to_narrow_it(
    recorded: Api, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A filtered read examines at most ``MAX_FILTERED`` events (DynamoDB's Limit): past
    that it asks for a narrower time range, which then reads."""
    monkeypatch.setattr(store, "MAX_FILTERED", 3)
    refused = recorded.get(f"{ORG_TRAIL}?filter[actor]=bob")
    assert refused.status == 422, refused.json
    assert "narrow the time range" in refused.json["errors"][0]["detail"]
    narrower = f"filter[actor]=bob&since={_at(2)}&until={_at(5)}"  # two events
    assert _ids(recorded.get(f"{ORG_TRAIL}?{narrower}").json) == ["id-4"]
    # Unfiltered pages are not filtered reads: they count keys only.
    assert len(recorded.get(f"{ORG_TRAIL}?since={_at(-1)}").json["data"]) == 8


def test_the_organizations_trail_begins_at_its_creation(acme: Api) -> None:
    """An event at the organization's very moment of creation is its own; one before it is
    not (it can only be a deleted organization's of the same name)."""
    created = get_organization("acme")
    assert created is not None
    for n, moment in ((1, created.created_at), (2, created.created_at - timedelta(microseconds=1))):
        trail.record(
            events.event(
                ALICE,
                organization="acme",
                resource_type="organization",
                resource_id=f"id-{n}",
                action="created",
                moment=moment,
            )
        )
    assert _ids(_org_token(acme).get(ORG_TRAIL).json) == ["id-1"]
    everything = acme.get(f"{ADMIN_TRAIL}?filter[organization]=acme").json
    assert _ids(everything) == ["id-2", "id-1"]


def test_a_new_organization_under_a_deleted_ones_name_reads_none_of_its_events(
    acme: Api,
) -> None:
    """acme changes its policy and is deleted; a new acme's token reads no event of the old
    one (not filtered either), while site admins still read them with filter[organization]."""
    changed = acme.patch(POLICY, doc("registry-policies", **{"require-readme": True}))
    assert changed.status == 200, changed.json
    old = _org_token(acme).get(ORG_TRAIL).json
    assert any(e["resource"]["type"] == "registry-policy" for e in old["data"])
    assert acme.delete("/api/v2/organizations/acme").status in (200, 202, 204)
    make_org(acme, "acme")

    token = _org_token(acme)
    reread = token.get(ORG_TRAIL).json
    assert all(e["resource"]["type"] != "registry-policy" for e in reread["data"]), reread
    assert token.get(f"{ORG_TRAIL}?filter[resource-type]=registry-policy").json["data"] == []
    assert token.get(f"{ORG_TRAIL}?since=2000-01-01T00:00:00Z").json["pagination"][
        "total_count"
    ] == len(reread["data"])
    kept = acme.get(
        f"{ADMIN_TRAIL}?filter[organization]=acme&filter[resource-type]=registry-policy"
    )
    assert [e["id"] for e in kept.json["data"]] == [
        e["id"] for e in old["data"] if e["resource"]["type"] == "registry-policy"
    ]
