"""JSON:API compound documents (``?include=``): what each endpoint serves, the 400 for what it
does not, and the core helpers that build ``included``.

terrasnek's teams test needs ``included`` on ``teams.list/show/list_all(include=["users"])``;
go-tfe and pytfe decode ``users`` and ``organization-memberships`` of teams from it.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.accounts.helpers import add_member, admin_id, assert_error, new_user, team_id_by_name
from tests.conftest import Api, Reply, doc, make_org

V2 = "/api/v2"
TEAMS = f"{V2}/organizations/acme/teams"


def refs(resource: dict[str, Any], relationship: str) -> list[tuple[str, str]]:
    data = resource["relationships"][relationship]["data"]
    items = data if isinstance(data, list) else [data]
    return [(item["type"], item["id"]) for item in items]


def included(reply: Reply) -> list[dict[str, Any]]:
    assert reply.status == 200, reply.json
    return reply.json["included"]


def keys(items: list[dict[str, Any]]) -> list[tuple[str, str]]:
    return [(item["type"], item["id"]) for item in items]


@pytest.fixture
def teams(api: Api) -> dict[str, Any]:
    """acme: owners (the admin and alice) and devs (alice and bob); alice is on both."""
    make_org(api)
    alice, alice_api = new_user(api, "alice")
    bob, bob_api = new_user(api, "bob")
    created = api.post(TEAMS, doc("teams", name="devs"))
    assert created.status == 201, created.json
    devs = created.data["id"]
    owners = team_id_by_name(api, "acme", "owners")
    assert add_member(api, devs, "alice", "bob").status == 204
    assert add_member(api, owners, "alice").status == 204
    return {
        "admin": admin_id(api),
        "alice": alice,
        "bob": bob,
        "bob_api": bob_api,
        "alice_api": alice_api,
        "devs": devs,
        "owners": owners,
    }


# ----- teams --------------------------------------------------------------------------------


def test_team_list_includes_each_member_once_and_relationships_point_at_them(
    api: Api, teams: dict[str, Any]
) -> None:
    reply = api.get(f"{TEAMS}?include=users")
    found = included(reply)
    members = {teams["admin"], teams["alice"], teams["bob"]}
    # alice is on both teams: she is included once.
    assert sorted(keys(found)) == sorted(("users", u) for u in members)
    assert all(item["attributes"]["username"] for item in found)
    related = {ref for team in reply.data for ref in refs(team, "users")}
    assert related == set(keys(found))
    by_name = {t["attributes"]["name"]: t for t in reply.data}
    assert refs(by_name["devs"], "users") == sorted(
        [("users", teams["alice"]), ("users", teams["bob"])]
    )
    # No include asked: no "included" member at all.
    assert "included" not in api.get(TEAMS).json


def test_team_list_all_pages_carry_included(api: Api, teams: dict[str, Any]) -> None:
    """terrasnek's list_all: one page at a time, each with the page's teams' members."""
    first = api.get(f"{TEAMS}?include=users&page[size]=1&page[number]=1")
    second = api.get(f"{TEAMS}?include=users&page[size]=1&page[number]=2")
    for reply in (first, second):
        (team,) = reply.data
        assert keys(included(reply)) == refs(team, "users")


def test_team_show_includes_exactly_its_members(api: Api, teams: dict[str, Any]) -> None:
    reply = api.get(f"{V2}/teams/{teams['devs']}?include=users")
    assert keys(included(reply)) == refs(reply.data, "users")
    assert {i for _, i in keys(reply.json["included"])} == {teams["alice"], teams["bob"]}
    # The admin is a site admin: every member's email shows.
    assert {u["attributes"]["email"] for u in reply.json["included"]} == {
        "alice@example.com",
        "bob@example.com",
    }
    assert "included" not in api.get(f"{V2}/teams/{teams['devs']}").json


