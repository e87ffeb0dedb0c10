"""Site administration of users and organizations, and module sharing, over the wire: the
local stack's HTTP server, not the in-process client."""

from __future__ import annotations

from typing import Any

import requests

from tests.e2e.conftest import Stack


def _doc(type_: str, **attributes: Any) -> dict[str, Any]:
    return {"data": {"type": type_, "attributes": attributes}}


def _team_token(admin: requests.Session, stack: Stack, org: str) -> str:
    team = admin.post(stack.api(f"/organizations/{org}/teams"), json=_doc("teams", name="readers"))
    assert team.status_code == 201, team.text
    token = admin.post(stack.api(f"/teams/{team.json()['data']['id']}/authentication-token"))
    assert token.status_code == 201, token.text
    return token.json()["data"]["attributes"]["token"]


def test_module_sharing_and_admin_refusals_over_http(stack: Stack) -> None:
    admin = stack.session()
    for org in ("share-producer", "share-consumer"):
        made = admin.post(
            stack.api("/organizations"), json=_doc("organizations", name=org, email="o@x.io")
        )
        assert made.status_code == 201, made.text
    module = _doc("registry-modules", name="net", provider="aws", **{"registry-name": "private"})
    created = admin.post(stack.api("/organizations/share-producer/registry-modules"), json=module)
    assert created.status_code == 201, created.text
    consumer = stack.session(_team_token(admin, stack, "share-consumer"))
    versions = f"{stack.url}/api/registry/v1/modules/share-producer/net/aws/versions"
    consumers = stack.api("/admin/organizations/share-producer/relationships/module-consumers")

    # Not shared: the consumer organization cannot see it, and cannot reach the admin routes.
    assert consumer.get(versions).status_code == 404
    assert consumer.get(stack.api("/admin/users")).status_code == 404
    assert consumer.patch(consumers, json={"data": []}).status_code == 404

    # Bad input changes nothing: over the bound, or an organization that does not exist.
    too_many = {"data": [{"type": "organizations", "id": f"o{i}"} for i in range(101)]}
    over = admin.patch(consumers, json=too_many)
    assert over.status_code == 422 and "at most 100" in over.json()["errors"][0]["detail"]
    unknown = admin.patch(consumers, json={"data": [{"type": "organizations", "id": "nope"}]})
    assert 400 <= unknown.status_code < 500 and "errors" in unknown.json()
    assert admin.get(consumers).json()["data"] == []
    assert consumer.get(versions).status_code == 404

    # Shared: the consumer reads it; unshared again: it does not.
    shared = admin.patch(
        consumers, json={"data": [{"type": "organizations", "id": "share-consumer"}]}
    )
    assert shared.status_code == 200, shared.text
    assert consumer.get(versions).status_code == 200
    assert admin.patch(consumers, json={"data": []}).status_code == 200
    assert consumer.get(versions).status_code == 404

    # The users list answers a site admin; a filter it does not know is a 422 naming it.
    listed = admin.get(stack.api("/admin/users"), params={"q": "admin", "filter[admin]": "true"})
    assert listed.status_code == 200
    assert "admin" in [u["attributes"]["username"] for u in listed.json()["data"]]
    bad = admin.get(stack.api("/admin/users"), params={"filter[admin]": "maybe"})
    assert bad.status_code == 422 and "errors" in bad.json()
