"""go-tfe's TestUsersReadCurrent and TestUsersUpdate over the wire: the local stack's HTTP
server (no SMTP: a new email address waits as ``unconfirmed-email``)."""

from __future__ import annotations

from typing import Any

from tests.e2e.conftest import Stack


def _users(**attributes: Any) -> dict[str, Any]:
    return {"data": {"type": "users", "attributes": attributes}}


def test_users_read_current_and_update_over_http(stack: Stack) -> None:
    admin = stack.session()
    before = admin.get(stack.api("/account/details")).json()["data"]
    assert before["id"] and before["attributes"]["avatar-url"]
    assert before["attributes"]["two-factor"] is not None
    update = stack.api("/account/update")
    try:
        assert admin.patch(update, json=_users()).status_code == 200
        assert admin.get(stack.api("/account/details")).json()["data"] == before
        renamed = admin.patch(update, json=_users(username="NewTestUsername"))
        assert renamed.status_code == 200, renamed.text
        read = admin.get(stack.api("/account/details")).json()["data"]["attributes"]
        assert read["username"] == "NewTestUsername"
        moved = admin.patch(update, json=_users(email="newtestemail@hashicorp.com"))
        assert moved.status_code == 200, moved.text
        read = admin.get(stack.api("/account/details")).json()["data"]["attributes"]
        assert read["unconfirmed-email"] == "newtestemail@hashicorp.com"
        bad = admin.patch(update, json=_users(email="notamailaddress"))
        assert bad.status_code == 422
        assert bad.json()["errors"][0]["source"]["pointer"] == "/data/attributes/email"
    finally:  # as go-tfe's deferred reset
        attributes = before["attributes"]
        reset = _users(email=attributes["email"], username=attributes["username"])
        assert admin.patch(update, json=reset).status_code == 200
    assert admin.get(stack.api("/account/details")).json()["data"] == before