def test_team_organization_memberships(api: Api, teams: dict[str, Any]) -> None:
    reply = api.get(f"{TEAMS}?include=organization-memberships")
    found = included(reply)
    by_name = {t["attributes"]["name"]: t for t in reply.data}
    # One membership per member of the organization, however many teams they are on.
    assert len(found) == 3 == len(set(keys(found)))
    assert {ref for t in reply.data for ref in refs(t, "organization-memberships")} == set(
        keys(found)
    )
    memberships = {refs(m, "user")[0][1]: m for m in found}
    assert set(memberships) == {teams["admin"], teams["alice"], teams["bob"]}
    alice = memberships[teams["alice"]]
    assert alice["id"].startswith("ou-")
    assert alice["attributes"] == {"status": "active", "email": "alice@example.com"}
    assert refs(alice, "organization") == [("organizations", "acme")]
    assert sorted(refs(alice, "teams")) == sorted(
        [("teams", teams["devs"]), ("teams", teams["owners"])]
    )
    # The team's memberships and users name the same people, in the same order.
    devs = by_name["devs"]
    mine = [memberships[u] for _, u in refs(devs, "users")]
    assert [("organization-memberships", m["id"]) for m in mine] == refs(
        devs, "organization-memberships"
    )
    # The id is stable: the same from another request and another team.
    shown = api.get(f"{V2}/teams/{teams['owners']}?include=organization_memberships")
    assert alice["id"] in {i for _, i in keys(included(shown))}


def test_both_team_includes_at_once(api: Api, teams: dict[str, Any]) -> None:
    for query in (
        "include=users,organization-memberships",
        "include=users&include=organization-memberships",
    ):
        reply = api.get(f"{V2}/teams/{teams['devs']}?{query}")
        found = keys(included(reply))
        # In the order asked: the users, then the memberships; each once.
        assert found == refs(reply.data, "users") + refs(reply.data, "organization-memberships")
        assert len(found) == 4


def test_included_emails_follow_the_privacy_rules(api: Api, teams: dict[str, Any]) -> None:
    """bob (on devs, not an owner) sees his own email and nobody else's."""
    bob_api: Api = teams["bob_api"]
    reply = bob_api.get(f"{V2}/teams/{teams['devs']}?include=users,organization-memberships")
    emails: dict[tuple[str, str], str] = {}
    for item in included(reply):
        user = item["id"] if item["type"] == "users" else refs(item, "user")[0][1]
        emails[(item["type"], user)] = item["attributes"]["email"]
    assert emails == {
        ("users", teams["alice"]): "",
        ("users", teams["bob"]): "bob@example.com",
        ("organization-memberships", teams["alice"]): "",
        ("organization-memberships", teams["bob"]): "bob@example.com",
    }


def test_team_create_and_update_answer_includes_too(api: Api, teams: dict[str, Any]) -> None:
    created = api.post(f"{TEAMS}?include=users", doc("teams", name="ops"))
    assert created.status == 201, created.json
    assert created.json["included"] == []  # nobody is on a new team
    assert created.data["relationships"]["users"] == {"data": []}
    assert created.data["relationships"]["organization-memberships"] == {"data": []}
    patched = api.patch(f"{V2}/teams/{teams['devs']}?include=users", doc("teams", name="devs2"))
    assert patched.status == 200, patched.json
    assert keys(patched.json["included"]) == refs(patched.data, "users")


# ----- workspaces and registry modules ------------------------------------------------------


def test_workspace_include_organization(api: Api) -> None:
    make_org(api)
    for name in ("app", "db"):
        created = api.post(f"{V2}/organizations/acme/workspaces", doc("workspaces", name=name))
        assert created.status == 201, created.json
    listed = api.get(f"{V2}/organizations/acme/workspaces?include=organization")
    (org,) = included(listed)
    assert (org["type"], org["id"]) == ("organizations", "acme")
    assert org["attributes"]["name"] == "acme" and org["attributes"]["email"] == "o@x.io"
    assert all(refs(w, "organization") == [("organizations", "acme")] for w in listed.data)

    workspace = listed.data[0]
    by_id = api.get(f"{V2}/workspaces/{workspace['id']}?include=organization")
    by_name = api.get(
        f"{V2}/organizations/acme/workspaces/{workspace['attributes']['name']}?include=organization"
    )
    assert included(by_id) == included(by_name) == [org]
    assert "included" not in api.get(f"{V2}/workspaces/{workspace['id']}").json
    # terrasnek's workspaces test asks for the README too: none here (no repository).
    both = api.get(f"{V2}/workspaces/{workspace['id']}?include=organization,readme")
    assert both.status == 200 and included(both) == [org]
    assert_error(api.get(f"{V2}/workspaces/{workspace['id']}?include=current-run"), 400)


