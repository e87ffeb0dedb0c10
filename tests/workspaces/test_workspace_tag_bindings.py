"""Workspaces in projects, their key/value tag bindings, the effective (inherited) ones and the
``filter[tagged]`` list filter, through the API (fast layer)."""

from __future__ import annotations

from typing import Any

from tests.conftest import Api, doc, make_org, make_team
from tests.projects.helpers import bindings_rel, make_project, pairs

V2 = "/api/v2"


def ws_doc(name: str | None = None, project: str | None = None, **bindings: str) -> dict:
    body = doc("workspaces", **({"name": name} if name else {}))
    relationships: dict[str, Any] = {}
    if project:
        relationships["project"] = {"data": {"type": "projects", "id": project}}
    if bindings:
        relationships.update(bindings_rel(**bindings))
    if relationships:
        body["data"]["relationships"] = relationships
    return body


def make_ws(api: Api, org: str, name: str, project: str | None = None, **bindings: str) -> str:
    reply = api.post(f"{V2}/organizations/{org}/workspaces", ws_doc(name, project, **bindings))
    assert reply.status == 201, reply.json
    return reply.data["id"]


def project_of(api: Api, ws_id: str) -> str:
    return api.get(f"{V2}/workspaces/{ws_id}").data["relationships"]["project"]["data"]["id"]


def count(api: Api, project_id: str) -> int:
    return api.get(f"{V2}/projects/{project_id}").data["attributes"]["workspace-count"]


def listed(api: Api, org: str, query: str) -> list[str]:
    reply = api.get(f"{V2}/organizations/{org}/workspaces?page[size]=100&{query}")
    assert reply.status == 200, reply.json
    return sorted(w["attributes"]["name"] for w in reply.data)


def default_project(api: Api, org: str) -> str:
    reply = api.get(f"{V2}/organizations/{org}/projects?filter[names]=Default Project")
    return reply.data[0]["id"]


def test_a_workspace_lives_in_a_project_and_has_its_own_bindings(api: Api) -> None:
    org = make_org(api)
    loose = make_ws(api, org, "loose")
    default = default_project(api, org)
    assert project_of(api, loose) == default and count(api, default) == 1
    data = api.get(f"{V2}/workspaces/{loose}").data
    assert data["relationships"]["project"] == {"data": {"id": default, "type": "projects"}}
    assert data["relationships"]["tag-bindings"] == {
        "links": {"related": f"{V2}/workspaces/{loose}/tag-bindings"}
    }
    assert data["relationships"]["effective-tag-bindings"] == {
        "links": {"related": f"{V2}/workspaces/{loose}/effective-tag-bindings"}
    }

    pid = make_project(api, org, "Apps", env="prod", owner="platform")
    web = make_ws(api, org, "web", pid, env="dev", team="web")
    assert project_of(api, web) == pid and count(api, pid) == 1
    assert pairs(api, f"{V2}/workspaces/{web}/tag-bindings") == {"env": "dev", "team": "web"}
    assert api.get(f"{V2}/workspaces/{web}").data["attributes"]["tag-names"] == []

    # effective: its own, then the project's it does not override, each saying where from
    effective = api.get(f"{V2}/workspaces/{web}/effective-tag-bindings").data
    assert [(e["attributes"]["key"], e["attributes"]["value"]) for e in effective] == [
        ("env", "dev"),
        ("team", "web"),
        ("owner", "platform"),
    ]
    assert {e["type"] for e in effective} == {"effective-tag-bindings"}
    own, inherited = effective[:2], effective[2]
    assert all("links" not in e and "relationships" not in e for e in own)
    assert inherited["links"] == {"inherited-from": f"{V2}/projects/{pid}"}
    assert inherited["relationships"]["inherited-from"]["data"] == {"id": pid, "type": "projects"}
    project_binding_ids = {b["id"] for b in api.get(f"{V2}/projects/{pid}/tag-bindings").data}
    assert inherited["id"] in project_binding_ids

    # a project's change shows through at once
    api.patch(
        f"{V2}/projects/{pid}/tag-bindings",
        {"data": [{"type": "tag-bindings", "attributes": {"key": "tier", "value": "1"}}]},
    )
    assert pairs(api, f"{V2}/workspaces/{web}/effective-tag-bindings") == {
        "env": "dev",
        "team": "web",
        "owner": "platform",
        "tier": "1",
    }


