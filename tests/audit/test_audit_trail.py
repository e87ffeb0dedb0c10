"""The audit trail's foundation (issue #37): the event's bounds, the API in HCP Terraform's
shape as go-tfe reads it, paging and ``since``, who may read which events, and the first
changes that record theirs (the publishing policy's; a version's lifecycle and release are in
tests/modules)."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from chalicelib.core import observe
from chalicelib.core.audit import events, trail
from chalicelib.core.auth import Principal
from tests.accounts.helpers import add_member, new_user, team_id_by_name
from tests.conftest import Api, doc, make_org, make_team

ORG_TRAIL = "/api/v2/organization/audit-trail"
ADMIN_TRAIL = "/api/v2/admin/audit-trail"
POLICY = "/api/v2/organizations/acme/registry-policy"
# The events these tests write themselves: after the organizations' creation (an
# organization's trail begins there).
START = datetime(2099, 1, 2, 3, 4, 5, tzinfo=UTC)

# go-tfe v1.109.0 audit_trail.go: the JSON field names of its struct tags, and the Go types
# they decode into (time.Time: an RFC 3339 string; *string: a string or null).
GO_TFE_TRAIL = {"id": str, "version": str, "type": str, "timestamp": "time"}
GO_TFE_AUTH = {
    "accessor_id": str,
    "description": str,
    "type": str,
    "impersonator_id": "*string",
    "organization_id": str,
}
GO_TFE_RESOURCE = {"id": str, "type": str, "action": str, "meta": "map"}
GO_TFE_PAGINATION = ("current_page", "prev_page", "next_page", "total_pages", "total_count")


def _decodes(value: Any, go_type: Any) -> bool:
    if go_type == "time":
        return isinstance(value, str) and datetime.fromisoformat(value).tzinfo is not None
    if go_type == "*string":
        return value is None or isinstance(value, str)
    if go_type == "map":
        return value is None or isinstance(value, dict)
    return isinstance(value, go_type)


def decode_as_go_tfe(body: dict[str, Any]) -> list[dict[str, Any]]:
    """What go-tfe's ``AuditTrails.List`` would decode: every field its structs name, of a
    type it accepts (Go's json leaves a missing field at zero: missing counts as wrong here);
    the pagination's ints (or null, which Go leaves at 0)."""
    pagination = body["pagination"]
    for name in GO_TFE_PAGINATION:
        assert pagination[name] is None or isinstance(pagination[name], int), name
    for item in body["data"]:
        for fields, part in (
            (GO_TFE_TRAIL, item),
            (GO_TFE_AUTH, item["auth"]),
            (GO_TFE_RESOURCE, item["resource"]),
        ):
            for name, go_type in fields.items():
                assert _decodes(part[name], go_type), (name, part.get(name))
        assert isinstance(item["request"]["id"], str)
    return list(body["data"])


def _event(organization: str | None, n: int, moment: datetime) -> events.Event:
    who = Principal("user", "user-x", "at-x")
    return events.event(
        who,
        organization=organization,
        resource_type="thing",
        resource_id=f"thing-{n}",
        action="updated",
        description="x",
        moment=moment,
    )


@pytest.fixture
def acme(api: Api) -> Api:
    make_org(api, "acme")
    return api


def _org_token(api: Api, org: str) -> Api:
    reply = api.post(f"/api/v2/organizations/{org}/authentication-token", raw="null")
    assert reply.status == 201, reply.json
    return api.as_(reply.data["attributes"]["token"])


def test_every_field_is_bounded_before_it_is_written() -> None:
    """A 500 KB user agent, a huge id, a meta of many long keys and values: cut, not
    refused (and never a 500 from DynamoDB's 400 KB item limit)."""
    huge = "x" * 500_000
    with observe.scope("r" * 5000) as scope:
        scope.source_address, scope.user_agent = "1" * 1000, huge
        meta = {f"k{i}{huge[:200]}": huge for i in range(100)}
        meta["list"] = [huge] * 1000
        made = events.event(
            Principal("team", "team-" + huge, "at-1"),
            organization="acme",
            resource_type=huge,
            resource_id=huge,
            action=huge,
            meta=meta,
            description=huge,
        )
    assert len(made.request.user_agent or "") == events.MAX_USER_AGENT
    assert (made.request.user_agent or "").endswith(events.CUT)
    assert len(made.request.source_address or "") == events.MAX_ADDRESS
    assert len(made.request.id) == events.MAX_ID
    assert len(made.auth.accessor_id) == len(made.auth.description) == events.MAX_ID
    resource = made.resource
    assert {len(resource.id), len(resource.type), len(resource.action)} == {events.MAX_ID}
    assert len(resource.meta) == events.MAX_META_KEYS
    assert resource.meta["outcome"] == events.SUCCEEDED  # kept whatever else the meta holds
    assert all(len(k) <= events.MAX_META_KEY for k in resource.meta)
    assert all(len(v) <= events.MAX_META_TEXT for v in resource.meta.values() if isinstance(v, str))
    # The whole event stays far below DynamoDB's 400 KB item.
    assert len(json.dumps(made.to_json())) < 100_000


def test_a_policy_change_is_recorded_and_read_as_go_tfe_reads_it(acme: Api) -> None:
    """Who (the user and their username), from where (address, user agent), which request,
    what changed (the attributes' names, not their values), the outcome; the organization
    token reads it in HCP's shape."""
    agent = "terraform-ci/1.0 " + "y" * 600_000  # a 600 KB user agent: cut, not a 500
    reply = acme.patch(
        POLICY,
        doc("registry-policies", **{"block-severity": "high", "require-readme": True}),
        headers={"User-Agent": agent},
    )
    assert reply.status == 200, reply.json
    listed = _org_token(acme, "acme").get(ORG_TRAIL)
    assert listed.status == 200, listed.json
    assert listed.headers["Content-Type"] == "application/json"  # HCP's is not JSON:API
    body = listed.json
    # The organization's creation and its token's record theirs too (tests/audit/
    # test_accounts_events.py).
    created, item, token = decode_as_go_tfe(body)
    assert [created["resource"]["type"], token["resource"]["type"]] == [
        "organization",
        "authentication-token",
    ]
    assert item["version"] == "0" and item["type"] == "Resource"
    assert item["auth"]["type"] == "Client" and item["auth"]["impersonator_id"] is None
    assert item["auth"]["accessor_id"].startswith("user-")
    assert item["auth"]["description"] == "admin"
    assert item["auth"]["organization_id"] == "acme"
    assert item["resource"] == {
        "id": "acme",
        "type": "registry-policy",
        "action": "updated",
        "meta": {"changed": ["block-severity", "require-readme"], "outcome": "succeeded"},
    }
    request = item["request"]
    assert request["id"] and request["source_address"]
    assert request["user_agent"].startswith("terraform-ci/1.0 ")
    assert len(request["user_agent"]) == events.MAX_USER_AGENT
    assert body["pagination"] == {
        "current_page": 1,
        "prev_page": None,
        "next_page": None,
        "total_pages": 1,
        "total_count": 3,
    }


def test_paging_and_since_in_hcps_shape(acme: Api) -> None:
    """Oldest first; HCP's default page of 1,000 and a bounded size; ``since`` excludes its
    own moment; a page past the end is empty; bad values are 422s."""
    for n in range(7):
        trail.record(_event("acme", n, START + timedelta(seconds=n)))
    token = _org_token(acme, "acme")
    # The organization's creation and its token's come first: the seven are recorded as of
    # START, in 2099.
    own = ["organization", "authentication-token"]

    whole = token.get(ORG_TRAIL).json
    assert [e["resource"]["type"] for e in whole["data"][:2]] == own
    assert [e["resource"]["id"] for e in whole["data"][2:]] == [f"thing-{n}" for n in range(7)]
    assert whole["pagination"]["total_count"] == 9

    second = token.get(f"{ORG_TRAIL}?page%5Bnumber%5D=2&page%5Bsize%5D=3").json
    assert [e["resource"]["id"] for e in decode_as_go_tfe(second)] == [
        "thing-1",
        "thing-2",
        "thing-3",
    ]
    assert second["pagination"] == {
        "current_page": 2,
        "prev_page": 1,
        "next_page": 3,
        "total_pages": 3,
        "total_count": 9,
    }
    last = token.get(f"{ORG_TRAIL}?page[number]=3&page[size]=3").json
    assert [e["resource"]["id"] for e in last["data"]] == ["thing-4", "thing-5", "thing-6"]
    assert last["pagination"]["next_page"] is None
    past = token.get(f"{ORG_TRAIL}?page[number]=9&page[size]=3").json
    assert past["data"] == [] and past["pagination"]["total_count"] == 9
    far = token.get(f"{ORG_TRAIL}?page[number]={10**15}")  # past DynamoDB's int32 Limit
    assert far.status == 200 and far.json["data"] == [], far.json

    since = (START + timedelta(seconds=4)).strftime("%Y-%m-%dT%H:%M:%S.000Z")
    after = token.get(f"{ORG_TRAIL}?since={since}").json
    assert [e["resource"]["id"] for e in after["data"]] == ["thing-5", "thing-6"]
    assert after["pagination"]["total_count"] == 2

    capped = token.get(f"{ORG_TRAIL}?page[size]=5000").json
    assert len(capped["data"]) == 9  # clamped to the bound, not refused
    assert token.get(f"{ORG_TRAIL}?since=yesterday").status == 422
    assert token.get(f"{ORG_TRAIL}?page[number]=x").status == 422


def test_who_reads_which_events(acme: Api) -> None:
    """Another organization's token sees none of acme's events; user and team tokens get a
    404 (HCP: "cannot be accessed with a user token or team token"), even acme's owners
    and the site admin's; no token: 401. Site admins read any organization's events and the
    site-wide ones at the admin route; anyone else gets its 404."""
    trail.record(_event("acme", 1, START))
    trail.record(_event(None, 2, START))
    make_org(acme, "evil")
    evils = _org_token(acme, "evil").get(ORG_TRAIL).json["data"]
    assert {e["auth"]["organization_id"] for e in evils} == {"evil"}  # its own only
    _, owner = new_user(acme, "olga")
    assert add_member(acme, team_id_by_name(acme, "acme", "owners"), "olga").status in (200, 204)
    _, team_token = make_team(acme, "acme", "readers")
    for caller in (acme, owner, acme.as_(team_token)):
        assert caller.get(ORG_TRAIL).status == 404
        assert caller.get(ORG_TRAIL).json["errors"]
    assert acme.as_(None).get(ORG_TRAIL).status == 401

    by_admin = acme.get(f"{ADMIN_TRAIL}?filter[organization]=acme").json
    things = [
        e["resource"]["id"] for e in decode_as_go_tfe(by_admin) if e["resource"]["type"] == "thing"
    ]
    assert things == ["thing-1"]
    assert acme.get(f"{ADMIN_TRAIL}?organization=acme").json == by_admin
    site = acme.get(ADMIN_TRAIL).json
    assert [e["resource"]["id"] for e in site["data"]] == ["thing-2"]
    for caller in (owner, acme.as_(team_token), _org_token(acme, "acme")):
        assert caller.get(f"{ADMIN_TRAIL}?filter[organization]=acme").status == 404
    long_name = "a" * 300
    assert acme.get(f"{ADMIN_TRAIL}?filter[organization]={long_name}").status == 422


def test_an_event_is_never_overwritten_and_the_trail_is_read_only(acme: Api) -> None:
    """Writing an event whose key exists is refused by its condition (never an overwrite),
    and every route of the trail only reads."""
    from pynamodb.exceptions import PutError

    from app import app

    first = _event("acme", 1, START)
    trail.record(first)
    with pytest.raises(PutError):
        trail.record(
            events.Event(**{**first.__dict__, "resource": _event("acme", 9, START).resource})
        )
    [kept] = [
        e for e in trail.read_page("acme", None, 1, 10)[0] if e["resource"]["type"] == "thing"
    ]
    assert kept["resource"]["id"] == "thing-1"
    served = {path: set(methods) for path, methods in app.routes.items() if "audit-trail" in path}
    pages = {"/app/{organization}/audit-trail": {"GET"}, "/app/admin/audit-trail": {"GET"}}
    assert served == {ORG_TRAIL: {"GET"}, ADMIN_TRAIL: {"GET"}, **pages}


def test_the_wrong_callers_walk_covers_the_trails_routes() -> None:
    """tests/test_authorization.py walks every route of every entry app with the wrong
    callers: the trail's routes are among them, in the function that serves them, the
    admin one declared site-auditor (so the walk expects its 404 for non-admins), the
    organization's audit-trail (its organization token or audit trail token)."""
    from tests.test_authorization import ROUTES

    walked = {(r.app.rsplit(".", 1)[-1], r.method, r.path, r.access) for r in ROUTES}
    assert {
        ("accounts", "GET", ORG_TRAIL, "audit-trail"),
        ("accounts", "GET", ADMIN_TRAIL, "site-auditor"),
    } <= walked


def test_no_function_may_delete_an_event() -> None:
    """Every function that writes events may only add them (PutItem, UpdateItem): none is
    granted DeleteItem or BatchWriteItem on the audit-events table; the reader reads only."""
    from infrastructure.groups import EVENT_FUNCTIONS, ROUTE_GROUPS
    from infrastructure.template import role

    def grants(function: Any) -> set[str]:
        statements = role(function)["Properties"]["Policies"][0]["PolicyDocument"]["Statement"]
        return {
            action
            for statement in statements
            for action in statement["Action"]
            if "audit-events" in json.dumps(statement.get("Resource"))
        }

    granted = {f.logical_id: grants(f) for f in (*ROUTE_GROUPS, *EVENT_FUNCTIONS)}
    writers = {name for name, actions in granted.items() if "dynamodb:PutItem" in actions}
    assert {"RegistryFunction", "WebAdminFunction", "APIHandler", "WebFunction"} <= writers
    assert "dynamodb:Query" in granted["APIHandler"]
    for name, actions in granted.items():
        assert not actions & {"dynamodb:DeleteItem", "dynamodb:BatchWriteItem"}, name