def test_registry_modules_include_no_code_modules(api: Api) -> None:
    make_org(api)
    modules = f"{V2}/organizations/acme/registry-modules"
    created = api.post(modules, doc("registry-modules", name="vpc", provider="aws"))
    assert created.status == 201, created.json
    listed = api.get(f"{modules}?include=no-code-modules")
    assert included(listed) == []
    assert listed.data[0]["relationships"]["no-code-modules"] == {"data": []}
    shown = api.get(f"{modules}/private/acme/vpc/aws?include=no_code_modules")
    assert included(shown) == []
    by_id = api.get(f"{V2}/registry-modules/{created.data['id']}?include=no-code-modules")
    assert included(by_id) == []
    assert "included" not in api.get(modules).json
    assert_error(api.get(f"{modules}?include=versions"), 400)


# ----- what is not served -------------------------------------------------------------------


def test_an_unknown_include_is_a_400_naming_it(api: Api, teams: dict[str, Any]) -> None:
    error = assert_error(api.get(f"{TEAMS}?include=users,nope"), 400)
    assert "does not support inclusion of 'nope'" in error["detail"]
    assert error["source"] == {"parameter": "include"}
    error = assert_error(api.get(f"{V2}/teams/{teams['devs']}?include=users.organization"), 400)
    assert "'users.organization'" in error["detail"]
    # Organizations serve no include: TFE's "owners" (terrasnek's admin test) is refused.
    error = assert_error(api.get(f"{V2}/organizations?include=owners"), 400)
    assert "inclusion of 'owners'" in error["detail"]
    assert_error(api.get(f"{V2}/organizations/acme?include=default-project"), 400)
    # Only asked includes are checked: an empty value asks nothing.
    assert "included" not in api.get(f"{V2}/organizations/acme?include=").json


@pytest.mark.parametrize(
    "path",
    [
        "/account/details",
        "/organizations/acme/entitlement-set",
        "/organizations/acme/team-tokens",
        "/admin/general-settings",
        "/ping",
    ],
)
def test_an_include_on_an_endpoint_that_serves_none_is_a_400(api: Api, path: str) -> None:
    make_org(api)
    error = assert_error(api.get(f"{V2}{path}?include=organization"), 400)
    assert "inclusion of 'organization'" in error["detail"]


def test_the_check_comes_after_authentication(api: Api, teams: dict[str, Any]) -> None:
    assert_error(api.as_(None).get(f"{TEAMS}?include=nope"), 401)


def test_routes_that_are_not_jsonapi_ignore_include(api: Api) -> None:
    make_org(api)
    protocol = api.get("/api/registry/v1/modules/acme?include=nope")
    assert protocol.status == 200, protocol.body
    assert api.get("/.well-known/terraform.json?include=nope").status == 200


# ----- the core helpers ---------------------------------------------------------------------


def test_parse_include_normalizes_deduplicates_and_refuses() -> None:
    from chalicelib.core.api.errors import BadRequest
    from chalicelib.core.api.jsonapi import parse_include

    supported = ("users", "organization-memberships")
    assert parse_include([], supported) is None
    assert parse_include(["", " , "], supported) is None
    assert parse_include(["organization_memberships, users", "users"], supported) == (
        "organization-memberships",
        "users",
    )
    with pytest.raises(BadRequest) as refused:
        parse_include(["users,teams"], supported)
    assert "'teams'" in refused.value.detail
    with pytest.raises(BadRequest):
        parse_include(["users"], ())


def test_collect_included_and_document() -> None:
    from chalicelib.core.api.jsonapi import collect_included, document, resource

    def person(i: str) -> dict[str, Any]:
        return resource("users", i, {"n": i})

    includers = {
        "users": lambda teams: [person(u) for t in teams for u in t],
        "again": lambda teams: [person("b"), resource("teams", "t1", {})],
    }
    primary = [["a", "b"], ["b", "c"]]
    assert collect_included(primary, None, includers) is None
    assert collect_included(primary, (), includers) == []
    found = collect_included(primary, ("users", "again"), includers)
    assert keys(found) == [("users", "a"), ("users", "b"), ("users", "c"), ("teams", "t1")]

    # A resource that is primary data is not repeated in included.
    body = json.loads(document([resource("teams", "t1", {})], included=found).body)
    assert keys(body["included"]) == [("users", "a"), ("users", "b"), ("users", "c")]
    assert "included" not in json.loads(document({"id": "x", "type": "t"}).body)
    assert json.loads(document(None, included=[]).body) == {"data": None, "included": []}
