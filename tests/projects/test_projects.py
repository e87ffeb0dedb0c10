"""Projects and their key/value tag bindings, through the API (fast layer)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.conftest import Api, doc, make_org, make_team
from tests.projects.helpers import V2, bindings_rel, make_project, pairs, project_doc


def projects(api: Api, org: str, query: str = "") -> dict[str, dict[str, Any]]:
    reply = api.get(f"{V2}/organizations/{org}/projects?page[size]=100{query}")
    assert reply.status == 200, reply.json
    return {p["attributes"]["name"]: p for p in reply.data}


def test_every_organization_has_a_default_project_that_stays(api: Api) -> None:
    org = make_org(api)
    listed = projects(api, org)
    assert list(listed) == ["Default Project"]
    default = listed["Default Project"]
    assert default["attributes"]["workspace-count"] == 0
    assert default["attributes"]["permissions"]["can-destroy"] is False
    reply = api.delete(f"{V2}/projects/{default['id']}")
    assert reply.status == 409 and "default project" in reply.error["detail"]
    # Renamed, it is still the default project (and still not deletable); the name is free.
    renamed = api.patch(f"{V2}/projects/{default['id']}", project_doc(name="Shared"))
    assert renamed.status == 200 and renamed.data["attributes"]["name"] == "Shared"
    make_project(api, org, "Default Project")
    assert sorted(projects(api, org)) == ["Default Project", "Shared"]
    assert api.delete(f"{V2}/projects/{default['id']}").status == 409


def test_create_show_list_update_delete_in_go_tfe_shapes(api: Api) -> None:
    org = make_org(api)
    body = project_doc(
        bindings_rel(env="prod", team="net"),
        name="Infrastructure Project",
        description="shared networks",
        **{"default-execution-mode": "local", "auto-destroy-activity-duration": "14d"},
    )
    reply = api.post(f"{V2}/organizations/{org}/projects", body)
    assert reply.status == 201, reply.json
    data = reply.data
    pid = data["id"]
    assert pid.startswith("prj-") and data["type"] == "projects"
    attrs = data["attributes"]
    assert (attrs["name"], attrs["description"], attrs["workspace-count"]) == (
        "Infrastructure Project",
        "shared networks",
        0,
    )
    assert attrs["default-execution-mode"] == "local"
    assert attrs["auto-destroy-activity-duration"] == "14d"
    assert attrs["created-at"].endswith("Z")
    rel = data["relationships"]
    assert rel["organization"]["data"] == {"id": org, "type": "organizations"}
    assert rel["tag-bindings"] == {"links": {"related": f"{V2}/projects/{pid}/tag-bindings"}}
    assert rel["effective-tag-bindings"]["links"]["related"].endswith("/effective-tag-bindings")
    assert data["links"]["self"] == f"{V2}/projects/{pid}"

    shown = api.get(f"{V2}/projects/{pid}")
    assert shown.status == 200 and shown.data == data
    assert pairs(api, f"{V2}/projects/{pid}/tag-bindings") == {"env": "prod", "team": "net"}

    # list items equal the read response; q and filter[names] as go-tfe sends them
    assert projects(api, org)["Infrastructure Project"] == data
    assert list(projects(api, org, "&q=INFRA")) == ["Infrastructure Project"]
    found = projects(api, org, "&filter[names]=default project,nope")
    assert list(found) == ["Default Project"]
    page = api.get(f"{V2}/organizations/{org}/projects?page[size]=1&page[number]=2")
    assert page.json["meta"]["pagination"]["total-count"] == 2 and len(page.data) == 1

    # PATCH: attributes only keeps the bindings; relationships replace; [] clears
    patched = api.patch(f"{V2}/projects/{pid}", project_doc(name="Infra", description="x"))
    assert patched.status == 200 and patched.data["attributes"]["name"] == "Infra"
    assert pairs(api, f"{V2}/projects/{pid}/tag-bindings") == {"env": "prod", "team": "net"}
    ids = {
        b["attributes"]["key"]: b["id"] for b in api.get(f"{V2}/projects/{pid}/tag-bindings").data
    }
    replaced = api.patch(f"{V2}/projects/{pid}", project_doc(bindings_rel(env="dev", cost="1")))
    assert replaced.status == 200, replaced.json
    after = api.get(f"{V2}/projects/{pid}/tag-bindings").data
    assert {b["attributes"]["key"]: b["attributes"]["value"] for b in after} == {
        "env": "dev",
        "cost": "1",
    }
    assert next(b["id"] for b in after if b["attributes"]["key"] == "env") == ids["env"]
    # go-tfe's DeleteAllTagBindings: type and relationships only, no attributes
    cleared = api.patch(
        f"{V2}/projects/{pid}",
        {"data": {"type": "projects", "relationships": {"tag-bindings": {"data": []}}}},
    )
    assert cleared.status == 200, cleared.json
    assert pairs(api, f"{V2}/projects/{pid}/tag-bindings") == {}

    assert api.delete(f"{V2}/projects/{pid}").status == 204
    assert api.get(f"{V2}/projects/{pid}").status == 404
    assert api.delete(f"{V2}/projects/{pid}").status == 404
    assert list(projects(api, org)) == ["Default Project"]


@pytest.mark.parametrize(
    ("body", "pointer"),
    [
        (project_doc(name="ab"), "/data/attributes/name"),
        (project_doc(name=" padded"), "/data/attributes/name"),
        (project_doc(name="bad/name"), "/data/attributes/name"),
        (project_doc(name="x" * 41), "/data/attributes/name"),
        (project_doc(description="y"), "/data/attributes/name"),
        (project_doc(name="web", description="d" * 257), "/data/attributes/description"),
        (project_doc(name="web", description=5), "/data/attributes/description"),
        (
            project_doc(name="web", **{"default-execution-mode": "agent"}),
            "/data/attributes/default-execution-mode",
        ),
        (
            project_doc(name="web", **{"auto-destroy-activity-duration": "0d"}),
            "/data/attributes/auto-destroy-activity-duration",
        ),
        (
            project_doc(bindings_rel(**{"hc:env": "x"}), name="web"),
            "/data/relationships/tag-bindings/data/0/attributes/key",
        ),
        (
            project_doc({"tag-bindings": {"data": "env"}}, name="web"),
            "/data/relationships/tag-bindings",
        ),
        (
            project_doc(
                {"tag-bindings": {"data": [{"type": "tags", "attributes": {"key": "a"}}]}},
                name="web",
            ),
            "/data/relationships/tag-bindings/data/0/type",
        ),
    ],
)
def test_bad_input_is_a_422_with_a_pointer_and_creates_nothing(
    api: Api, body: dict[str, Any], pointer: str
) -> None:
    org = make_org(api)
    reply = api.post(f"{V2}/organizations/{org}/projects", body)
    assert reply.status == 422, reply.json
    assert reply.error["source"]["pointer"] == pointer
    assert list(projects(api, org)) == ["Default Project"]


def test_names_are_unique_per_organization_case_insensitively(api: Api) -> None:
    org = make_org(api)
    make_org(api, "other")
    pid = make_project(api, org, "Networking", env="prod")
    duplicate = api.post(f"{V2}/organizations/{org}/projects", project_doc(name="networking"))
    assert duplicate.status == 422
    assert duplicate.error["detail"] == "name has already been taken"
    make_project(api, "other", "Networking")  # another organization: fine
    second = make_project(api, org, "Compute")
    # a refused rename changes nothing, bindings in the same request included
    taken = api.patch(
        f"{V2}/projects/{second}", project_doc(bindings_rel(a="b"), name="NETWORKING")
    )
    assert taken.status == 422
    assert api.get(f"{V2}/projects/{second}").data["attributes"]["name"] == "Compute"
    assert pairs(api, f"{V2}/projects/{second}/tag-bindings") == {}
    bad = api.patch(f"{V2}/projects/{pid}", project_doc(bindings_rel(**{"": "x"}), name="Net 2"))
    assert bad.status == 422 and api.get(f"{V2}/projects/{pid}").data["attributes"]["name"] == (
        "Networking"
    )
    # a change of case only keeps the claim
    cased = api.patch(f"{V2}/projects/{pid}", project_doc(name="NetWorking"))
    assert cased.status == 200 and cased.data["attributes"]["name"] == "NetWorking"
    assert (
        api.post(f"{V2}/organizations/{org}/projects", project_doc(name="networking")).status == 422
    )


def test_tag_binding_endpoints(api: Api) -> None:
    org = make_org(api)
    pid = make_project(api, org, "Platform", env="prod")
    base = f"{V2}/projects/{pid}"
    env_id = api.get(base + "/tag-bindings").data[0]["id"]
    # PATCH …/tag-bindings: adds and updates, never removes; answers the whole set
    body = {
        "data": [
            {"type": "tag-bindings", "attributes": {"key": "costcenter", "value": "123"}},
            {"type": "tag-bindings", "attributes": {"key": "env", "value": "staging"}},
        ]
    }
    reply = api.patch(base + "/tag-bindings", body)
    assert reply.status == 200, reply.json
    assert [(b["type"], b["attributes"]["key"], b["attributes"]["value"]) for b in reply.data] == [
        ("tag-bindings", "env", "staging"),
        ("tag-bindings", "costcenter", "123"),
    ]
    assert reply.data[0]["id"] == env_id
    assert pairs(api, base + "/tag-bindings") == {"env": "staging", "costcenter": "123"}
    # a project's effective bindings are its own, with nothing inherited
    effective = api.get(base + "/effective-tag-bindings").data
    assert {e["type"] for e in effective} == {"effective-tag-bindings"}
    assert all("links" not in e for e in effective)
    assert pairs(api, base + "/effective-tag-bindings") == {"env": "staging", "costcenter": "123"}
    # include=effective_tag_bindings (the tfe provider reads a project so)
    shown = api.get(base + "?include=effective_tag_bindings")
    assert shown.status == 200
    linked = shown.data["relationships"]["effective-tag-bindings"]["data"]
    assert {i["id"] for i in linked} == {i["id"] for i in shown.json["included"]}
    # bad bodies change nothing
    for bad in ({"data": {"type": "tag-bindings"}}, {"data": [{"type": "tag-bindings"}]}, [1]):
        refused = api.patch(base + "/tag-bindings", bad)
        assert refused.status == 422 and refused.error["source"]["pointer"].startswith("/data")
    too_many = {
        "data": [{"type": "tag-bindings", "attributes": {"key": f"k{i}"}} for i in range(49)]
    }
    assert api.patch(base + "/tag-bindings", too_many).status == 422
    assert pairs(api, base + "/tag-bindings") == {"env": "staging", "costcenter": "123"}
    # the list filter on the projects' own bindings (go-tfe always sends a value)
    make_project(api, org, "Other", env="prod")
    assert list(projects(api, org, "&filter[tagged][0][key]=env&filter[tagged][0][value]=")) == [
        "Other",
        "Platform",
    ]
    query = "&filter[tagged][0][key]=env&filter[tagged][0][value]=prod"
    assert list(projects(api, org, query)) == ["Other"]
    query = "&filter[tagged][0][key]=env&filter[tagged][1][key]=costcenter"
    assert list(projects(api, org, query)) == ["Platform"]
    orphan = api.get(f"{V2}/organizations/{org}/projects?filter[tagged][0][value]=prod")
    assert orphan.status == 422
    assert orphan.error["source"]["parameter"] == "filter[tagged][0][key]"


def test_permissions(api: Api) -> None:
    org = make_org(api)
    make_org(api, "elsewhere")
    pid = make_project(api, org, "Platform", env="prod")
    _, reader = make_team(api, org, "readers", read_projects=True)
    _, manager = make_team(api, org, "managers", manage_projects=True)
    _, workspaces_only = make_team(api, org, "ws", manage_workspaces=True)
    _, stranger = make_team(api, "elsewhere", "owners-like", manage_projects=True)
    org_token = api.post(f"{V2}/organizations/{org}/authentication-token").data["attributes"][
        "token"
    ]
    listing = f"{V2}/organizations/{org}/projects"
    bindings = {"data": [{"type": "tag-bindings", "attributes": {"key": "a", "value": "b"}}]}

    for token in (reader, org_token):
        as_reader = api.as_(token)
        assert as_reader.get(listing).status == 200
        assert as_reader.get(f"{V2}/projects/{pid}").status == 200
        assert as_reader.get(f"{V2}/projects/{pid}/tag-bindings").status == 200
        assert as_reader.post(listing, project_doc(name="Nope")).status == 404
        assert as_reader.patch(f"{V2}/projects/{pid}", project_doc(name="Nope")).status == 404
        assert as_reader.patch(f"{V2}/projects/{pid}/tag-bindings", bindings).status == 404
        assert as_reader.delete(f"{V2}/projects/{pid}").status == 404
    for token in (workspaces_only, stranger):
        outsider = api.as_(token)
        assert outsider.get(listing).status == 404
        assert outsider.get(f"{V2}/projects/{pid}").status == 404
        assert outsider.get(f"{V2}/projects/{pid}/effective-tag-bindings").status == 404
        assert outsider.delete(f"{V2}/projects/{pid}").status == 404
    assert pairs(api, f"{V2}/projects/{pid}/tag-bindings") == {"env": "prod"}

    as_manager = api.as_(manager)
    created = as_manager.post(listing, project_doc(name="Team Project"))
    assert created.status == 201
    assert created.data["attributes"]["permissions"]["can-update"] is True
    assert as_manager.patch(f"{V2}/projects/{pid}/tag-bindings", bindings).status == 200
    assert as_manager.delete(f"{V2}/projects/{created.data['id']}").status == 204
    # manage-projects includes managing workspaces, as in TFE
    workspace = as_manager.post(
        f"{V2}/organizations/{org}/workspaces", doc("workspaces", name="by-manager")
    )
    assert workspace.status == 201, workspace.json
    read_only = api.as_(reader).get(f"{V2}/projects/{pid}").data["attributes"]["permissions"]
    assert read_only["can-update"] is False and read_only["can-destroy"] is False


def test_a_project_holding_workspaces_is_not_deleted(api: Api) -> None:
    org = make_org(api)
    pid = make_project(api, org, "Apps")
    ws = {"data": {"type": "workspaces", "attributes": {"name": "web"}}}
    ws["data"]["relationships"] = {"project": {"data": {"type": "projects", "id": pid}}}
    created = api.post(f"{V2}/organizations/{org}/workspaces", ws)
    assert created.status == 201, created.json
    assert api.get(f"{V2}/projects/{pid}").data["attributes"]["workspace-count"] == 1
    refused = api.delete(f"{V2}/projects/{pid}")
    assert refused.status == 409 and "workspaces" in refused.error["detail"]
    assert api.get(f"{V2}/projects/{pid}").status == 200
    assert api.delete(f"{V2}/workspaces/{created.data['id']}").status == 204
    assert api.get(f"{V2}/projects/{pid}").data["attributes"]["workspace-count"] == 0
    assert api.delete(f"{V2}/projects/{pid}").status == 204


def test_deleting_the_organization_deletes_its_projects(api: Api) -> None:
    from chalicelib.projects.store import ProjectModel, ProjectNameModel

    org = make_org(api)
    pid = make_project(api, org, "Apps", env="prod")
    ws = doc("workspaces", name="web")
    ws["data"]["relationships"] = {"project": {"data": {"type": "projects", "id": pid}}}
    assert api.post(f"{V2}/organizations/{org}/workspaces", ws).status == 201
    assert api.delete(f"{V2}/organizations/{org}").status == 204
    assert [p.id for p in ProjectModel.scan()] == []
    assert list(ProjectNameModel.scan()) == []
    # the name again is a new organization with a new default project
    make_org(api)
    assert list(projects(api, org)) == ["Default Project"]
    assert projects(api, org)["Default Project"]["attributes"]["workspace-count"] == 0


def project_events(org: str) -> list[dict[str, Any]]:
    from chalicelib.core.audit import trail

    found, _ = trail.read_page(org, None, 1, 1000)
    return [e for e in found if e["resource"]["type"] == "project"]


def test_each_project_change_records_one_event(api: Api) -> None:
    """Created, updated (the names of what changed, a rename with both names), tag bindings
    added, deleted: one event each, by the caller, in the organization's partition; the
    default project is the organization's (no event of its own); refusals record nothing."""
    make_org(api, "acme")
    _, reader = make_team(api, "acme", "readers", read_projects=True)
    project_id = make_project(api, "acme", "Net", team="net")
    path = f"{V2}/projects/{project_id}"
    assert api.patch(path, project_doc(name="Network", description="d")).status == 200
    bindings = {"data": [{"type": "tag-bindings", "attributes": {"key": "tier", "value": "1"}}]}
    assert api.patch(f"{path}/tag-bindings", bindings).status == 200
    # Refused: a taken name, an invalid one, a reader, the default project: no event.
    make_project(api, "acme", "Other")
    assert api.patch(path, project_doc(name="other")).status == 422
    assert api.patch(path, project_doc(name="x")).status == 422
    assert api.as_(reader).delete(path).status == 404
    default_id = projects(api, "acme")["Default Project"]["id"]
    assert api.delete(f"{V2}/projects/{default_id}").status == 409
    assert api.delete(path).status == 204

    found = project_events("acme")
    assert [(e["resource"]["id"], e["resource"]["action"]) for e in found] == [
        (project_id, "created"),
        (project_id, "updated"),
        (project_id, "updated"),
        (found[3]["resource"]["id"], "created"),
        (project_id, "deleted"),
    ]
    me = api.get(f"{V2}/account/details").data["id"]
    assert all(e["auth"]["accessor_id"] == me and e["auth"]["type"] == "Client" for e in found)
    assert all(e["auth"]["organization_id"] == "acme" for e in found)
    renamed = found[1]["resource"]["meta"]
    assert renamed["changed"] == ["description", "name"]
    assert (renamed["name"], renamed["previous-name"]) == ("Network", "Net")
    assert found[2]["resource"]["meta"]["changed"] == ["tag-bindings"]
    assert found[4]["resource"]["meta"]["name"] == "Network"
