"""Organization tags and workspace tag relationships, through the API (fast layer).

Every step of the scenario checks ``instance-count`` of the org tags and ``tag-names`` of the
workspaces against what the steps so far must have produced.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.conftest import Api, doc, make_org, make_team
from tests.tags.helpers import (
    V2,
    add,
    make_ws,
    org_tags,
    remove,
    tag_ids,
    tag_names,
    tags_doc,
    ws_tags,
)


def test_tagging_scenario(api: Api) -> None:
    org = make_org(api)
    web, db, cache = (make_ws(api, org, n) for n in ("web", "db", "cache"))
    assert tag_names(api, web) == [] and org_tags(api, org) == {}

    # Tag several workspaces: names create org tags; order is insertion order.
    add(api, web, "env:prod", "team-a", "zeta")
    add(api, db, "env:prod", "team-b")
    add(api, cache, "env:prod", "team-a")
    assert tag_names(api, web) == ["env:prod", "team-a", "zeta"]
    assert ws_tags(api, web) == ["env:prod", "team-a", "zeta"]
    assert tag_names(api, db) == ["env:prod", "team-b"]
    assert org_tags(api, org) == {"env:prod": 3, "team-a": 2, "team-b": 1, "zeta": 1}

    # Re-adding, by name or by id, changes nothing; a later tag goes last.
    ids = tag_ids(api, org)
    add(api, web, "team-a", ids["zeta"])
    add(api, web, "late")
    assert tag_names(api, web) == ["env:prod", "team-a", "zeta", "late"]
    assert org_tags(api, org) == {"env:prod": 3, "late": 1, "team-a": 2, "team-b": 1, "zeta": 1}

    # List and filter: q is a case-insensitive substring; exclude drops a workspace's tags.
    assert org_tags(api, org, "&q=TEAM") == {"team-a": 2, "team-b": 1}
    assert org_tags(api, org, f"&filter[exclude][taggable][id]={db}") == {
        "late": 1,
        "team-a": 2,
        "zeta": 1,
    }
    assert set(org_tags(api, org, "&filter[exclude][taggable][id]=ws-unknown")) == set(ids) | {
        "late"
    }
    page = api.get(f"{V2}/organizations/{org}/tags?page[size]=2&page[number]=2")
    assert [t["attributes"]["name"] for t in page.data] == ["team-a", "team-b"]
    assert page.json["meta"]["pagination"]["total-count"] == 5
    assert page.data[0]["relationships"]["organization"]["data"] == {
        "id": org,
        "type": "organizations",
    }
    default = api.get(f"{V2}/organizations/{org}/tags")
    assert default.json["meta"]["pagination"]["page-size"] == 20

    # Remove by name and by id; unknown names are a no-op; the last removal drops the tag.
    remove(api, web, "late", ids["zeta"], "never-existed")
    assert tag_names(api, web) == ["env:prod", "team-a"]
    assert org_tags(api, org) == {"env:prod": 3, "team-a": 2, "team-b": 1}

    # Bulk delete removes the tags from every workspace.
    reply = api.delete(f"{V2}/organizations/{org}/tags", tags_doc(ids["team-a"], ids["team-b"]))
    assert reply.status == 204, reply.json
    assert org_tags(api, org) == {"env:prod": 3}
    assert [tag_names(api, w) for w in (web, db, cache)] == [["env:prod"]] * 3
    again = api.delete(f"{V2}/organizations/{org}/tags", tags_doc(ids["team-a"]))
    assert again.status == 204  # idempotent

    # Add workspaces to a tag (re-adding one is harmless).
    add(api, web, "shared")
    shared = tag_ids(api, org)["shared"]
    reply = api.post(
        f"{V2}/tags/{shared}/relationships/workspaces", tags_doc(db, web, type_="workspaces")
    )
    assert reply.status == 204, reply.json
    assert org_tags(api, org) == {"env:prod": 3, "shared": 2}
    assert tag_names(api, db) == ["env:prod", "shared"]

    # Deleting a workspace (by name) takes it out of every count; a tag only it had goes.
    add(api, cache, "only-cache")
    assert api.delete(f"{V2}/organizations/{org}/workspaces/cache").status == 204
    assert api.get(f"{V2}/workspaces/{cache}").status == 404
    assert org_tags(api, org) == {"env:prod": 2, "shared": 2}
    assert api.delete(f"{V2}/workspaces/{db}").status == 204
    assert org_tags(api, org) == {"env:prod": 1, "shared": 1}

    # Deleting the organization takes workspaces and tags with it.
    assert api.delete(f"{V2}/organizations/{org}").status == 204
    make_org(api)
    assert org_tags(api, org) == {}
    assert api.get(f"{V2}/workspaces/{web}").status == 404


def test_workspace_crud(api: Api) -> None:
    org = make_org(api)
    body = doc(
        "workspaces", name="app", type="workspaces", **{"vcs-repo": {}, "setting-overwrites": {}}
    )
    body["data"]["attributes"].update({"auto_apply": True, "tag-names": ["b", "a"]})
    created = api.post(f"{V2}/organizations/{org}/workspaces", body)
    assert created.status == 201, created.json
    ws = created.data
    attrs = ws["attributes"]
    assert ws["id"].startswith("ws-") and attrs["name"] == "app"
    assert attrs["auto-apply"] is True and attrs["tag-names"] == ["b", "a"]
    assert attrs["trigger-prefixes"] == [] and attrs["trigger-patterns"] == []
    assert attrs["execution-mode"] == "remote" and attrs["permissions"]["can-manage-tags"]
    assert attrs["created-at"].endswith("Z")

    taken = api.post(f"{V2}/organizations/{org}/workspaces", doc("workspaces", name="app"))
    assert taken.status == 422 and taken.error["source"]["pointer"] == "/data/attributes/name"
    for bad in ("", "has space", "x" * 91, 5):
        reply = api.post(f"{V2}/organizations/{org}/workspaces", doc("workspaces", name=bad))
        assert reply.status == 422, bad

    by_name = api.get(f"{V2}/organizations/{org}/workspaces/app")
    assert by_name.status == 200 and by_name.data["id"] == ws["id"]

    # Rename by id, then update by name; the old name is free again.
    patch = api.patch(
        f"{V2}/workspaces/{ws['id']}",
        doc("workspaces", name="app2", **{"vcs-repo": {}, "terraform-version": "1.9.0"}),
    )
    assert patch.status == 200, patch.json
    assert patch.data["attributes"]["name"] == "app2"
    assert api.get(f"{V2}/organizations/{org}/workspaces/app").status == 404
    patch = api.patch(
        f"{V2}/organizations/{org}/workspaces/app2",
        doc("workspaces", description="d", **{"trigger-prefixes": ["mods/"]}),
    )
    assert patch.status == 200, patch.json
    assert patch.data["attributes"]["trigger-prefixes"] == ["mods/"]
    assert patch.data["attributes"]["tag-names"] == ["b", "a"]
    bad_mode = api.patch(
        f"{V2}/workspaces/{ws['id']}", doc("workspaces", **{"execution-mode": "x"})
    )
    assert bad_mode.status == 422
    make_ws(api, org, "app")
    clash = api.patch(f"{V2}/workspaces/{ws['id']}", doc("workspaces", name="app"))
    assert clash.status == 422

    # List with search and pagination.
    for n in ("other-1", "other-2"):
        make_ws(api, org, n)
    listed = api.get(f"{V2}/organizations/{org}/workspaces?search[name]=OTHER&page[size]=1")
    assert [w["attributes"]["name"] for w in listed.data] == ["other-1"]
    assert listed.json["meta"]["pagination"]["total-count"] == 2
    tagged = api.get(f"{V2}/organizations/{org}/workspaces?search[tags]=a,b")
    assert [w["attributes"]["name"] for w in tagged.data] == ["app2"]

    assert api.delete(f"{V2}/workspaces/{ws['id']}").status == 204
    assert api.delete(f"{V2}/workspaces/{ws['id']}").status == 404
    assert org_tags(api, org) == {}


def test_bad_tag_names_change_nothing(api: Api) -> None:
    org = make_org(api)
    ws = make_ws(api, org, "web")
    add(api, ws, "keep")
    for bad in ("", "has space", "x" * 256, "slash/no", "émoji", 7):
        body = {
            "data": [
                {"type": "tags", "attributes": {"name": "fresh"}},
                {"type": "tags", "attributes": {"name": bad}},
            ]
        }
        reply = api.post(f"{V2}/workspaces/{ws}/relationships/tags", body)
        assert reply.status == 422, (bad, reply.json)
        assert reply.error["source"]["pointer"] == "/data/1/attributes/name"
    ok = "a:B_c-" + "x" * 249
    add(api, ws, ok)
    assert tag_names(api, ws) == ["keep", ok]
    assert org_tags(api, org) == {"keep": 1, ok: 1}

    create = api.post(
        f"{V2}/organizations/{org}/workspaces",
        doc("workspaces", name="w2", **{"tag-names": ["bad tag"]}),
    )
    assert create.status == 422
    assert api.get(f"{V2}/organizations/{org}/workspaces/w2").status == 404
    # An unknown tag id is a 404 and nothing else is applied either.
    unknown = api.post(f"{V2}/workspaces/{ws}/relationships/tags", tags_doc("new-one", "tag-nope"))
    assert unknown.status == 404
    assert org_tags(api, org) == {"keep": 1, ok: 1}


@pytest.mark.parametrize(
    "body",
    [
        None,
        {},
        {"data": None},
        {"data": "x"},
        {"data": [1]},
        {"data": [{}]},
        {"data": [{"type": "tags"}]},
        {"data": [{"type": "tags", "id": 5}]},
        {"data": [{"type": "tags", "attributes": "x"}]},
        {"data": [{"type": "workspaces", "id": "tag-x"}]},
        [1, 2],
        "text",
    ],
)
def test_junk_bodies_never_500(api: Api, body: Any) -> None:
    org = make_org(api)
    ws = make_ws(api, org, "web")
    add(api, ws, "t")
    tag = tag_ids(api, org)["t"]
    calls = [
        ("POST", f"{V2}/workspaces/{ws}/relationships/tags"),
        ("DELETE", f"{V2}/workspaces/{ws}/relationships/tags"),
        ("DELETE", f"{V2}/organizations/{org}/tags"),
        ("POST", f"{V2}/tags/{tag}/relationships/workspaces"),
        ("POST", f"{V2}/organizations/{org}/workspaces"),
        ("PATCH", f"{V2}/workspaces/{ws}"),
    ]
    for method, path in calls:
        reply = api.call(method, path, body)
        assert 400 <= reply.status < 500 or reply.status in (200, 204), (method, path, reply.json)
        assert reply.status != 500
    raw = api.call("POST", f"{V2}/workspaces/{ws}/relationships/tags", raw="{not json")
    assert raw.status == 400
    assert org_tags(api, org) == {"t": 1} and tag_names(api, ws) == ["t"]


def test_permissions(api: Api) -> None:
    org = make_org(api, "acme")
    other = make_org(api, "other")
    ws = make_ws(api, org, "web")
    add(api, ws, "t")
    tag = tag_ids(api, org)["t"]
    _, reader = make_team(api, org, "readers")
    _, manager = make_team(api, org, "managers", manage_workspaces=True)
    _, outsider = make_team(api, other, "outsiders", manage_workspaces=True)

    # A read-only team reads, and gets 404 on every change.
    ro = api.as_(reader)
    assert org_tags(ro, org) == {"t": 1} and tag_names(ro, ws) == ["t"]
    assert ro.post(f"{V2}/workspaces/{ws}/relationships/tags", tags_doc("x")).status == 404
    assert ro.delete(f"{V2}/workspaces/{ws}/relationships/tags", tags_doc("t")).status == 404
    assert ro.delete(f"{V2}/organizations/{org}/tags", tags_doc(tag)).status == 404
    assert (
        ro.post(
            f"{V2}/tags/{tag}/relationships/workspaces", tags_doc(ws, type_="workspaces")
        ).status
        == 404
    )
    assert (
        ro.post(f"{V2}/organizations/{org}/workspaces", doc("workspaces", name="n")).status == 404
    )
    assert ro.patch(f"{V2}/workspaces/{ws}", doc("workspaces", description="x")).status == 404
    assert ro.delete(f"{V2}/workspaces/{ws}").status == 404

    # Another organization's team sees nothing at all.
    out = api.as_(outsider)
    assert out.get(f"{V2}/organizations/{org}/tags").status == 404
    assert out.get(f"{V2}/workspaces/{ws}").status == 404
    assert out.get(f"{V2}/workspaces/{ws}/relationships/tags").status == 404
    assert out.post(f"{V2}/workspaces/{ws}/relationships/tags", tags_doc("x")).status == 404
    assert out.delete(f"{V2}/organizations/{org}/tags", tags_doc(tag)).status == 404
    assert (
        out.post(
            f"{V2}/tags/{tag}/relationships/workspaces", tags_doc(ws, type_="workspaces")
        ).status
        == 404
    )
    # ... nor can it attach its own workspace to our tag, or our workspace to its tags.
    theirs = make_ws(api, other, "theirs")
    assert (
        out.post(
            f"{V2}/tags/{tag}/relationships/workspaces", tags_doc(theirs, type_="workspaces")
        ).status
        == 404
    )
    assert (
        api.post(
            f"{V2}/tags/{tag}/relationships/workspaces", tags_doc(theirs, type_="workspaces")
        ).status
        == 404
    )
    assert api.post(f"{V2}/workspaces/{theirs}/relationships/tags", tags_doc(tag)).status == 404
    assert api.delete(f"{V2}/organizations/{other}/tags", tags_doc(tag)).status == 204  # ignored
    assert out.get(f"{V2}/organizations/{other}/tags").data == []
    assert api.get(f"{V2}/workspaces/ws-doesnotexist").status == 404
    assert api.get(f"{V2}/organizations/nope/tags").status == 404
    assert api.get(f"{V2}/workspaces/{ws}/relationships/tags").status == 200
    assert api.as_(None).get(f"{V2}/organizations/{org}/tags").status == 401

    # A team with manage-workspaces changes tags.
    mg = api.as_(manager)
    add(mg, ws, "by-manager")
    assert org_tags(api, org) == {"by-manager": 1, "t": 1}
    assert org_tags(api, org, f"&filter[exclude][taggable][id]={theirs}") == {
        "by-manager": 1,
        "t": 1,
    }
