"""What the SCIM tests, and the bounds tests, build on: SCIM settings and tokens, a SCIM client
as an identity provider calls, and how SCIM and go-tfe errors read."""

from __future__ import annotations

from typing import Any

from tests.conftest import Api, Reply

ADMIN = "/api/v2/admin"


SETTINGS = f"{ADMIN}/scim-settings"


TOKENS = f"{ADMIN}/scim-tokens"


SCIM = "/scim/v2"


USER = "urn:ietf:params:scim:schemas:core:2.0:User"


GROUP = "urn:ietf:params:scim:schemas:core:2.0:Group"


ERROR = "urn:ietf:params:scim:api:messages:2.0:Error"


PATCH_OP = "urn:ietf:params:scim:api:messages:2.0:PatchOp"


def body(**attributes: Any) -> dict[str, Any]:
    """What go-tfe sends for admin singletons: an empty type."""
    return {"data": {"type": "", "attributes": attributes}}


def enable_saml(api: Api) -> None:
    reply = api.patch(
        f"{ADMIN}/saml-settings",
        body(
            enabled=True,
            **{
                "idp-cert": "testCert",
                "sso-endpoint-url": "https://idp.example.test/sso",
                "slo-endpoint-url": "https://idp.example.test/slo",
            },
        ),
    )
    assert reply.status == 200, reply.json


class Scim:
    """An identity provider: SCIM calls with a SCIM token."""

    def __init__(self, api: Api, token: str | None) -> None:
        self.api = api.as_(token)

    def call(self, method: str, path: str, payload: Any = None, **kw: Any) -> Reply:
        kw.setdefault("content_type", "application/scim+json")
        return self.api.call(method, SCIM + path, payload, **kw)

    def get(self, path: str) -> Reply:
        return self.call("GET", path)

    def post(self, path: str, payload: Any = None, **kw: Any) -> Reply:
        return self.call("POST", path, payload, **kw)

    def put(self, path: str, payload: Any) -> Reply:
        return self.call("PUT", path, payload)

    def patch(self, path: str, *operations: dict[str, Any]) -> Reply:
        return self.call("PATCH", path, {"schemas": [PATCH_OP], "Operations": list(operations)})

    def delete(self, path: str) -> Reply:
        return self.call("DELETE", path)

    def user(self, user_name: str, **extra: Any) -> dict[str, Any]:
        reply = self.post("/Users", {"schemas": [USER], "userName": user_name, **extra})
        assert reply.status == 201, reply.json
        return reply.json

    def group(self, name: str, *members: str, **extra: Any) -> dict[str, Any]:
        payload = {"schemas": [GROUP], "displayName": name, **extra}
        payload["members"] = [{"value": m} for m in members]
        reply = self.post("/Groups", payload)
        assert reply.status == 201, reply.json
        return reply.json


def scim_error(reply: Reply, status: int, scim_type: str | None = None) -> dict[str, Any]:
    assert reply.status == status, (reply.status, reply.body)
    assert reply.headers["Content-Type"] == "application/scim+json"
    error = reply.json
    assert error["schemas"] == [ERROR] and error["status"] == str(status), error
    assert error["detail"]
    if scim_type:
        assert error["scimType"] == scim_type, error
    return error


def new_token(api: Api, **attributes: Any) -> Reply:
    return api.post(TOKENS, {"data": {"type": "authentication-tokens", "attributes": attributes}})


def instance_user(user_id: str) -> Any:
    from chalicelib.accounts.users.service import get_user

    return get_user(user_id)


def team_members(api: Api, team_id: str) -> set[str]:
    reply = api.get(f"/api/v2/teams/{team_id}")
    assert reply.status == 200, reply.json
    return {u["id"] for u in reply.data["relationships"]["users"]["data"]}


def go_tfe_error(reply: Reply) -> str:
    """The error text go-tfe builds from a reply (``checkResponseCode``): 404 is always
    ``resource not found``; otherwise ``title`` and ``detail`` joined by a blank line."""
    if reply.status == 404:
        return "resource not found"
    assert reply.status >= 400, (reply.status, reply.body)
    parts = []
    for error in reply.json["errors"]:
        detail = error.get("detail")
        parts.append(f"{error['title']}\n\n{detail}" if detail else error["title"])
    return "\n".join(parts)
