"""terrasnek's people suites (its sdist's ``admin_users_test``, ``admin_orgs_test``,
``admin_module_sharing_test``, ``org_memberships_test``, ``team_memberships_test``,
``users_test`` and ``user_tokens_test``), their calls made in their order through terrasnek
against the local stack's HTTP server. terrasnek's own base class cannot run here: it purges
workspaces, policies and VCS clients first, which a registry does not have.

As terrasnek's suites, lists start at page 0 (its ``PAGE_START``) with pages of 50, and
``org_memberships_test`` invites a user made beforehand (its ``TEST_EMAIL``), then finds the
invitation by the first five letters of that user's username filtering on ``status``
``inactive`` (a value TFE does not document, which it answers with the memberships not yet
active)."""

from __future__ import annotations

import re
from uuid import uuid4

import pytest
import requests

from tests.e2e.conftest import ADMIN_TOKEN, Stack

pytestmark = pytest.mark.e2e

terrasnek_api = pytest.importorskip("terrasnek.api")

PASSWORD = "terrasnek-people-42"


def client(stack: Stack, org: str):
    api = terrasnek_api.TFC(ADMIN_TOKEN, url=stack.url)
    api.set_org(org)
    return api


def new_org(api, prefix: str) -> dict:
    name = f"{prefix}-{uuid4().hex[:8]}"
    body = {"data": {"type": "organizations", "attributes": {"name": name, "email": "s@x.io"}}}
    return api.orgs.create(body)["data"]


def invite(api, email: str) -> dict:
    body = {
        "data": {
            "type": "organization-memberships",
            "attributes": {"email": email},
            "relationships": {"teams": {"data": []}},
        }
    }
    return api.org_memberships.invite(body)["data"]


def join(stack: Stack, link: str, username: str) -> None:
    """Accept an invitation with plain HTTP requests, as a browser's form post would (the
    page's cookies sent back by hand: they are ``Secure``, which requests keeps for https)."""
    page = requests.get(link, timeout=30)
    assert page.status_code == 200, page.text
    csrf = re.search(r'name="csrf_token" value="([^"]+)"', page.text)
    assert csrf
    form = {
        "csrf_token": csrf.group(1),
        "username": username,
        "password": PASSWORD,
        "password_again": PASSWORD,
    }
    cookies = "; ".join(f"{c.name}={c.value}" for c in page.cookies)
    accepted = requests.post(
        link, data=form, headers={"Cookie": cookies}, allow_redirects=False, timeout=30
    )
    assert accepted.status_code == 303, accepted.text


def test_terrasnek_admin_users(stack: Stack) -> None:
    api = client(stack, new_org(terrasnek_api.TFC(ADMIN_TOKEN, url=stack.url), "snek-au")["id"])
    username = f"snek{uuid4().hex[:6]}"
    join(stack, invite(api, f"{username}@example.com")["meta"]["invitation-url"], username)

    listed = api.admin_users.list(query=username, page=0, page_size=50)["data"]
    assert [u["attributes"]["username"] for u in listed] == [username]
    user_id = listed[0]["id"]
    assert api.admin_users.suspend(user_id)["data"]["attributes"]["is-suspended"] is True
    assert api.admin_users.unsuspend(user_id)["data"]["attributes"]["is-suspended"] is False
    assert api.admin_users.grant_admin(user_id)["data"]["attributes"]["is-admin"] is True
    assert api.admin_users.revoke_admin(user_id)["data"]["attributes"]["is-admin"] is False


def test_terrasnek_admin_orgs_and_module_sharing(stack: Stack) -> None:
    root = terrasnek_api.TFC(ADMIN_TOKEN, url=stack.url)
    test_org = new_org(root, "snek-ao")["id"]
    api = client(stack, test_org)
    created = new_org(api, "snek-ao")
    created_name = created["attributes"]["name"]

    listed = api.admin_orgs.list(include=["owners"])
    assert "included" in listed and listed["data"]
    # Every page: the shared stack holds other modules' organizations too.
    every = api.admin_orgs._list_all(api.admin_orgs._org_api_v2_base_url)["data"]
    assert created["id"] in [o["id"] for o in every]
    update = {"data": {"type": "organizations", "attributes": {"global-module-sharing": True}}}
    updated = api.admin_orgs.update(test_org, update)["data"]
    assert updated["attributes"]["global-module-sharing"] is True
    shown = api.admin_orgs.show(created_name, include=["owners"])
    assert shown["data"]["id"] == created["id"] and "included" in shown
    assert api.admin_orgs.list_org_module_consumers(test_org, page=1, page_size=20)["data"] == []
    consumers = {"data": [{"id": created_name, "type": "organizations"}]}
    api.admin_orgs.update_org_module_consumers(test_org, consumers)
    listed_consumers = api.admin_orgs.list_org_module_consumers(test_org)["data"]
    assert listed_consumers[0]["id"] == created_name

    # admin_module_sharing: the deprecated API names the consumer by its external id.
    external_id = created["attributes"]["external-id"]
    partnership = {
        "data": {
            "type": "module-partnerships",
            "attributes": {"module-consuming-organization-ids": [external_id]},
        }
    }
    partnerships = api.admin_module_sharing.update(test_org, partnership)["data"]
    assert [p["attributes"]["consuming-organization-id"] for p in partnerships] == [external_id]

    api.admin_orgs.destroy(created_name)
    every = api.admin_orgs._list_all(api.admin_orgs._org_api_v2_base_url)["data"]
    assert created["id"] not in [o["id"] for o in every]