def test_patch_tag_bindings_adds_and_the_relationship_replaces(api: Api) -> None:
    org = make_org(api)
    pid = make_project(api, org, "Apps", env="prod")
    web = make_ws(api, org, "web", pid, team="web")
    base = f"{V2}/workspaces/{web}"
    team_id = api.get(base + "/tag-bindings").data[0]["id"]
    body = {
        "data": [
            {"type": "tag-bindings", "attributes": {"key": "team", "value": "edge"}},
            {"type": "tag-bindings", "attributes": {"key": "env", "value": "test"}},
        ]
    }
    reply = api.patch(base + "/tag-bindings", body)
    assert reply.status == 200, reply.json
    assert [(b["attributes"]["key"], b["attributes"]["value"]) for b in reply.data] == [
        ("team", "edge"),
        ("env", "test"),
    ]
    assert reply.data[0]["id"] == team_id  # the same binding, a new value
    assert pairs(api, f"{base}/effective-tag-bindings") == {"team": "edge", "env": "test"}

    # a workspace PATCH with attributes only keeps the bindings; the relationship replaces
    kept = api.patch(base, doc("workspaces", description="web tier"))
    assert kept.status == 200 and pairs(api, base + "/tag-bindings") == {
        "team": "edge",
        "env": "test",
    }
    assert api.patch(base, ws_doc(None, None, cost="9")).status == 200
    assert pairs(api, base + "/tag-bindings") == {"cost": "9"}
    # go-tfe's DeleteAllTagBindings (pytfe adds the id): the project's bindings remain effective
    cleared = api.patch(
        base,
        {
            "data": {
                "type": "workspaces",
                "id": web,
                "relationships": {"tag-bindings": {"data": []}},
            }
        },
    )
    assert cleared.status == 200, cleared.json
    assert pairs(api, base + "/tag-bindings") == {}
    assert pairs(api, base + "/effective-tag-bindings") == {"env": "prod"}

    # bad input: a 422 with a pointer, and nothing changes (not even the name beside it)
    bad = ws_doc("renamed", None, **{"hcp:x": "1"})
    refused = api.patch(base, bad)
    assert refused.status == 422
    assert refused.error["source"]["pointer"] == (
        "/data/relationships/tag-bindings/data/0/attributes/key"
    )
    assert api.get(base).data["attributes"]["name"] == "web"
    for body in ({"data": "x"}, {"data": [{"attributes": {"value": "v"}}]}):
        assert api.patch(base + "/tag-bindings", body).status == 422
    assert pairs(api, base + "/tag-bindings") == {}


