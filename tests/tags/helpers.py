"""What the tag tests, and other rooms' tests, build on: a workspace, tags added and removed,
the tags an organization and a workspace show."""

from __future__ import annotations

from typing import Any

from tests.conftest import Api, doc

V2 = "/api/v2"


def tags_doc(*refs: str, type_: str = "tags") -> dict[str, Any]:
    """Relationship body: ``tag-...`` strings become ids, anything else a name."""
    data = []
    for ref in refs:
        if ref.startswith(("tag-", "ws-")):
            data.append({"type": type_, "id": ref})
        else:
            data.append({"type": type_, "attributes": {"name": ref}})
    return {"data": data}


def make_ws(api: Api, org: str, name: str, **attributes: Any) -> str:
    reply = api.post(
        f"{V2}/organizations/{org}/workspaces", doc("workspaces", name=name, **attributes)
    )
    assert reply.status == 201, reply.json
    return reply.data["id"]


def org_tags(api: Api, org: str, query: str = "") -> dict[str, int]:
    reply = api.get(f"{V2}/organizations/{org}/tags?page[size]=100{query}")
    assert reply.status == 200, reply.json
    return {t["attributes"]["name"]: t["attributes"]["instance-count"] for t in reply.data}


def tag_ids(api: Api, org: str) -> dict[str, str]:
    reply = api.get(f"{V2}/organizations/{org}/tags?page[size]=100")
    return {t["attributes"]["name"]: t["id"] for t in reply.data}


def tag_names(api: Api, ws_id: str) -> list[str]:
    reply = api.get(f"{V2}/workspaces/{ws_id}")
    assert reply.status == 200, reply.json
    return reply.data["attributes"]["tag-names"]


def ws_tags(api: Api, ws_id: str) -> list[str]:
    reply = api.get(f"{V2}/workspaces/{ws_id}/relationships/tags")
    assert reply.status == 200, reply.json
    return [t["attributes"]["name"] for t in reply.data]


def add(api: Api, ws_id: str, *refs: str) -> None:
    reply = api.post(f"{V2}/workspaces/{ws_id}/relationships/tags", tags_doc(*refs))
    assert reply.status == 204, reply.json
    assert reply.body in (b"", None)


def remove(api: Api, ws_id: str, *refs: str) -> None:
    reply = api.delete(f"{V2}/workspaces/{ws_id}/relationships/tags", tags_doc(*refs))
    assert reply.status == 204, reply.json
