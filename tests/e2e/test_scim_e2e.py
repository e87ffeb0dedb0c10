"""SCIM provisioning through the real local stack, driven by a real SCIM client library
(scim2-client over HTTP, with scim2-models' resources): the identity provider's usual
sequence (discover, create users, create a group with members, patch its membership,
deactivate a user, delete the group) and a team linked to the group following it.

The stack is the session's shared one; the test leaves SCIM and SAML disabled again.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from httpx2 import Client
from scim2_client.engines.httpx2 import SyncSCIMClient
from scim2_models import (
    Error,
    Group,
    PatchOp,
    PatchOperation,
    SearchRequest,
    User,
)

from tests.e2e.conftest import Stack

ADMIN = "/admin"


def attributes(**values: Any) -> dict[str, Any]:
    return {"data": {"type": "", "attributes": values}}


@pytest.fixture(scope="module")
def site(stack: Stack) -> Iterator[Any]:
    """SAML then SCIM enabled on the shared stack; both disabled again afterwards."""
    http = stack.session()
    saml = http.patch(
        stack.api(f"{ADMIN}/saml-settings"),
        json=attributes(
            enabled=True,
            **{
                "idp-cert": "testCert",
                "sso-endpoint-url": "https://idp.example.test/sso",
                "slo-endpoint-url": "https://idp.example.test/slo",
            },
        ),
        timeout=30,
    )
    assert saml.status_code == 200, saml.text
    enabled = http.patch(stack.api(f"{ADMIN}/scim-settings"), json=attributes(enabled=True))
    assert enabled.status_code == 200, enabled.text
    yield http
    http.patch(
        stack.api(f"{ADMIN}/scim-settings"),
        json=attributes(**{"site-admin-group-scim-id": None}),
        timeout=30,
    )
    assert http.delete(stack.api(f"{ADMIN}/scim-settings"), timeout=30).status_code == 204
    http.patch(stack.api(f"{ADMIN}/saml-settings"), json=attributes(enabled=False), timeout=30)


@pytest.fixture(scope="module")
def scim(stack: Stack, site: Any) -> Iterator[SyncSCIMClient]:
    token = site.post(
        stack.api(f"{ADMIN}/scim-tokens"),
        json={"data": {"type": "authentication-tokens", "attributes": {"description": "e2e"}}},
        timeout=30,
    )
    assert token.status_code == 201, token.text
    secret = token.json()["data"]["attributes"]["token"]
    with Client(
        base_url=f"{stack.url}/scim/v2",
        headers={"Authorization": f"Bearer {secret}"},
        timeout=30,
    ) as http:
        client = SyncSCIMClient(http)
        client.discover()  # the server's schemas, resource types and configuration
        yield client


def team_member_names(stack: Stack, site: Any, team_id: str) -> set[str]:
    reply = site.get(stack.api(f"/teams/{team_id}?include=users"), timeout=30)
    assert reply.status_code == 200, reply.text
    return {u["attributes"]["username"] for u in reply.json().get("included", [])}


def test_an_identity_provider_provisions_users_and_groups(
    stack: Stack, site: Any, scim: SyncSCIMClient
) -> None:
    config = scim.provider.config
    assert config is not None and config.patch.supported is True
    assert {rt.id for rt in scim.provider.resource_types} == {"User", "Group"}
    # the resource models built from the schemas the server published
    UserModel = scim.get_resource_model("User")  # noqa: N806 - a class
    GroupModel = scim.get_resource_model("Group")  # noqa: N806
    assert UserModel is not None and GroupModel is not None

    # users
    created = {}
    for given, family in (("Barbara", "Jensen"), ("Ken", "Thompson"), ("Ada", "Lovelace")):
        login = f"{given.lower()}.{family.lower()}@example.com"
        user = scim.create(
            UserModel(
                user_name=login,
                name={"givenName": given, "familyName": family},
                emails=[{"value": login, "primary": True, "type": "work"}],
                active=True,
                external_id=f"okta-{given.lower()}",
            )
        )
        assert isinstance(user, UserModel) and user.id, user
        assert user.user_name == login and user.active is True
        created[given] = user
    found = scim.query(
        "User", query_parameters=SearchRequest(filter='userName eq "KEN.thompson@example.com"')
    )
    assert found.total_results == 1 and found.resources[0].id == created["Ken"].id

    # the users are users of the instance; one of them has an API token
    organization = site.post(
        stack.api("/organizations"),
        json={
            "data": {"type": "organizations", "attributes": {"name": "scim-e2e", "email": "o@x.io"}}
        },
        timeout=30,
    )
    assert organization.status_code == 201, organization.text
    team = site.post(
        stack.api("/organizations/scim-e2e/teams"),
        json={"data": {"type": "teams", "attributes": {"name": "platform"}}},
        timeout=30,
    )
    assert team.status_code == 201, team.text
    team_id = team.json()["data"]["id"]

    # a group with members, linked to the team: the team's members follow
    group = scim.create(
        GroupModel(
            display_name="Platform Engineers",
            members=[{"value": created["Barbara"].id}, {"value": created["Ken"].id}],
        )
    )
    assert isinstance(group, GroupModel) and group.id
    assert {m.value for m in group.members or ()} == {created["Barbara"].id, created["Ken"].id}
    link = site.post(
        stack.api(f"{ADMIN}/teams/{team_id}/scim-group-mapping"),
        json={"data": {"type": "scim-group-mappings", "attributes": {"scim-group-id": group.id}}},
        timeout=30,
    )
    assert link.status_code == 204, link.text
    assert team_member_names(stack, site, team_id) == {"barbara-jensen", "ken-thompson"}
    listed = site.get(stack.api(f"{ADMIN}/scim-groups?q=platform"), timeout=30).json()["data"]
    assert [g["attributes"]["name"] for g in listed] == ["Platform Engineers"]

    # patch membership: Ada in, Ken out
    add = PatchOp[Group](
        operations=[
            PatchOperation(op="add", path="members", value=[{"value": created["Ada"].id}]),
            PatchOperation(op="remove", path=f'members[value eq "{created["Ken"].id}"]'),
        ]
    )
    patched = scim.modify(Group, group.id, add)
    assert patched is None or isinstance(patched, GroupModel)
    fetched = scim.query(Group, group.id)
    assert {m.value for m in fetched.members or ()} == {created["Barbara"].id, created["Ada"].id}
    assert team_member_names(stack, site, team_id) == {"barbara-jensen", "ada-lovelace"}

    # deactivate a user: out of the team, and its API tokens are gone
    barbara_user = _instance_user_id(stack, site, "barbara-jensen")
    minted = site.post(
        stack.api(f"/users/{barbara_user}/authentication-tokens"),
        json={"data": {"type": "authentication-tokens", "attributes": {"description": "cli"}}},
        timeout=30,
    )
    assert minted.status_code == 201, minted.text
    barbara_token = minted.json()["data"]["attributes"]["token"]
    assert stack.session(barbara_token).get(stack.api("/account/details")).status_code == 200
    deactivate = PatchOp[User](
        operations=[PatchOperation(op="replace", path="active", value=False)]
    )
    scim.modify(User, created["Barbara"].id, deactivate)
    assert scim.query(User, created["Barbara"].id).active is False
    assert team_member_names(stack, site, team_id) == {"ada-lovelace"}
    assert stack.session(barbara_token).get(stack.api("/account/details")).status_code == 401

    # delete the group: the team is unlinked and keeps its members
    scim.delete(Group, group.id)
    missing = scim.query(Group, group.id, raise_scim_errors=False)
    assert isinstance(missing, Error) and missing.status == 404
    assert team_member_names(stack, site, team_id) == {"ada-lovelace"}
    unlinked = site.delete(stack.api(f"{ADMIN}/teams/{team_id}/scim-group-mapping"), timeout=30)
    assert unlinked.status_code == 409  # "Team is not linked to a SCIM group"


def test_paused_provisioning_is_refused_as_a_scim_403(
    stack: Stack, site: Any, scim: SyncSCIMClient
) -> None:
    settings = stack.api(f"{ADMIN}/scim-settings")
    assert site.patch(settings, json=attributes(paused=True), timeout=30).status_code == 200
    try:
        UserModel = scim.get_resource_model("User")  # noqa: N806 - a class
        refused = scim.create(UserModel(user_name="late@example.com"), raise_scim_errors=False)
        assert isinstance(refused, Error) and refused.status == 403, refused
        assert scim.request("GET", "/ServiceProviderConfig").status_code == 200  # discovery
    finally:
        assert site.patch(settings, json=attributes(paused=False), timeout=30).status_code == 200
    created = scim.create(UserModel(user_name="late@example.com"))
    assert created.user_name == "late@example.com"


def _instance_user_id(stack: Stack, site: Any, username: str) -> str:
    """The id of the instance user of that username (through the team listing)."""
    teams = site.get(stack.api("/organizations/scim-e2e/teams?include=users"), timeout=30).json()
    for user in teams.get("included", []):
        if user["type"] == "users" and user["attributes"]["username"] == username:
            return user["id"]
    raise AssertionError(f"no user {username}")