def test_moving_a_workspace_between_projects(api: Api) -> None:
    org = make_org(api)
    make_org(api, "other")
    apps = make_project(api, org, "Apps", env="prod")
    data = make_project(api, org, "Data", env="staging")
    foreign = make_project(api, "other", "Foreign")
    web = make_ws(api, org, "web", apps)
    moved = api.patch(f"{V2}/workspaces/{web}", ws_doc("web2", data))
    assert moved.status == 200, moved.json
    assert moved.data["relationships"]["project"]["data"]["id"] == data
    assert moved.data["attributes"]["name"] == "web2"
    assert (count(api, apps), count(api, data)) == (0, 1)
    assert pairs(api, f"{V2}/workspaces/{web}/effective-tag-bindings") == {"env": "staging"}

    for unknown in ("prj-doesnotexist", foreign):
        refused = api.patch(f"{V2}/workspaces/{web}", ws_doc("web3", unknown, a="b"))
        assert refused.status == 422
        assert refused.error["source"]["pointer"] == "/data/relationships/project/data/id"
        created = api.post(f"{V2}/organizations/{org}/workspaces", ws_doc("new", unknown))
        assert created.status == 422
    for bad in (
        {"data": None},
        {"data": {"type": "projects"}},
        {"data": {"type": "x", "id": apps}},
    ):
        body = doc("workspaces")
        body["data"]["relationships"] = {"project": bad}
        assert api.patch(f"{V2}/workspaces/{web}", body).status == 422
    after = api.get(f"{V2}/workspaces/{web}").data
    assert after["attributes"]["name"] == "web2" and project_of(api, web) == data
    assert pairs(api, f"{V2}/workspaces/{web}/tag-bindings") == {}
    assert (count(api, apps), count(api, data), count(api, foreign)) == (0, 1, 0)
    assert listed(api, org, "") == ["web2"]

    # pytfe's move_workspaces: checked first, then moved
    other = make_ws(api, org, "other-ws")
    path = f"{V2}/projects/{apps}/relationships/workspaces"
    body = {"data": [{"type": "workspaces", "id": web}, {"type": "workspaces", "id": "ws-nope"}]}
    refused = api.post(path, body)
    assert refused.status == 422 and refused.error["source"]["pointer"] == "/data/1/id"
    assert project_of(api, web) == data
    body = {"data": [{"type": "workspaces", "id": web}, {"type": "workspaces", "id": other}]}
    assert api.post(path, body).status == 204
    assert project_of(api, web) == apps == project_of(api, other)
    assert (count(api, apps), count(api, data)) == (2, 0)
    assert api.post(f"{V2}/projects/prj-nope/relationships/workspaces", body).status == 404
    assert listed(api, org, f"filter[project][id]={apps}") == ["other-ws", "web2"]


def test_filter_tagged_matches_effective_bindings(api: Api) -> None:
    org = make_org(api)
    prod = make_project(api, org, "Prod", env="prod", owner="ops")
    make_ws(api, org, "api", prod, tier="1")
    make_ws(api, org, "batch", prod, env="staging")  # overrides its project's env
    make_ws(api, org, "site", None, env="prod", tier="2")
    make_ws(api, org, "plain")
    api.post(
        f"{V2}/workspaces/{make_ws(api, org, 'tagged')}/relationships/tags",
        {"data": [{"type": "tags", "attributes": {"name": "legacy"}}]},
    )

    def tagged(*filters: tuple[str, str | None]) -> list[str]:
        parts = []
        for i, (key, value) in enumerate(filters):
            parts.append(f"filter[tagged][{i}][key]={key}")
            if value is not None:
                parts.append(f"filter[tagged][{i}][value]={value}")
        return listed(api, org, "&".join(parts))

    assert tagged(("env", None)) == ["api", "batch", "site"]
    assert tagged(("env", "")) == ["api", "batch", "site"]  # go-tfe sends an empty value
    assert tagged(("env", "prod")) == ["api", "site"]  # batch's own value wins
    assert tagged(("env", "staging")) == ["batch"]
    assert tagged(("owner", "ops")) == ["api", "batch"]  # inherited counts
    assert tagged(("env", "prod"), ("tier", None)) == ["api", "site"]
    assert tagged(("env", "prod"), ("tier", "2")) == ["site"]
    assert tagged(("nope", None)) == []
    # the single-value tags and their search are unchanged and combine with it
    assert listed(api, org, "search[tags]=legacy") == ["tagged"]
    assert listed(api, org, "search[tags]=legacy&filter[tagged][0][key]=env") == []
    assert listed(api, org, "search[name]=a&filter[tagged][0][key]=tier") == ["api"]
    refused = api.get(f"{V2}/organizations/{org}/workspaces?filter[tagged][3][value]=x")
    assert refused.status == 422
    assert refused.error["source"]["parameter"] == "filter[tagged][3][key]"


