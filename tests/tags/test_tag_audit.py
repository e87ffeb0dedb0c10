"""The audit events of workspaces and their tags: one per change, by the caller, in the
organization's partition, written in the change's own transaction; refusals record nothing;
the pairs a workspace's delete removes are part of that delete (one event)."""

from __future__ import annotations

from typing import Any

from tests.conftest import Api, doc, make_org, make_team
from tests.projects.helpers import make_project
from tests.tags.helpers import V2, add, make_ws, remove, tag_ids, tags_doc


def recorded(org: str) -> list[dict[str, Any]]:
    from chalicelib.core.audit import trail

    found, _ = trail.read_page(org, None, 1, 1000)
    return [e for e in found if e["resource"]["type"] in ("workspace", "tag")]


def what(events: list[dict[str, Any]]) -> list[tuple[str, str, str]]:
    return [(e["resource"]["type"], e["resource"]["id"], e["resource"]["action"]) for e in events]


def test_each_workspace_change_records_one_event(api: Api) -> None:
    make_org(api, "acme")
    _, reader = make_team(api, "acme", "readers")
    project_id = make_project(api, "acme", "Net")
    created = api.post(
        f"{V2}/organizations/acme/workspaces",
        doc("workspaces", name="web", **{"tag-names": ["prod", "eu"]}),
    )
    assert created.status == 201, created.json
    ws = created.data["id"]
    path = f"{V2}/workspaces/{ws}"
    assert api.patch(path, doc("workspaces", name="site", description="d")).status == 200
    bindings = {"data": [{"type": "tag-bindings", "attributes": {"key": "tier", "value": "1"}}]}
    assert api.patch(f"{path}/tag-bindings", bindings).status == 200
    moved = {"data": [{"type": "workspaces", "id": ws}]}
    assert api.post(f"{V2}/projects/{project_id}/relationships/workspaces", moved).status == 204
    # Refused: a taken name, an invalid one, a reader, a project of nowhere: no event.
    make_ws(api, "acme", "other")
    before = len(recorded("acme"))
    assert api.patch(path, doc("workspaces", name="other")).status == 422
    assert api.patch(path, doc("workspaces", name="no spaces")).status == 422
    assert api.as_(reader).patch(path, doc("workspaces", description="x")).status == 404
    assert api.as_(reader).delete(path).status == 404
    assert api.post(f"{V2}/projects/prj-nowhere/relationships/workspaces", moved).status == 404
    assert len(recorded("acme")) == before
    assert api.delete(path).status == 204

    found = [e for e in recorded("acme") if e["resource"]["id"] == ws]
    assert what(found) == [
        ("workspace", ws, "created"),
        ("workspace", ws, "updated"),
        ("workspace", ws, "updated"),
        ("workspace", ws, "updated"),
        ("workspace", ws, "deleted"),  # its tags went with it: no untagged events
    ]
    me = api.get(f"{V2}/account/details").data["id"]
    assert all(
        e["auth"]["accessor_id"] == me and e["auth"]["organization_id"] == "acme" for e in found
    )
    meta = [e["resource"]["meta"] for e in found]
    assert meta[0]["tag-names"] == ["prod", "eu"] and meta[0]["name"] == "web"
    assert meta[1]["changed"] == ["description", "name"]
    assert (meta[1]["name"], meta[1]["previous-name"]) == ("site", "web")
    assert meta[2]["changed"] == ["tag-bindings"]
    assert meta[3]["changed"] == ["project"] and meta[3]["project-id"] == project_id


def test_tagging_records_one_event_per_tag_and_a_bulk_delete_one_per_tag(api: Api) -> None:
    make_org(api, "acme")
    _, reader = make_team(api, "acme", "readers")
    ws, other = make_ws(api, "acme", "web"), make_ws(api, "acme", "api")
    before = len(recorded("acme"))
    add(api, ws, "prod", "eu")
    add(api, ws, "prod")  # on it already: no change, no event
    ids = tag_ids(api, "acme")
    reply = api.post(
        f"{V2}/tags/{ids['prod']}/relationships/workspaces", tags_doc(other, type_="workspaces")
    )
    assert reply.status == 204, reply.json
    remove(api, ws, "eu")
    assert (
        api.as_(reader).post(f"{V2}/workspaces/{ws}/relationships/tags", tags_doc("x")).status
        == 404
    )
    deleted = api.delete(
        f"{V2}/organizations/acme/tags", {"data": [{"type": "tags", "id": ids["prod"]}]}
    )
    assert deleted.status == 204, deleted.json

    found = recorded("acme")[before:]
    assert what(found) == [
        ("workspace", ws, "tagged"),
        ("workspace", ws, "tagged"),
        ("workspace", other, "tagged"),
        ("workspace", ws, "untagged"),
        ("tag", ids["prod"], "deleted"),  # its two pairs went with it
    ]
    assert [e["resource"]["meta"].get("tag") for e in found[:4]] == ["prod", "eu", "prod", "eu"]
    assert found[0]["resource"]["meta"]["tag-id"] == ids["prod"]
    assert found[4]["resource"]["meta"]["name"] == "prod"