def test_terrasnek_org_and_team_memberships(stack: Stack) -> None:
    root = terrasnek_api.TFC(ADMIN_TOKEN, url=stack.url)
    org = new_org(root, "snek-om")["id"]
    api = client(stack, org)
    first = api.org_memberships.list_for_user()
    assert first["data"] and first["meta"]["pagination"]["total-count"] >= len(first["data"])
    # The admin is a member of every organization on the shared stack: more than one page.
    endpoint = api.org_memberships
    mine = endpoint._list_all(endpoint._endpoint_base_url)["data"]
    assert org in [m["relationships"]["organization"]["data"]["id"] for m in mine]

    # The test user exists beforehand (terrasnek: "User needs to be created ahead of time").
    username = f"snek{uuid4().hex[:6]}"
    email = f"mail-{uuid4().hex[:6]}@example.com"
    elsewhere = client(stack, new_org(root, "snek-om-home")["id"])
    join(stack, invite(elsewhere, email)["meta"]["invitation-url"], username)

    invited = invite(api, email)
    assert invited["attributes"]["email"] == email
    shown = api.org_memberships.show(invited["id"], include=["user"])
    assert "included" in shown and shown["data"]["id"] == invited["id"]
    filters = [{"keys": ["status"], "value": "inactive"}]
    found = api.org_memberships.list_for_org(
        query=username[:5], filters=filters, page=0, page_size=50, include=["user", "teams"]
    )
    assert "included" in found and len(found["data"]) == 1
    every = api.org_memberships.list_all_for_org(
        query=username[:5], filters=filters, include=["user"]
    )
    assert "included" in every and len(every["data"]) == 1

    # team_memberships_test: the caller by username, then the invitation by its id.
    team = api.teams.create({"data": {"type": "teams", "attributes": {"name": "snek"}}})["data"]
    me = api.account.show()["data"]["attributes"]["username"]
    by_name = {"data": [{"type": "users", "id": me}]}
    api.team_memberships.add_user_to_team(team["id"], by_name)
    assert len(api.teams.show(team["id"])["data"]["relationships"]["users"]["data"]) == 1
    api.team_memberships.remove_user_from_team(team["id"], by_name)
    assert api.teams.show(team["id"])["data"]["relationships"]["users"]["data"] == []
    by_membership = {"data": [{"type": "organization-memberships", "id": invited["id"]}]}
    assert api.team_memberships.add_user_to_team_with_org_id(team["id"], by_membership) is None
    assert api.team_memberships.remove_user_from_team_with_org_id(team["id"], by_membership) is None
    api.teams.destroy(team["id"])

    api.org_memberships.remove(invited["id"])
    gone = api.org_memberships.list_for_org(
        query=username[:5], filters=filters, page=0, page_size=50
    )
    assert gone["data"] == []


def test_terrasnek_users_and_user_tokens(stack: Stack) -> None:
    api = client(stack, new_org(terrasnek_api.TFC(ADMIN_TOKEN, url=stack.url), "snek-ut")["id"])
    me = api.account.show()["data"]
    assert api.users.show(me["id"])["data"]["id"] == me["id"]
    body = {"data": {"type": "authentication-tokens", "attributes": {"description": "snek"}}}
    created = api.user_tokens.create(me["id"], body)["data"]
    assert created["id"] in [t["id"] for t in api.user_tokens.list(me["id"])["data"]]
    api.user_tokens.destroy(created["id"])
    assert created["id"] not in [t["id"] for t in api.user_tokens.list(me["id"])["data"]]
