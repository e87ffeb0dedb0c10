"""What the project tests, and the workspaces' tag-binding tests, build on: a project and its
key/value tag bindings."""

from __future__ import annotations

from typing import Any

from tests.conftest import Api, doc

V2 = "/api/v2"


def bindings_rel(**pairs: str) -> dict[str, Any]:
    data = [
        {"type": "tag-bindings", "attributes": {"key": k, "value": v}} for k, v in pairs.items()
    ]
    return {"tag-bindings": {"data": data}}


def project_doc(relationships: dict[str, Any] | None = None, **attributes: Any) -> dict[str, Any]:
    body = doc("projects", **attributes)
    if relationships is not None:
        body["data"]["relationships"] = relationships
    return body


def make_project(api: Api, org: str, name: str, **pairs: str) -> str:
    reply = api.post(
        f"{V2}/organizations/{org}/projects", project_doc(bindings_rel(**pairs), name=name)
    )
    assert reply.status == 201, reply.json
    return reply.data["id"]


def pairs(api: Api, path: str) -> dict[str, str]:
    reply = api.get(path)
    assert reply.status == 200, reply.json
    return {b["attributes"]["key"]: b["attributes"]["value"] for b in reply.data}