def test_includes_project_and_effective_tag_bindings(api: Api) -> None:
    org = make_org(api)
    pid = make_project(api, org, "Apps", env="prod")
    web = make_ws(api, org, "web", pid, team="web")
    make_ws(api, org, "db", pid)
    reply = api.get(f"{V2}/workspaces/{web}?include=project,effective_tag_bindings")
    assert reply.status == 200, reply.json
    included = {(i["type"], i["id"]): i for i in reply.json["included"]}
    assert included[("projects", pid)]["attributes"]["workspace-count"] == 2
    linked = reply.data["relationships"]["effective-tag-bindings"]["data"]
    assert [("effective-tag-bindings", i["id"]) in included for i in linked] == [True, True]
    listing = api.get(f"{V2}/organizations/{org}/workspaces?include=effective_tag_bindings")
    assert listing.status == 200
    # the project's binding is shared by both workspaces, included once
    keys = sorted(i["attributes"]["key"] for i in listing.json["included"])
    assert keys == ["env", "team"]


def test_permissions_on_workspace_bindings(api: Api) -> None:
    org = make_org(api)
    make_org(api, "other")
    pid = make_project(api, org, "Apps", env="prod")
    web = make_ws(api, org, "web", pid, team="web")
    _, member = make_team(api, org, "readers")
    _, writer = make_team(api, org, "writers", manage_workspaces=True)
    _, stranger = make_team(api, "other", "writers", manage_workspaces=True)
    body = {"data": [{"type": "tag-bindings", "attributes": {"key": "a", "value": "b"}}]}
    base = f"{V2}/workspaces/{web}"

    reader = api.as_(member)
    assert pairs(reader, base + "/tag-bindings") == {"team": "web"}
    assert pairs(reader, base + "/effective-tag-bindings") == {"team": "web", "env": "prod"}
    assert reader.patch(base + "/tag-bindings", body).status == 404
    assert reader.patch(base, ws_doc(None, None, a="b")).status == 404
    outsider = api.as_(stranger)
    assert outsider.get(base + "/tag-bindings").status == 404
    assert outsider.get(base + "/effective-tag-bindings").status == 404
    assert outsider.patch(base + "/tag-bindings", body).status == 404
    move = {"data": [{"type": "workspaces", "id": web}]}
    assert outsider.post(f"{V2}/projects/{pid}/relationships/workspaces", move).status == 404
    assert pairs(api, base + "/tag-bindings") == {"team": "web"}

    # manage-workspaces: changes bindings and places workspaces in any project of its org
    as_writer = api.as_(writer)
    assert as_writer.patch(base + "/tag-bindings", body).status == 200
    placed = as_writer.post(f"{V2}/organizations/{org}/workspaces", ws_doc("db", pid))
    assert placed.status == 201, placed.json


def test_workspaces_older_than_projects_belong_to_the_default_project(api: Api) -> None:
    """Items written before projects existed have no project_id: they are shown (and
    filtered) as members of the default project."""
    from chalicelib.workspaces.store import WorkspaceModel

    org = make_org(api)
    old = make_ws(api, org, "old")
    default = default_project(api, org)
    item = WorkspaceModel.get(old)
    item.update(actions=[WorkspaceModel.project_id.remove()])
    api.patch(
        f"{V2}/projects/{default}/tag-bindings",
        {"data": [{"type": "tag-bindings", "attributes": {"key": "env", "value": "prod"}}]},
    )
    assert project_of(api, old) == default
    assert pairs(api, f"{V2}/workspaces/{old}/effective-tag-bindings") == {"env": "prod"}
    assert listed(api, org, "filter[tagged][0][key]=env") == ["old"]
    assert listed(api, org, f"filter[project][id]={default}") == ["old"]
    assert api.delete(f"{V2}/workspaces/{old}").status == 204
