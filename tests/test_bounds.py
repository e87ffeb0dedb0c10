"""Every array a request body carries is bounded (fast layer).

Each element of these arrays costs a write or more (a tag attached is a transaction of its
own), so an unbounded one let a single request run for minutes and outlive API Gateway's
29 s half-done. For each bounded array: one element over the bound is refused, with a 422
JSON:API error (a SCIM error document on ``/scim/v2``) naming the bound, and the state read
back afterwards is unchanged; the bound itself is accepted (for a few representative arrays:
the others share the same check). And the OpenAPI document shows a ``maxItems`` on every
array of every request body, so a new unbounded one fails here.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from chalicelib.accounts.teams.service import MAX_MEMBERS_PER_REQUEST
from chalicelib.core.tagbindings import MAX_BINDINGS
from chalicelib.scim.groups import MAX_MEMBERS_PER_REQUEST as MAX_SCIM_MEMBERS
from chalicelib.scim.protocol import MAX_OPERATIONS
from chalicelib.tags.service import MAX_TAGS_PER_REQUEST, MAX_WORKSPACES_PER_REQUEST
from chalicelib.workspaces.service import (
    MAX_MOVED_WORKSPACES,
    MAX_TAG_NAMES,
    MAX_TRIGGER_PATH_LENGTH,
    MAX_TRIGGER_PATHS,
)
from tests.conftest import Api, Reply, doc, make_org, make_team
from tests.scim.helpers import GROUP, SETTINGS, Scim, body, enable_saml, new_token, scim_error
from tests.tags.helpers import add, make_ws, org_tags, tag_ids, tag_names, ws_tags

V2 = "/api/v2"
OPENAPI = Path(__file__).resolve().parent.parent / "chalicelib" / "meta" / "openapi.json"


def refused(reply: Reply, detail: str, pointer: str = "/data") -> None:
    """A 422 JSON:API error whose detail names the bound."""
    assert reply.status == 422, (reply.status, reply.body)
    assert detail in reply.error["detail"], reply.error
    assert reply.error["source"]["pointer"] == pointer, reply.error


def names(count: int, prefix: str = "t") -> dict[str, Any]:
    return {
        "data": [{"type": "tags", "attributes": {"name": f"{prefix}{i}"}} for i in range(count)]
    }


def ids(type_: str, *values: str) -> dict[str, Any]:
    return {"data": [{"type": type_, "id": value} for value in values]}


@pytest.fixture
def org(api: Api) -> str:
    return make_org(api)


@pytest.fixture
def idp(api: Api) -> Scim:
    """An identity provider holding a SCIM token (SAML and SCIM enabled), as in test_scim."""
    enable_saml(api)
    assert api.patch(SETTINGS, body(enabled=True)).status == 200
    token = new_token(api, description="okta")
    assert token.status == 201, token.json
    return Scim(api, token.data["attributes"]["token"])


# ----- the document ----------------------------------------------------------------------------


def _arrays(schema: Any, components: dict[str, Any], at: str, seen: frozenset[str]) -> Iterator:
    """(where, schema) of every array schema inside ``schema``, following ``$ref``s."""
    if isinstance(schema, list):
        for index, item in enumerate(schema):
            yield from _arrays(item, components, f"{at}[{index}]", seen)
        return
    if not isinstance(schema, dict):
        return
    ref = schema.get("$ref")
    if isinstance(ref, str):
        name = ref.rsplit("/", 1)[-1]
        if name not in seen:
            yield from _arrays(components[name], components, f"{at}<{name}>", seen | {name})
        return
    kind = schema.get("type")
    if kind == "array" or (isinstance(kind, list) and "array" in kind):
        yield at, schema
    for key, value in schema.items():
        if key in ("properties", "patternProperties", "$defs"):
            for name, sub in value.items():
                yield from _arrays(sub, components, f"{at}/{name}", seen)
        elif key in ("items", "additionalProperties", "anyOf", "oneOf", "allOf", "not"):
            yield from _arrays(value, components, at, seen)


def test_every_array_of_every_request_body_has_max_items() -> None:
    document = json.loads(OPENAPI.read_text())
    components = document["components"]["schemas"]
    found, unbounded = [], []
    for path, operations in document["paths"].items():
        for method, operation in operations.items():
            for media, content in operation.get("requestBody", {}).get("content", {}).items():
                where = f"{method.upper()} {path} ({media})"
                for at, schema in _arrays(content["schema"], components, where, frozenset()):
                    found.append(at)
                    if not isinstance(schema.get("maxItems"), int):
                        unbounded.append(at)
    assert not unbounded, unbounded
    # The walk does reach the arrays (a change of the document's shape must not blind it).
    reached = " ".join(found)
    for expected in (
        "POST /api/v2/workspaces/{workspace_id}/relationships/tags",
        "tag-names",
        "trigger-prefixes",
        "PATCH /api/v2/workspaces/{workspace_id}/tag-bindings",
        "PATCH /scim/v2/Groups/{scim_id} (application/scim+json)/Operations",
        "PUT /scim/v2/Groups/{scim_id} (application/scim+json)/members",
    ):
        assert expected in reached, expected


def test_the_document_states_the_bounds() -> None:
    document = json.loads(OPENAPI.read_text())
    paths = document["paths"]

    def data_of(path: str, method: str) -> dict[str, Any]:
        content = paths[path][method]["requestBody"]["content"]["application/vnd.api+json"]
        return content["schema"]["properties"]["data"]

    tags = data_of("/api/v2/workspaces/{workspace_id}/relationships/tags", "post")
    assert tags["maxItems"] == MAX_TAGS_PER_REQUEST
    workspaces = data_of("/api/v2/tags/{tag_id}/relationships/workspaces", "post")
    assert workspaces["maxItems"] == MAX_WORKSPACES_PER_REQUEST
    users = data_of("/api/v2/teams/{team_id}/relationships/users", "post")
    assert users["maxItems"] == MAX_MEMBERS_PER_REQUEST
    body = document["components"]["schemas"]["WorkspaceBody"]["properties"]
    tag_names_schema = next(s for s in body["tag-names"]["anyOf"] if s["type"] == "array")
    assert tag_names_schema["maxItems"] == MAX_TAG_NAMES


# ----- organization tags and workspace tag relationships ----------------------------------------


def test_adding_one_tag_too_many_to_a_workspace_changes_nothing(api: Api, org: str) -> None:
    ws = make_ws(api, org, "web")
    reply = api.post(f"{V2}/workspaces/{ws}/relationships/tags", names(MAX_TAGS_PER_REQUEST + 1))
    refused(reply, f"at most {MAX_TAGS_PER_REQUEST} tags per request")
    assert tag_names(api, ws) == [] and org_tags(api, org) == {}


def test_removing_one_tag_too_many_from_a_workspace_changes_nothing(api: Api, org: str) -> None:
    ws = make_ws(api, org, "web")
    add(api, ws, "keep")
    over = names(MAX_TAGS_PER_REQUEST, prefix="gone")
    over["data"].append({"type": "tags", "attributes": {"name": "keep"}})
    reply = api.delete(f"{V2}/workspaces/{ws}/relationships/tags", over)
    refused(reply, f"at most {MAX_TAGS_PER_REQUEST} tags per request")
    assert ws_tags(api, ws) == ["keep"] and org_tags(api, org) == {"keep": 1}


def test_bulk_deleting_tags_is_bounded_and_the_bound_is_accepted(api: Api, org: str) -> None:
    ws = make_ws(api, org, "web")
    add(api, ws, "keep", "gone")
    known = tag_ids(api, org)
    unknown = [f"tag-unknown{i}" for i in range(MAX_TAGS_PER_REQUEST)]
    path = f"{V2}/organizations/{org}/tags"

    reply = api.delete(path, ids("tags", known["keep"], *unknown))
    refused(reply, f"at most {MAX_TAGS_PER_REQUEST} tags per request")
    assert org_tags(api, org) == {"keep": 1, "gone": 1}

    # At the bound (unknown ids are ignored, as a retried delete needs).
    reply = api.delete(path, ids("tags", known["gone"], *unknown[1:]))
    assert reply.status == 204, reply.json
    assert org_tags(api, org) == {"keep": 1} and ws_tags(api, ws) == ["keep"]


def test_adding_one_workspace_too_many_to_a_tag_changes_nothing(api: Api, org: str) -> None:
    web, db = make_ws(api, org, "web"), make_ws(api, org, "db")
    add(api, web, "shared")
    tag = tag_ids(api, org)["shared"]
    body = ids("workspaces", *[db] * (MAX_WORKSPACES_PER_REQUEST + 1))
    reply = api.post(f"{V2}/tags/{tag}/relationships/workspaces", body)
    refused(reply, f"at most {MAX_WORKSPACES_PER_REQUEST} workspaces per request")
    assert tag_names(api, db) == [] and org_tags(api, org) == {"shared": 1}


def test_a_relationship_id_is_bounded_in_length(api: Api, org: str) -> None:
    ws = make_ws(api, org, "web")
    reply = api.post(f"{V2}/workspaces/{ws}/relationships/tags", ids("tags", "tag-" + "x" * 300))
    refused(reply, "id is longer than 255 characters", "/data/0/id")


# ----- workspaces ------------------------------------------------------------------------------


def test_creating_a_workspace_with_one_tag_name_too_many_creates_nothing(
    api: Api, org: str
) -> None:
    many = [f"t{i}" for i in range(MAX_TAG_NAMES + 1)]
    reply = api.post(
        f"{V2}/organizations/{org}/workspaces", doc("workspaces", name="web", **{"tag-names": many})
    )
    refused(reply, f"at most {MAX_TAG_NAMES} items per request", "/data/attributes/tag-names")
    assert api.get(f"{V2}/organizations/{org}/workspaces/web").status == 404
    assert org_tags(api, org) == {}


@pytest.mark.parametrize("attribute", ["trigger-prefixes", "trigger-patterns"])
def test_trigger_paths_are_bounded_in_number_and_length(api: Api, org: str, attribute: str) -> None:
    ws = make_ws(api, org, "web", **{attribute: ["/modules"]})
    path = f"{V2}/workspaces/{ws}"
    pointer = f"/data/attributes/{attribute}"

    too_many = doc("workspaces", **{attribute: [f"/p{i}" for i in range(MAX_TRIGGER_PATHS + 1)]})
    refused(api.patch(path, too_many), f"at most {MAX_TRIGGER_PATHS} items per request", pointer)
    too_long = doc("workspaces", **{attribute: ["/" + "x" * MAX_TRIGGER_PATH_LENGTH]})
    refused(
        api.patch(path, too_long), f"at most {MAX_TRIGGER_PATH_LENGTH} characters", pointer + "/0"
    )
    assert api.get(path).data["attributes"][attribute] == ["/modules"]

    # At the bound, of the longest paths.
    at_bound = [f"/{i:03d}" + "x" * (MAX_TRIGGER_PATH_LENGTH - 4) for i in range(MAX_TRIGGER_PATHS)]
    reply = api.patch(path, doc("workspaces", **{attribute: at_bound}))
    assert reply.status == 200, reply.json
    assert api.get(path).data["attributes"][attribute] == at_bound


def test_moving_one_workspace_too_many_into_a_project_moves_nothing(api: Api, org: str) -> None:
    ws = make_ws(api, org, "web")
    before = api.get(f"{V2}/workspaces/{ws}").data["relationships"]["project"]["data"]["id"]
    project = api.post(f"{V2}/organizations/{org}/projects", doc("projects", name="other"))
    assert project.status == 201, project.json
    body = ids("workspaces", *[ws] * (MAX_MOVED_WORKSPACES + 1))
    reply = api.post(f"{V2}/projects/{project.data['id']}/relationships/workspaces", body)
    refused(reply, f"at most {MAX_MOVED_WORKSPACES} workspaces per request")
    after = api.get(f"{V2}/workspaces/{ws}").data["relationships"]["project"]["data"]["id"]
    assert after == before


def test_tag_bindings_stay_bounded(api: Api, org: str) -> None:
    ws = make_ws(api, org, "web")
    over = {
        "data": [
            {"type": "tag-bindings", "attributes": {"key": f"k{i}", "value": "v"}}
            for i in range(MAX_BINDINGS + 1)
        ]
    }
    refused(api.patch(f"{V2}/workspaces/{ws}/tag-bindings", over), f"at most {MAX_BINDINGS}")
    assert api.get(f"{V2}/workspaces/{ws}/tag-bindings").data == []


# ----- team members ----------------------------------------------------------------------------


@pytest.mark.parametrize("method", ["POST", "DELETE"])
def test_changing_one_member_too_many_of_a_team_changes_nothing(
    api: Api, org: str, method: str
) -> None:
    team, _ = make_team(api, org, "devs")
    members = f"{V2}/teams/{team}/relationships/users"
    if method == "DELETE":
        assert api.post(members, ids("users", "admin")).status == 204
    count = api.get(f"{V2}/teams/{team}").data["attributes"]["users-count"]
    reply = api.call(method, members, ids("users", *["admin"] * (MAX_MEMBERS_PER_REQUEST + 1)))
    refused(reply, f"at most {MAX_MEMBERS_PER_REQUEST} users per request")
    assert api.get(f"{V2}/teams/{team}").data["attributes"]["users-count"] == count


# ----- SCIM ------------------------------------------------------------------------------------


def test_a_scim_patch_with_one_operation_too_many_changes_nothing(idp: Scim) -> None:
    user = idp.user("jane@example.com")
    group = idp.group("devs", user["id"])
    rename = {"op": "replace", "path": "displayName", "value": "renamed"}

    for path in (f"/Groups/{group['id']}", f"/Users/{user['id']}"):
        attribute = "displayName" if "Groups" in path else "userName"
        operation = {**rename, "path": attribute, "value": "renamed@example.com"}
        reply = idp.patch(path, *[operation] * (MAX_OPERATIONS + 1))
        error = scim_error(reply, 413)
        assert f"at most {MAX_OPERATIONS} Operations per request" in error["detail"]
    assert idp.get(f"/Groups/{group['id']}").json["displayName"] == "devs"
    assert idp.get(f"/Users/{user['id']}").json["userName"] == "jane@example.com"

    # At the bound.
    reply = idp.patch(f"/Groups/{group['id']}", *[rename] * MAX_OPERATIONS)
    assert reply.status == 200, reply.json
    assert reply.json["displayName"] == "renamed"
    assert [m["value"] for m in reply.json["members"]] == [user["id"]]


def test_scim_group_members_are_bounded_per_request_across_operations(idp: Scim) -> None:
    user = idp.user("jane@example.com")
    group = idp.group("devs")
    half = MAX_SCIM_MEMBERS // 2 + 1
    values = [{"value": user["id"]}] * half
    operation = {"op": "add", "path": "members", "value": values}
    error = scim_error(idp.patch(f"/Groups/{group['id']}", operation, operation), 413)
    assert f"at most {MAX_SCIM_MEMBERS} members per request" in error["detail"]
    without_path = {"op": "add", "value": {"members": values}}
    error = scim_error(idp.patch(f"/Groups/{group['id']}", without_path, operation), 413)
    assert f"at most {MAX_SCIM_MEMBERS} members per request" in error["detail"]
    assert idp.get(f"/Groups/{group['id']}").json.get("members", []) == []

    too_many = [{"value": user["id"]}] * (MAX_SCIM_MEMBERS + 1)
    reply = idp.post("/Groups", {"schemas": [GROUP], "displayName": "ops", "members": too_many})
    assert f"at most {MAX_SCIM_MEMBERS} members" in scim_error(reply, 413)["detail"]
    assert idp.get("/Groups?filter=displayName%20eq%20%22ops%22").json["totalResults"] == 0
