"""SCIM provisioning (fast layer): the admin API go-tfe drives (settings, tokens, groups,
team links) and the SCIM 2.0 service provider an identity provider calls."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from tests.conftest import Api, Reply, make_org, make_team
from tests.scim.helpers import (
    ADMIN,
    ERROR,
    GROUP,
    SCIM,
    SETTINGS,
    TOKENS,
    USER,
    Scim,
    body,
    enable_saml,
    go_tfe_error,
    instance_user,
    new_token,
    scim_error,
    team_members,
)


def in_days(days: float) -> str:
    return (datetime.now(UTC) + timedelta(days=days)).strftime("%Y-%m-%dT%H:%M:%SZ")


@pytest.fixture
def idp(api: Api) -> Scim:
    """SAML and SCIM enabled, and an identity provider holding a SCIM token."""
    enable_saml(api)
    assert api.patch(SETTINGS, body(enabled=True)).status == 200
    token = new_token(api, description="okta")
    assert token.status == 201, token.json
    return Scim(api, token.data["attributes"]["token"])


def user_token(api: Api, username: str, *, admin: bool = False) -> tuple[str, str]:
    """A user of the instance and an API token of theirs: (user id, token)."""
    from chalicelib.accounts.users.service import create_user
    from chalicelib.core.auth import mint_token

    user = create_user(username, f"{username}@example.test", site_admin=admin)
    return user.id, mint_token("user", user.id)[1]


def tokens_of(user_id: str) -> list[Any]:
    from chalicelib.accounts.tokens.store import owned_tokens

    return list(owned_tokens("user", user_id))


def scim_link(api: Api, team_id: str) -> tuple[bool, str | None, bool]:
    """What go-tfe reads of a team's link: scim-linked, scim-group-name, scim-sync-paused."""
    attributes = api.get(f"/api/v2/teams/{team_id}").data["attributes"]
    return attributes["scim-linked"], attributes["scim-group-name"], attributes["scim-sync-paused"]


def instance_id(scim_user: dict[str, Any]) -> str:
    from chalicelib.scim import store

    found = store.get_user(scim_user["id"])
    assert found is not None
    return found.user_id


# ----- settings --------------------------------------------------------------------------------


def test_fresh_instance_reads_disabled_and_only_site_admins_see_scim(api: Api) -> None:
    reply = api.get(SETTINGS)
    assert reply.status == 200
    assert reply.data == {
        "id": "scim",
        "type": "scim-settings",
        "attributes": {
            "enabled": False,
            "paused": False,
            "site-admin-group-scim-id": None,
            "site-admin-group-display-name": None,
            "link-existing-users": False,
        },
    }
    _, token = user_token(api, "someone")
    other = api.as_(token)
    team = make_team(api, make_org(api), "plain")[0]
    for method, path in [
        ("GET", SETTINGS),
        ("PATCH", SETTINGS),
        ("DELETE", SETTINGS),
        ("GET", TOKENS),
        ("POST", TOKENS),
        ("GET", f"{TOKENS}/at-whatever"),
        ("DELETE", f"{TOKENS}/at-whatever"),
        ("GET", f"{ADMIN}/scim-groups"),
        ("POST", f"{ADMIN}/teams/{team}/scim-group-mapping"),
        ("PATCH", f"{ADMIN}/teams/{team}/scim-group-mapping"),
        ("DELETE", f"{ADMIN}/teams/{team}/scim-group-mapping"),
    ]:
        reply = other.call(method, path, body(enabled=True))
        assert reply.status == 404, (method, path, reply.json)
    assert api.as_(None).get(SETTINGS).status == 401
    assert api.get(SETTINGS).data["attributes"]["enabled"] is False


def test_the_hosted_edition_has_no_scim(api: Api, hosted: None) -> None:
    assert api.get(SETTINGS).status == 404
    assert api.get(TOKENS).status == 404
    scim_error(Scim(api, "anything").get("/ServiceProviderConfig"), 404)


def test_enabling_needs_saml_pausing_needs_enabled_and_disable_is_idempotent(api: Api) -> None:
    reply = api.patch(SETTINGS, body(enabled=True))
    assert reply.status == 422
    assert reply.error["source"]["pointer"] == "/data/attributes/enabled"
    assert "SAML" in reply.error["detail"]
    reply = api.patch(SETTINGS, body(paused=True))
    assert reply.status == 422 and reply.error["source"]["pointer"] == "/data/attributes/paused"
    assert api.get(SETTINGS).data["attributes"]["enabled"] is False
    assert api.patch(SETTINGS, body(enabled="yes")).status == 422

    enable_saml(api)
    reply = api.patch(SETTINGS, body(enabled=True))
    assert reply.status == 200 and reply.data["attributes"]["enabled"] is True
    for paused in (True, False):  # go-tfe: pause, then unpause
        assert api.patch(SETTINGS, body(paused=paused)).status == 200
        assert api.get(SETTINGS).data["attributes"]["paused"] is paused
    assert api.patch(SETTINGS, body(paused=True)).status == 200
    for _ in range(2):  # disabling twice is no error
        assert api.delete(SETTINGS).status == 204
        attributes = api.get(SETTINGS).data["attributes"]
        assert attributes["enabled"] is False and attributes["paused"] is False


# ----- tokens ----------------------------------------------------------------------------------


def test_scim_tokens_go_tfe_sequence(api: Api) -> None:
    reply = new_token(api)  # no options
    assert reply.status == 201, reply.json
    plain = reply.data
    assert plain["type"] == "authentication-tokens" and plain["id"].startswith("at-")
    secret = plain["attributes"]["token"]
    assert secret and not plain["attributes"]["description"]
    created = datetime.fromisoformat(plain["attributes"]["created-at"])
    expires = datetime.fromisoformat(plain["attributes"]["expired-at"])
    assert abs((expires - created) - timedelta(days=365)) < timedelta(seconds=10)

    described = new_token(api, description="Test Description", **{"expired-at": in_days(60)})
    assert described.status == 201
    assert described.data["attributes"]["description"] == "Test Description"
    assert new_token(api, **{"expired-at": in_days(29) + ""}).status in (201, 422)
    edge = (datetime.now(UTC) + timedelta(days=29, minutes=10)).isoformat()
    assert new_token(api, **{"expired-at": edge}).status == 201
    assert new_token(api, **{"expired-at": in_days(365)}).status == 201
    for bad in (in_days(20), in_days(400), "next tuesday", 12):
        reply = new_token(api, **{"expired-at": bad})
        assert reply.status == 422, bad
        assert reply.error["source"]["pointer"] == "/data/attributes/expired-at"

    listed = api.get(TOKENS)
    assert listed.status == 200
    ids = [t["id"] for t in listed.data]
    assert {plain["id"], described.data["id"]} <= set(ids)
    assert all("token" not in t["attributes"] for t in listed.data)

    read = api.get(f"{TOKENS}/{described.data['id']}")
    assert read.status == 200 and "token" not in read.data["attributes"]
    assert read.data["attributes"]["description"] == "Test Description"
    assert read.data["attributes"]["expired-at"] == described.data["attributes"]["expired-at"]
    assert api.get(f"{TOKENS}/this-does-not-exist").status == 404

    # the token value is stored hashed, never as given
    from chalicelib.core.auth import TokenModel

    assert all(secret not in item.token_hash for item in TokenModel.scan())

    assert api.delete(f"{TOKENS}/{described.data['id']}").status == 204
    assert api.get(f"{TOKENS}/{described.data['id']}").status == 404
    assert api.delete(f"{TOKENS}/this-does-not-exist").status == 404
    # go-tfe deletes SCIM tokens through /authentication-tokens/:id
    assert api.delete(f"/api/v2/authentication-tokens/{plain['id']}").status == 204
    assert api.get(f"{TOKENS}/{plain['id']}").status == 404
    scim_error(Scim(api, secret).get("/ServiceProviderConfig"), 401)


def test_scim_and_api_tokens_do_not_cross_and_expired_tokens_are_refused(api: Api) -> None:
    enable_saml(api)
    api.patch(SETTINGS, body(enabled=True))
    secret = new_token(api).data["attributes"]["token"]
    assert api.as_(secret).get("/api/v2/account/details").status == 401
    scim_error(Scim(api, api.token).get("/Users"), 401)
    scim_error(Scim(api, None).get("/Users"), 401)
    assert Scim(api, secret).get("/Users").status == 200

    from chalicelib.scim import store

    token = store.token_by_secret(secret)
    token.update(actions=[type(token).expired_at.set(datetime.now(UTC) - timedelta(seconds=1))])
    scim_error(Scim(api, secret).get("/Users"), 401)


# ----- users -----------------------------------------------------------------------------------


def test_users_create_read_filter_page_replace_patch_delete(api: Api, idp: Scim) -> None:
    jane = idp.user(
        "Jane.Doe@example.com",
        externalId="00u1",
        name={"givenName": "Jane", "familyName": "Doe"},
        emails=[{"value": "jane@example.com", "type": "work", "primary": True}],
    )
    assert jane["schemas"] == [USER] and jane["active"] is True
    assert jane["userName"] == "Jane.Doe@example.com" and jane["externalId"] == "00u1"
    assert jane["name"] == {"givenName": "Jane", "familyName": "Doe"} and jane["groups"] == []
    assert jane["meta"]["resourceType"] == "User"
    assert jane["meta"]["location"].endswith(f"/scim/v2/Users/{jane['id']}")
    # a user of the instance, with a valid username
    user = instance_user(instance_id(jane))
    assert user.username == "Jane-Doe" and user.email == "jane@example.com"

    scim_error(
        idp.post("/Users", {"schemas": [USER], "userName": "jane.doe@EXAMPLE.com"}),
        409,
        "uniqueness",
    )
    scim_error(idp.post("/Users", {"schemas": [USER]}), 400, "invalidValue")
    for name in ("bob@example.com", "carol@example.com", "dave@example.com"):
        idp.user(name)

    found = idp.get("/Users?filter=userName%20eq%20%22JANE.DOE%40example.com%22").json
    assert found["totalResults"] == 1 and found["Resources"][0]["id"] == jane["id"]
    assert idp.get("/Users?filter=externalId%20eq%20%2200u1%22").json["totalResults"] == 1
    assert idp.get("/Users?filter=externalId%20eq%20%2200U1%22").json["totalResults"] == 0
    assert idp.get("/Users?filter=userName%20sw%20%22b%22").json["totalResults"] == 1
    page = idp.get("/Users?startIndex=2&count=2").json
    assert page["totalResults"] == 4 and page["startIndex"] == 2
    assert page["itemsPerPage"] == 2 and len(page["Resources"]) == 2
    assert idp.get("/Users?count=0").json == {
        "schemas": ["urn:ietf:params:scim:api:messages:2.0:ListResponse"],
        "totalResults": 4,
        "startIndex": 1,
        "itemsPerPage": 0,
        "Resources": [],
    }
    scim_error(idp.get("/Users?filter=userName%20zz%20%22x%22"), 400, "invalidFilter")
    scim_error(idp.get("/Users?filter=userName%20eq"), 400, "invalidFilter")
    scim_error(idp.get("/Users?count=many"), 400)
    scim_error(idp.get("/Users/nope"), 404)

    replaced = idp.put(
        f"/Users/{jane['id']}",
        {"schemas": [USER], "userName": "jane.doe@example.com", "title": "CTO", "active": True},
    )
    assert replaced.status == 200, replaced.json
    assert replaced.json["title"] == "CTO" and "externalId" not in replaced.json
    assert "name" not in replaced.json  # replaced, not merged

    # PATCH as Okta (no path) and as Entra ID (paths, "Replace", string booleans)
    reply = idp.patch(
        f"/Users/{jane['id']}",
        {"op": "replace", "value": {"name.givenName": "Janet", "externalId": "00u9"}},
        {"op": "Add", "path": 'emails[type eq "work"].value', "value": "janet@example.com"},
        {"op": "Replace", "path": "displayName", "value": "Janet Doe"},
        {"op": "remove", "path": "title"},
    )
    assert reply.status == 200, reply.json
    patched = reply.json
    assert patched["name"] == {"givenName": "Janet"} and patched["externalId"] == "00u9"
    assert patched["emails"] == [{"type": "work", "value": "janet@example.com"}]
    assert patched["displayName"] == "Janet Doe" and "title" not in patched
    assert instance_user(instance_id(jane)).email == "janet@example.com"  # follows the IdP

    scim_error(idp.patch(f"/Users/{jane['id']}", {"op": "remove", "path": "userName"}), 400)
    scim_error(idp.patch(f"/Users/{jane['id']}", {"op": "move", "path": "title"}), 400)
    scim_error(idp.patch(f"/Users/{jane['id']}", {"op": "add", "path": "[[["}), 400)
    scim_error(idp.patch(f"/Users/{jane['id']}", {"op": "replace", "path": "id", "value": 1}), 400)
    assert idp.get(f"/Users/{jane['id']}").json == patched  # refused patches changed nothing

    assert idp.delete(f"/Users/{jane['id']}").status == 204
    scim_error(idp.get(f"/Users/{jane['id']}"), 404)
    scim_error(idp.delete(f"/Users/{jane['id']}"), 404)
    assert idp.get("/Users").json["totalResults"] == 3


def test_deactivated_and_deleted_users_lose_their_api_tokens(api: Api, idp: Scim) -> None:
    kim = idp.user("kim@example.com")
    kim_id = instance_id(kim)
    from chalicelib.core.auth import mint_token

    secret = mint_token("user", kim_id)[1]
    assert api.as_(secret).get("/api/v2/account/details").status == 200

    reply = idp.patch(f"/Users/{kim['id']}", {"op": "Replace", "path": "active", "value": "False"})
    assert reply.status == 200 and reply.json["active"] is False
    assert tokens_of(kim_id) == []
    assert api.as_(secret).get("/api/v2/account/details").status == 401
    assert idp.patch(f"/Users/{kim['id']}", {"op": "replace", "value": {"active": True}}).json[
        "active"
    ]

    secret = mint_token("user", kim_id)[1]
    assert idp.delete(f"/Users/{kim['id']}").status == 204
    assert tokens_of(kim_id) == []
    assert api.as_(secret).get("/api/v2/account/details").status == 401
    # re-provisioned, the same instance user is linked again (same username and email)
    assert instance_id(idp.user("kim@example.com")) == kim_id


# ----- groups and teams ------------------------------------------------------------------------


def link(api: Api, team_id: str, group_id: str) -> Reply:
    return api.post(
        f"{ADMIN}/teams/{team_id}/scim-group-mapping",
        {"data": {"type": "scim-group-mappings", "attributes": {"scim-group-id": group_id}}},
    )


def pause(api: Api, team_id: str, paused: Any) -> Reply:
    return api.patch(
        f"{ADMIN}/teams/{team_id}/scim-group-mapping",
        {"data": {"type": "scim-group-mappings", "attributes": {"scim-sync-paused": paused}}},
    )


def test_a_linked_team_follows_its_group(api: Api, idp: Scim) -> None:
    a, b, c = (idp.user(f"{n}@example.com") for n in ("ann", "ben", "cat"))
    ua, ub, uc = (instance_id(u) for u in (a, b, c))
    org = make_org(api)
    team = make_team(api, org, "platform")[0]
    other = make_team(api, org, "other")[0]
    group = idp.group("Platform", a["id"], b["id"], externalId="grp-1")
    assert group["displayName"] == "Platform"
    assert {m["value"] for m in group["members"]} == {a["id"], b["id"]}
    assert {g["display"] for g in idp.get(f"/Users/{a['id']}").json["groups"]} == {"Platform"}

    assert scim_link(api, team) == (False, None, False)
    assert link(api, team, group["id"]).status == 204
    assert team_members(api, team) == {ua, ub}
    assert scim_link(api, team) == (True, "Platform", False)
    assert link(api, other, group["id"]).status == 204  # many teams, one group

    # add, remove (Entra ID's filter path), deactivate, reactivate
    assert (
        idp.patch(
            f"/Groups/{group['id']}",
            {"op": "add", "path": "members", "value": [{"value": c["id"]}]},
        ).status
        == 200
    )
    assert team_members(api, team) == {ua, ub, uc} == team_members(api, other)
    reply = idp.patch(
        f"/Groups/{group['id']}", {"op": "remove", "path": f'members[value eq "{a["id"]}"]'}
    )
    assert reply.status == 200 and {m["value"] for m in reply.json["members"]} == {
        b["id"],
        c["id"],
    }
    assert team_members(api, team) == {ub, uc}
    idp.patch(f"/Users/{b['id']}", {"op": "replace", "value": {"active": False}})
    assert team_members(api, team) == {uc}
    idp.patch(f"/Users/{b['id']}", {"op": "replace", "value": {"active": True}})
    assert team_members(api, team) == {ub, uc}

    # while linked, members are the identity provider's to change
    member_ref = {"data": [{"type": "users", "id": instance_user(ua).username}]}
    by_hand = api.post(f"/api/v2/teams/{team}/relationships/users", member_ref)
    assert by_hand.status == 422 and "SCIM group" in by_hand.error["detail"]
    assert api.delete(f"/api/v2/teams/{team}/relationships/users", member_ref).status == 422

    # paused: the team stays as it is; resuming reconciles
    assert pause(api, team, True).status == 204
    assert pause(api, team, True).status == 204  # idempotent
    assert scim_link(api, team) == (True, "Platform", True)
    replaced = idp.put(
        f"/Groups/{group['id']}", {"displayName": "Platform", "members": [{"value": a["id"]}]}
    )
    assert replaced.status == 200, replaced.json
    assert team_members(api, team) == {ub, uc} and team_members(api, other) == {ua}
    assert pause(api, team, False).status == 204
    assert team_members(api, team) == {ua}
    assert scim_link(api, team) == (True, "Platform", False)
    renamed = idp.patch(
        f"/Groups/{group['id']}", {"op": "replace", "path": "displayName", "value": "Platform Team"}
    )
    assert renamed.status == 200
    assert scim_link(api, team) == (True, "Platform Team", False)

    # errors go-tfe expects, none of which changes anything
    owners = next(
        t["id"]
        for t in api.get(f"/api/v2/organizations/{org}/teams").data
        if t["attributes"]["name"] == "owners"
    )
    spare = make_team(api, org, "spare")[0]
    assert link(api, team, group["id"]).status == 409  # already linked
    assert link(api, owners, group["id"]).status == 422
    assert link(api, spare, "this-scim-group-does-not-exist").status == 404
    assert link(api, "this-team-does-not-exist", group["id"]).status == 404
    assert link(api, spare, "").status == 422
    assert pause(api, spare, True).status == 409  # not linked
    assert pause(api, team, None).status == 422
    assert pause(api, "this-team-does-not-exist", True).status == 404
    assert api.delete(f"{ADMIN}/teams/{spare}/scim-group-mapping").status == 409

    # unlinking keeps the members; the team no longer follows
    assert api.delete(f"{ADMIN}/teams/{team}/scim-group-mapping").status == 204
    assert scim_link(api, team) == (False, None, False)
    idp.patch(f"/Groups/{group['id']}", {"op": "replace", "path": "members", "value": []})
    assert team_members(api, team) == {ua} and team_members(api, other) == set()
    assert link(api, team, group["id"]).status == 204  # re-link after delete
    assert team_members(api, team) == set()

    # deleting the group unlinks its teams
    assert scim_link(api, team)[0] is True
    assert idp.delete(f"/Groups/{group['id']}").status == 204
    assert scim_link(api, team) == (False, None, False)
    assert api.delete(f"{ADMIN}/teams/{team}/scim-group-mapping").status == 409
    assert idp.get(f"/Users/{a['id']}").json["groups"] == []


def test_groups_filter_paging_rename_and_errors(api: Api, idp: Scim) -> None:
    u = idp.user("u@example.com")
    g1 = idp.group("Engineering", u["id"], externalId="ext-1")
    idp.group("Sales")
    scim_error(idp.post("/Groups", {"displayName": "engineering"}), 409, "uniqueness")
    scim_error(idp.post("/Groups", {"displayName": "X", "members": [{"value": "nope"}]}), 400)
    scim_error(idp.post("/Groups", {"displayName": "X", "members": "nope"}), 400)
    scim_error(idp.post("/Groups", {"members": []}), 400)
    found = idp.get("/Groups?filter=displayName%20eq%20%22ENGINEERING%22").json
    assert [g["id"] for g in found["Resources"]] == [g1["id"]]
    assert idp.get("/Groups?filter=externalId%20eq%20%22ext-1%22").json["totalResults"] == 1
    both = idp.get(
        f"/Groups?filter=id%20eq%20%22{g1['id']}%22%20and%20members%20eq%20%22{u['id']}%22"
    ).json
    assert both["totalResults"] == 1
    slim = idp.get("/Groups?excludedAttributes=members").json["Resources"]
    assert len(slim) == 2 and all("members" not in g for g in slim)
    reply = idp.patch(
        f"/Groups/{g1['id']}",
        {"op": "replace", "value": {"id": g1["id"], "displayName": "Eng"}},
    )
    assert reply.status == 200 and reply.json["displayName"] == "Eng"
    scim_error(idp.patch(f"/Groups/{g1['id']}", {"op": "remove", "path": "displayName"}), 400)
    scim_error(idp.patch(f"/Groups/{g1['id']}", {"op": "add", "path": "owner", "value": 1}), 400)
    scim_error(idp.call("PATCH", f"/Groups/{g1['id']}", {"Operations": "x"}), 400)
    scim_error(idp.call("PATCH", f"/Groups/{g1['id']}", [1, 2]), 400)
    scim_error(idp.call("POST", "/Groups", raw="{not json"), 400, "invalidSyntax")
    scim_error(idp.get("/Groups/missing"), 404)
    assert idp.get(f"/Groups/{g1['id']}").json["displayName"] == "Eng"


def test_admin_scim_groups_list_with_q_and_paging(api: Api, idp: Scim) -> None:
    reply = api.get(f"{ADMIN}/scim-groups")
    assert reply.status == 200 and reply.data == []
    assert reply.json["meta"]["pagination"]["total-count"] == 0
    for name in (
        "x-this-group-exists",
        "x-matching-group-1",
        "x-matching-group-2",
        "x-CaSe-InSeNsItIvE-gRoUp",
    ):
        idp.group(name)
    for i in range(26):
        idp.group(f"page-{i:02d}")
    assert len(api.get(f"{ADMIN}/scim-groups?q=x-matching-group-").data) == 2
    insensitive = api.get(f"{ADMIN}/scim-groups?q=x-case-insensitive-group").data
    assert [g["attributes"]["name"] for g in insensitive] == ["x-CaSe-InSeNsItIvE-gRoUp"]
    assert insensitive[0]["type"] == "scim-groups"
    assert api.get(f"{ADMIN}/scim-groups?q=nothing-like-it").data == []
    first = api.get(f"{ADMIN}/scim-groups?page%5Bnumber%5D=1")
    second = api.get(f"{ADMIN}/scim-groups?page%5Bnumber%5D=2")
    assert len(first.data) == 20 and len(second.data) == 10
    pagination = second.json["meta"]["pagination"]
    assert pagination["total-count"] == 30 and pagination["total-pages"] == 2
    assert pagination["prev-page"] == 1 and pagination["next-page"] is None
    assert not {g["id"] for g in first.data} & {g["id"] for g in second.data}
    beyond = api.get(f"{ADMIN}/scim-groups?q=page-&page%5Bsize%5D=10&page%5Bnumber%5D=4")
    assert beyond.data == [] and beyond.json["meta"]["pagination"]["current-page"] == 4


def test_the_site_admin_group_grants_and_revokes_the_flag(api: Api, idp: Scim) -> None:
    boss, temp = idp.user("boss@example.com"), idp.user("temp@example.com")
    admins = idp.group("foo", boss["id"])
    ub, ut = instance_id(boss), instance_id(temp)
    from chalicelib.core.auth import mint_token

    temp_token = mint_token("user", ut)[1]

    reply = api.patch(SETTINGS, body(**{"site-admin-group-scim-id": "this-group-doesn't-exist"}))
    assert reply.status == 422
    assert reply.error["source"]["pointer"] == "/data/attributes/site-admin-group-scim-id"
    reply = api.patch(SETTINGS, body(**{"site-admin-group-scim-id": admins["id"]}))
    assert reply.status == 200
    assert reply.data["attributes"]["site-admin-group-scim-id"] == admins["id"]
    assert reply.data["attributes"]["site-admin-group-display-name"] == "foo"
    assert instance_user(ub).is_site_admin and not instance_user(ut).is_site_admin

    idp.patch(
        f"/Groups/{admins['id']}",
        {"op": "add", "path": "members", "value": [{"value": temp["id"]}]},
    )
    assert instance_user(ut).is_site_admin
    assert api.as_(temp_token).get(SETTINGS).status == 200
    idp.patch(
        f"/Groups/{admins['id']}",
        {"op": "remove", "path": "members", "value": [{"value": temp["id"]}]},
    )
    assert not instance_user(ut).is_site_admin
    assert api.as_(temp_token).get(SETTINGS).status == 404

    # the site-admin group cannot be linked to a team
    team = make_team(api, make_org(api), "admins")[0]
    assert link(api, team, admins["id"]).status == 422
    # an unrelated update keeps the group; an explicit null unlinks it and revokes
    reply = api.patch(SETTINGS, body(paused=True))
    assert reply.data["attributes"]["site-admin-group-scim-id"] == admins["id"]
    api.patch(SETTINGS, body(paused=False))
    reply = api.patch(SETTINGS, body(**{"site-admin-group-scim-id": None}))
    assert reply.status == 200
    assert reply.data["attributes"]["site-admin-group-scim-id"] is None
    assert reply.data["attributes"]["site-admin-group-display-name"] is None
    assert not instance_user(ub).is_site_admin
    # the bootstrap admin, not made admin by SCIM, keeps the flag throughout
    assert api.get(SETTINGS).status == 200


def test_paused_or_disabled_refuses_provisioning_with_403_and_changes_nothing(
    api: Api, idp: Scim
) -> None:
    idp.user("early@example.com")
    assert api.patch(SETTINGS, body(paused=True)).status == 200
    scim_error(idp.post("/Users", {"userName": "late@example.com"}), 403)
    scim_error(idp.get("/Users"), 403)
    scim_error(idp.post("/Groups", {"displayName": "late"}), 403)
    assert idp.get("/ServiceProviderConfig").status == 200  # discovery still answers
    assert api.patch(SETTINGS, body(paused=False)).status == 200
    names = [u["userName"] for u in idp.get("/Users").json["Resources"]]
    assert names == ["early@example.com"]
    assert api.delete(SETTINGS).status == 204
    scim_error(idp.get("/Users"), 401)  # disabling took the tokens
    scim_error(Scim(api, new_token(api).data["attributes"]["token"]).get("/Users"), 403)


def test_discovery_documents(idp: Scim) -> None:
    config = idp.get("/ServiceProviderConfig")
    assert config.status == 200 and config.headers["Content-Type"] == "application/scim+json"
    assert config.json["patch"]["supported"] is True and config.json["bulk"]["supported"] is False
    assert config.json["filter"] == {"supported": True, "maxResults": 200}
    types = idp.get("/ResourceTypes").json
    assert {t["id"]: t["endpoint"] for t in types["Resources"]} == {
        "User": "/Users",
        "Group": "/Groups",
    }
    assert idp.get("/ResourceTypes/User").json["schema"] == USER
    schemas = idp.get("/Schemas").json["Resources"]
    assert {s["id"] for s in schemas} >= {USER, GROUP}
    user_schema = idp.get(f"/Schemas/{USER}").json
    assert any(a["name"] == "userName" and a["required"] for a in user_schema["attributes"])
    scim_error(idp.get("/Schemas/urn:nope"), 404)
    scim_error(idp.get("/ResourceTypes/Nope"), 404)


@pytest.mark.parametrize(
    ("method", "path", "raw"),
    [
        ("POST", "/Users", "[]"),
        ("POST", "/Users", '"text"'),
        ("POST", "/Users", '{"userName": 12}'),
        ("POST", "/Users", '{"userName": "x@y.z", "emails": "x@y.z"}'),
        ("POST", "/Users", '{"userName": "x@y.z", "name": "X"}'),
        ("POST", "/Users", '{"userName": "x@y.z", "active": "maybe"}'),
        ("POST", "/Users", '{"userName": "' + "x" * 300 + '"}'),
        ("POST", "/Groups", '{"displayName": ["x"]}'),
        ("POST", "/Groups", '{"displayName": "g", "members": [{"value": 3}]}'),
        ("PATCH", "/Users/{user}", '{"Operations": []}'),
        ("PATCH", "/Users/{user}", '{"Operations": [{"op": "replace"}]}'),
        (
            "PATCH",
            "/Users/{user}",
            '{"Operations": [{"op": "replace", "path": "emails[type eq]"}]}',
        ),
        ("PATCH", "/Users/{user}", '{"Operations": [{"op": "remove"}]}'),
        ("PATCH", "/Groups/{group}", '{"Operations": [{"op": "add", "path": "members"}]}'),
        ("PATCH", "/Groups/{group}", '{"Operations": [{"op": "remove", "path": "members[x]"}]}'),
        ("PUT", "/Users/{user}", "{}"),
        ("PUT", "/Groups/{group}", "null"),
        ("GET", "/Users?filter=" + "(" * 50, None),
        ("GET", '/Users?filter=userName eq "x" and', None),
        ("GET", "/Users?startIndex=x", None),
    ],
)
def test_bad_input_is_a_scim_4xx_and_changes_nothing(
    idp: Scim, method: str, path: str, raw: str | None
) -> None:
    user = idp.user("solid@example.com")
    group = idp.group("solid", user["id"])
    before = (idp.get("/Users").json, idp.get("/Groups").json)
    path = path.format(user=user["id"], group=group["id"])
    reply = idp.call(method, path, raw=raw) if raw is not None else idp.get(path)
    error = scim_error(reply, reply.status)
    assert 400 <= reply.status < 500, error
    assert (idp.get("/Users").json, idp.get("/Groups").json) == before


@pytest.fixture(autouse=True)
def no_server_error(caplog: pytest.LogCaptureFixture) -> Any:
    """Whatever a test sends, nothing escapes as a 500."""
    yield
    unhandled = [r for r in caplog.records if "unhandled error" in r.getMessage()]
    assert not unhandled, unhandled[0].getMessage()


def test_no_scim_route_answers_5xx_and_every_error_is_a_scim_document(api: Api, idp: Scim) -> None:
    from app import app
    from tests.test_no_server_errors import BODIES, PATH_VALUES

    user = idp.user("walker@example.com")
    idp.group("walkers", user["id"])
    failures = []
    for template, methods in sorted(app.routes.items()):
        if not template.startswith(SCIM):
            continue
        values = [*PATH_VALUES, user["id"]]
        for method in methods:
            for value in values:
                path = template.replace("{scim_id}", value)
                path = path.replace("{name}", value).replace("{schema_id}", value)
                bodies = BODIES if method in ("POST", "PATCH", "PUT") else [""]
                for raw in bodies:
                    reply = idp.call(
                        method,
                        path.removeprefix(SCIM),
                        raw=raw,
                        content_type="application/scim+json; charset=utf-8",
                    )
                    if reply.status >= 500 or (
                        reply.status >= 400 and reply.json.get("schemas") != [ERROR]
                    ):
                        failures.append((method, path[:60], raw[:40], reply.status))
    assert failures == []


def test_the_openapi_document_shows_scim_documents_and_errors() -> None:
    from infrastructure.openapi import generate

    document = generate()
    users = document["paths"]["/scim/v2/Users"]
    assert set(users) == {"get", "post"}
    assert set(users["get"]["responses"]["200"]["content"]) == {"application/scim+json"}
    assert users["post"]["security"] == [{"scimToken": []}]
    conflict = users["post"]["responses"]["409"]["content"]
    assert conflict["application/scim+json"]["schema"] == {"$ref": "#/components/schemas/ScimError"}
    assert users["get"]["responses"]["403"]["description"].startswith("SCIM provisioning")
    shared = document["components"]["responses"]["ScimError401"]["content"]
    assert set(shared) == {"application/scim+json", "application/vnd.api+json"}
    assert document["components"]["schemas"]["ScimError"]["required"] == ["schemas", "status"]
    # the admin routes stay JSON:API
    admin = document["paths"]["/api/v2/admin/scim-settings"]["get"]["responses"]["404"]
    assert admin == {"$ref": "#/components/responses/Error404"}
    mapping = document["paths"]["/api/v2/admin/teams/{team_id}/scim-group-mapping"]
    assert set(mapping) == {"post", "patch", "delete"}


def test_edge_values_are_answered_not_crashed_on(api: Api, idp: Scim) -> None:
    deep = "(" * 600 + 'userName eq "x"' + ")" * 600
    scim_error(idp.get(f"/Users?filter={deep}"), 400, "invalidFilter")
    scim_error(idp.get("/Users?filter=" + "not " * 200 + 'userName eq "x"'), 400, "invalidFilter")
    assert idp.get("/Users?filter=userName%20eq%20%22%22").json["totalResults"] == 0
    assert idp.get("/Groups?filter=externalId%20eq%20%22%22").json["totalResults"] == 0
    long_id = "u" * 3000
    scim_error(idp.get(f"/Users/{long_id}"), 404)
    scim_error(idp.delete(f"/Groups/{long_id}"), 404)
    assert api.get(f"{TOKENS}/{long_id}").status == 404
    assert link(api, long_id, "g").status == 404
    user = idp.user("edge@example.com")
    long_path = "name." + "a" * 600
    scim_error(idp.patch(f"/Users/{user['id']}", {"op": "add", "path": long_path, "value": 1}), 400)
    # an unknown member id in a group's member list is refused, the group unchanged
    group = idp.group("edge", user["id"])
    reply = idp.patch(
        f"/Groups/{group['id']}", {"op": "add", "path": "members", "value": [{"value": long_id}]}
    )
    scim_error(reply, 400)
    assert [m["value"] for m in idp.get(f"/Groups/{group['id']}").json["members"]] == [user["id"]]


def test_site_admin_grants_follow_deactivation_and_group_deletion(api: Api, idp: Scim) -> None:
    from chalicelib.accounts.users.service import find_user_by_name

    # a user made by hand, linked (a site admin allowed it), then made a site admin by hand:
    # SCIM never takes that flag away
    old_id, _ = user_token(api, "oldhand")
    assert api.patch(SETTINGS, body(**{"link-existing-users": True})).status == 200
    boss, old_hand = idp.user("boss@example.com"), idp.user("oldhand@example.test")
    assert instance_id(old_hand) == old_id
    from chalicelib.accounts.users.service import set_site_admin

    set_site_admin(old_id, True)
    bootstrap = find_user_by_name("oldhand")
    admins = idp.group("admins", boss["id"], old_hand["id"])
    assert api.patch(SETTINGS, body(**{"site-admin-group-scim-id": admins["id"]})).status == 200
    ub = instance_id(boss)
    assert instance_user(ub).is_site_admin

    idp.patch(f"/Users/{boss['id']}", {"op": "replace", "path": "active", "value": False})
    assert not instance_user(ub).is_site_admin
    idp.patch(f"/Users/{boss['id']}", {"op": "replace", "path": "active", "value": True})
    assert instance_user(ub).is_site_admin

    assert idp.delete(f"/Groups/{admins['id']}").status == 204
    assert not instance_user(ub).is_site_admin
    assert instance_user(bootstrap.id).is_site_admin
    attributes = api.get(SETTINGS).data["attributes"]
    assert attributes["site-admin-group-scim-id"] is None
    idp.patch(f"/Users/{old_hand['id']}", {"op": "replace", "path": "active", "value": False})
    assert instance_user(bootstrap.id).is_site_admin  # never granted by SCIM


def test_scim_cannot_take_away_the_last_site_admin(api: Api, idp: Scim) -> None:
    """The bootstrap admin steps down and leaves a SCIM-made site admin the only one: SCIM
    deactivating or deleting it, or ending its grant (leaving the site-admin group,
    deleting or unlinking that group, disabling SCIM) is a 422 that changes nothing. SCIM
    used to take the flag (the setter did not check), leaving the site without an admin."""
    from chalicelib.accounts.users import store as users_store
    from chalicelib.core.auth import mint_token

    boss = idp.user("boss@example.com")
    admins = idp.group("admins", boss["id"])
    assert api.patch(SETTINGS, body(**{"site-admin-group-scim-id": admins["id"]})).status == 200
    ub = instance_id(boss)
    boss_token = mint_token("user", ub)[1]
    bootstrap = _admin().id
    reply = api.as_(boss_token).post(f"{ADMIN}/users/{bootstrap}/actions/revoke_admin")
    assert reply.status == 200, reply.json

    def state() -> tuple[Any, ...]:
        user = instance_user(ub)
        return (
            user.is_site_admin,
            bool(user.suspended),
            sorted(t.token_hash for t in tokens_of(ub)),
            idp.get(f"/Users/{boss['id']}").json,
            idp.get(f"/Groups/{admins['id']}").json,
            api.as_(boss_token).get(SETTINGS).data["attributes"],
        )

    before = state()
    for attempt in (
        lambda: idp.patch(
            f"/Users/{boss['id']}", {"op": "replace", "path": "active", "value": False}
        ),
        lambda: idp.put(f"/Users/{boss['id']}", {"userName": "boss@example.com", "active": False}),
        lambda: idp.delete(f"/Users/{boss['id']}"),
        lambda: idp.patch(
            f"/Groups/{admins['id']}",
            {"op": "remove", "path": "members", "value": [{"value": boss["id"]}]},
        ),
        lambda: idp.delete(f"/Groups/{admins['id']}"),
    ):
        error = scim_error(attempt(), 400, "invalidValue")  # SCIM has no 422 (RFC 7644 3.12)
        assert "last site administrator" in error["detail"]
        assert state() == before
    for change in (body(**{"site-admin-group-scim-id": None}), None):
        reply = api.as_(boss_token).call("PATCH" if change else "DELETE", SETTINGS, change)
        assert reply.status == 422, reply.json
        assert "last site administrator" in reply.error["detail"]
        assert state() == before
    assert users_store.admin_count() == 1


def test_a_deactivated_user_cannot_sign_in_with_a_password(api: Api, idp: Scim) -> None:
    """A user SCIM deactivated had its tokens deleted but could still sign in with a
    password it had set (or reset one): deactivation now suspends, which every way in
    refuses (``UserModel.may_sign_in``); reactivation lets the password work again."""
    from chalicelib.accounts import passwords
    from chalicelib.accounts.users.store import UserModel
    from tests.accounts.helpers import PASSWORD, attempt
    from tests.support.web_browser import Browser

    kim = idp.user("kim@example.com")
    UserModel(instance_id(kim)).update(
        actions=[UserModel.password_hash.set(passwords.hash_password(PASSWORD))]
    )
    assert attempt(Browser(api.client), "kim", PASSWORD).status_code == 303
    idp.patch(f"/Users/{kim['id']}", {"op": "replace", "path": "active", "value": False})
    refused = attempt(Browser(api.client), "kim", PASSWORD)
    assert refused.status_code == 401, refused.status_code
    idp.patch(f"/Users/{kim['id']}", {"op": "replace", "path": "active", "value": True})
    assert attempt(Browser(api.client), "kim", PASSWORD).status_code == 303


def test_deactivation_suspends_and_only_scims_suspension_is_lifted(api: Api, idp: Scim) -> None:
    """Deactivating suspends the instance user (as TFE does): no sign-in of any kind
    (``may_sign_in``); reactivating lifts it. A suspension a site admin made stays."""
    kim = idp.user("kim@example.com")
    kim_id = instance_id(kim)
    active = {"op": "replace", "path": "active", "value": True}
    inactive = {"op": "replace", "path": "active", "value": False}
    assert idp.patch(f"/Users/{kim['id']}", inactive).status == 200
    assert instance_user(kim_id).suspended and not instance_user(kim_id).may_sign_in
    assert idp.patch(f"/Users/{kim['id']}", active).status == 200
    assert not instance_user(kim_id).suspended and instance_user(kim_id).may_sign_in

    assert api.post(f"{ADMIN}/users/{kim_id}/actions/suspend").status == 200
    assert idp.patch(f"/Users/{kim['id']}", inactive).status == 200
    assert idp.patch(f"/Users/{kim['id']}", active).status == 200
    assert instance_user(kim_id).suspended  # the site admin's suspension stands
    assert api.post(f"{ADMIN}/users/{kim_id}/actions/unsuspend").status == 200
    assert idp.delete(f"/Users/{kim['id']}").status == 204
    assert instance_user(kim_id).suspended
    # provisioned again: the same instance user, SCIM's suspension lifted
    assert instance_id(idp.user("kim@example.com")) == kim_id
    assert not instance_user(kim_id).suspended
    # an instance user a site admin deleted: SCIM deactivates and deletes its own record
    gone = idp.user("gone@example.com")
    assert api.delete(f"{ADMIN}/users/{instance_id(gone)}").status == 204
    assert idp.patch(f"/Users/{gone['id']}", inactive).status == 200
    assert idp.delete(f"/Users/{gone['id']}").status == 204


# ----- no take-over of accounts SCIM did not provision; go-tfe v1.109.0's error texts -------
# (admin_setting_scim_group_mapping_integration_test.go, admin_setting_scim_integration_test.go,
# ported case by case)


def _admin() -> Any:
    from chalicelib.accounts.users.service import find_user_by_name

    admin = find_user_by_name("admin")
    assert admin is not None and admin.is_site_admin
    return admin


# ----- no take-over of existing accounts ---------------------------------------------------------


def test_a_scim_token_cannot_lock_the_bootstrap_admin_out(api: Api, idp: Scim) -> None:
    """The reported sequence: POST admin@localhost, PATCH its email, PATCH active false."""
    admin = _admin()
    email_before = admin.email
    tokens_before = sorted(t.token_hash for t in tokens_of(admin.id))
    assert tokens_before

    created = idp.post("/Users", {"schemas": [USER], "userName": "admin@localhost"})
    scim_id = created.json.get("id", "admin-was-not-provisioned")
    idp.patch(
        f"/Users/{scim_id}",
        {"op": "replace", "path": "emails", "value": [{"value": "evil@example.com"}]},
    )
    idp.patch(f"/Users/{scim_id}", {"op": "replace", "path": "active", "value": False})

    scim_error(created, 409, "uniqueness")
    after = _admin()
    assert after.email == email_before and after.is_site_admin
    assert sorted(t.token_hash for t in tokens_of(admin.id)) == tokens_before
    assert api.get("/api/v2/account/details").status == 200  # REGISTRY_ADMIN_TOKEN still works
    assert idp.get("/Users").json["totalResults"] == 0
    # nor in another case: ADMIN is admin's username (it made a user "ADMIN" before)
    upper = idp.post("/Users", {"schemas": [USER], "userName": "ADMIN@LOCALHOST"})
    scim_error(upper, 409, "uniqueness")


def test_an_existing_user_is_linked_only_when_a_site_admin_allowed_it(api: Api, idp: Scim) -> None:
    jane_id, jane_token = user_token(api, "jane")  # email jane@example.test, made by hand
    payload = {"schemas": [USER], "userName": "jane@example.test"}
    assert api.get(SETTINGS).data["attributes"]["link-existing-users"] is False

    scim_error(idp.post("/Users", payload), 409, "uniqueness")  # off by default
    assert idp.get("/Users").json["totalResults"] == 0
    assert api.as_(jane_token).get("/api/v2/account/details").status == 200

    reply = api.patch(SETTINGS, body(**{"link-existing-users": True}))
    assert reply.status == 200 and reply.data["attributes"]["link-existing-users"] is True
    assert api.patch(SETTINGS, body(**{"link-existing-users": "yes"})).status == 422
    linked = idp.post("/Users", payload)
    assert linked.status == 201, linked.json
    assert instance_id(linked.json) == jane_id
    # unrelated updates keep the setting
    assert api.patch(SETTINGS, body(paused=False)).data["attributes"]["link-existing-users"]

    # never a site admin SCIM did not make, even with linking allowed
    for name in ("admin@localhost", "admin", "ADMIN@LOCALHOST"):
        scim_error(idp.post("/Users", {"schemas": [USER], "userName": name}), 409, "uniqueness")
    assert _admin().email == "admin@localhost"
    assert api.get("/api/v2/account/details").status == 200


def test_a_user_scim_made_is_linked_again_after_deprovisioning(api: Api, idp: Scim) -> None:
    """Deprovisioned and provisioned again: the same instance user (its history), without
    the admin setting, because SCIM made it."""
    first = idp.user("sam@example.com")
    user_id = instance_id(first)
    assert idp.delete(f"/Users/{first['id']}").status == 204
    again = idp.user("sam@example.com")
    assert instance_id(again) == user_id


# ----- go-tfe: TestAdminSCIMGroupMappings_Create / _Update / _Delete ---------------------------


ALREADY_MAPPED = "conflict\n\nTeam is already linked to a SCIM group"
OWNERS_TEAM = "unprocessable entity\n\nOwners team SCIM linking is not yet supported"
SITE_ADMIN_GROUP = "unprocessable entity\n\nThe site admin group cannot be linked to a team"
NOT_LINKED = "conflict\n\nTeam is not linked to a SCIM group"
NOT_FOUND = "resource not found"


def unlink(api: Api, team_id: str) -> Reply:
    return api.delete(f"{ADMIN}/teams/{team_id}/scim-group-mapping")


def _groups(idp: Scim) -> list[dict[str, Any]]:
    return [idp.group("go-tfe-group-a"), idp.group("go-tfe-group-b")]


def test_go_tfe_scim_group_mappings_create(api: Api, idp: Scim) -> None:
    groups = _groups(idp)
    org = make_org(api)
    names = iter(f"t{i}" for i in range(20))

    def team() -> str:
        return make_team(api, org, next(names))[0]

    for pick in (lambda i: groups[i], lambda _i: groups[0]):  # one-to-one, many-to-one
        for i in range(2):
            t = team()
            assert link(api, t, pick(i)["id"]).status == 204
            assert scim_link(api, t) == (True, pick(i)["displayName"], False)
    relinked = team()  # re-link after delete on the same team
    assert link(api, relinked, groups[0]["id"]).status == 204
    assert unlink(api, relinked).status == 204
    assert link(api, relinked, groups[1]["id"]).status == 204
    assert scim_link(api, relinked)[:2] == (True, groups[1]["displayName"])

    mapped = team()
    assert link(api, mapped, groups[0]["id"]).status == 204
    assert go_tfe_error(link(api, mapped, groups[1]["id"])) == ALREADY_MAPPED
    assert go_tfe_error(link(api, mapped, groups[0]["id"])) == ALREADY_MAPPED  # same group twice
    reply = link(api, mapped, groups[1]["id"])
    assert reply.status == 409 and reply.error["status"] == "409"
    assert go_tfe_error(link(api, team(), "this-scim-group-does-not-exist")) == NOT_FOUND
    assert go_tfe_error(link(api, "this-team-does-not-exist", groups[0]["id"])) == NOT_FOUND
    owners = next(
        t["id"]
        for t in api.get(f"/api/v2/organizations/{make_org(api, 'other-org')}/teams?q=owners").data
        if t["attributes"]["name"] == "owners"
    )
    assert go_tfe_error(link(api, owners, groups[0]["id"])) == OWNERS_TEAM
    plain, admins = team(), idp.group("go-tfe-site-admins")
    assert api.patch(SETTINGS, body(**{"site-admin-group-scim-id": admins["id"]})).status == 200
    assert go_tfe_error(link(api, plain, admins["id"])) == SITE_ADMIN_GROUP
    assert api.patch(SETTINGS, body(**{"site-admin-group-scim-id": None})).status == 200
    assert scim_link(api, plain) == (False, None, False)  # nothing changed by the refusals
    assert scim_link(api, mapped) == (True, groups[0]["displayName"], False)


def test_go_tfe_scim_group_mappings_update_and_delete(api: Api, idp: Scim) -> None:
    group = _groups(idp)[0]
    org = make_org(api)
    names = iter(f"team-{i}" for i in range(20))

    def linked() -> str:
        t = make_team(api, org, next(names))[0]
        assert link(api, t, group["id"]).status == 204
        return t

    t = linked()  # pause, pause again (idempotent), unpause, unpause again
    for paused in (True, True, False, False):
        assert pause(api, t, paused).status == 204
        assert scim_link(api, t)[2] is paused
    spare = make_team(api, org, next(names))[0]
    assert go_tfe_error(pause(api, spare, True)) == NOT_LINKED
    assert go_tfe_error(pause(api, "this-team-does-not-exist", True)) == NOT_FOUND
    was_linked = linked()
    assert unlink(api, was_linked).status == 204
    assert go_tfe_error(pause(api, was_linked, True)) == NOT_LINKED

    # delete: a linked team, a paused one; then the errors
    for paused in (False, True):
        t = linked()
        if paused:
            assert pause(api, t, True).status == 204
        assert unlink(api, t).status == 204
        assert scim_link(api, t) == (False, None, False)
    assert go_tfe_error(unlink(api, spare)) == NOT_LINKED
    assert go_tfe_error(unlink(api, "this-team-does-not-exist")) == NOT_FOUND


# ----- go-tfe: TestAdminSettings_SCIM_Update ---------------------------------------------------


def test_go_tfe_scim_settings_update_subtests_in_sequence(api: Api) -> None:
    """Each subtest enables SCIM, creates a group named "foo" and disables SCIM when done
    (``cleanupSCIMSettings``): disabling drops what SCIM held, so "foo" can be made again."""
    enable_saml(api)

    def provider() -> Scim:
        assert api.patch(SETTINGS, body(enabled=True)).status == 200
        token = new_token(api, description="scim integration test token")
        assert token.status == 201
        return Scim(api, token.data["attributes"]["token"])

    def create_group(idp: Scim, name: str) -> str:
        reply = idp.post("/Groups", {"schemas": [GROUP], "displayName": name})
        assert reply.status == 201, reply.json
        return reply.json["id"]

    # "update site admin group scim id"
    group_id = create_group(provider(), "foo")
    reply = api.patch(SETTINGS, body(**{"site-admin-group-scim-id": group_id}))
    assert reply.status == 200
    assert api.get(SETTINGS).data["attributes"]["site-admin-group-display-name"] == "foo"
    assert (
        api.patch(SETTINGS, body(**{"site-admin-group-scim-id": "this-group-doesn't-exist"})).status
        >= 400
    )
    assert api.delete(SETTINGS).status == 204

    # "link and unlink site admin group"
    idp = provider()
    group_id = create_group(idp, "foo")
    reply = api.patch(SETTINGS, body(**{"site-admin-group-scim-id": group_id}))
    assert reply.status == 200 and reply.data["attributes"]["site-admin-group-scim-id"] == group_id
    reply = api.patch(SETTINGS, body(paused=True))
    assert reply.status == 200 and reply.data["attributes"]["site-admin-group-scim-id"] == group_id
    reply = api.patch(SETTINGS, body(**{"site-admin-group-scim-id": None}))
    assert reply.status == 200
    assert not reply.data["attributes"]["site-admin-group-scim-id"]
    assert not reply.data["attributes"]["site-admin-group-display-name"]
    assert api.delete(SETTINGS).status == 204


def test_disabling_scim_drops_its_tokens_groups_and_links_but_not_users(
    api: Api, idp: Scim
) -> None:
    boss = idp.user("boss@example.com")
    boss_id = instance_id(boss)
    group = idp.group("admins", boss["id"])
    team = make_team(api, make_org(api), "linked")[0]
    other = idp.group("devs", boss["id"])
    assert link(api, team, other["id"]).status == 204
    assert api.patch(SETTINGS, body(**{"site-admin-group-scim-id": group["id"]})).status == 200
    from tests.scim.helpers import instance_user, team_members

    assert instance_user(boss_id).is_site_admin and team_members(api, team) == {boss_id}

    assert api.delete(SETTINGS).status == 204
    attributes = api.get(SETTINGS).data["attributes"]
    assert attributes["site-admin-group-scim-id"] is None
    assert api.get(f"{ADMIN}/scim-tokens").data == []
    assert api.get(f"{ADMIN}/scim-groups").data == []
    assert scim_link(api, team) == (False, None, False)
    assert team_members(api, team) == {boss_id}  # the team keeps its members
    assert not instance_user(boss_id).is_site_admin  # the flag SCIM gave goes with it
    assert instance_user(boss_id).username  # the user itself stays


def test_a_site_admin_linked_before_the_fix_is_left_alone(api: Api, idp: Scim) -> None:
    """Data from before links were refused: a SCIM user linked to the bootstrap admin. SCIM
    changes neither its email nor its tokens (deactivating, deleting)."""
    from chalicelib.core.data.ids import now
    from chalicelib.scim.store import ScimUserModel

    admin = _admin()
    tokens_before = sorted(t.token_hash for t in tokens_of(admin.id))
    moment = now()
    ScimUserModel(
        "legacy-link",
        user_name="admin@localhost",
        user_name_lower="admin@localhost",
        user_id=admin.id,
        active=True,
        attributes={},
        created_at=moment,
        updated_at=moment,
    ).save()
    assert (
        idp.patch(
            "/Users/legacy-link",
            {"op": "replace", "path": "emails", "value": [{"value": "evil@example.com"}]},
        ).status
        == 200
    )
    assert (
        idp.patch("/Users/legacy-link", {"op": "replace", "path": "active", "value": False}).status
        == 200
    )
    assert idp.delete("/Users/legacy-link").status == 204
    assert _admin().email == "admin@localhost"
    assert sorted(t.token_hash for t in tokens_of(admin.id)) == tokens_before
    assert api.get("/api/v2/account/details").status == 200


def test_scim_never_links_a_user_whose_email_is_unconfirmed(api: Api, idp: Scim) -> None:
    """Issue 33: with linking allowed, a SCIM user of the same username and email as an
    account made through an invitation link no mail carried is refused (409), and nothing
    changes; linking works once the address is confirmed."""
    from chalicelib.accounts.users import service as users_service
    from chalicelib.accounts.users.store import UserModel
    from tests.web.helpers import join_unmailed

    make_org(api)
    jane_id = join_unmailed(api, "jane", "jane@example.com")
    assert api.patch(SETTINGS, body(**{"link-existing-users": True})).status == 200
    users = len(users_service.all_users())
    refused = idp.post("/Users", {"schemas": [USER], "userName": "jane@example.com"})
    error = scim_error(refused, 409, "uniqueness")
    assert "not confirmed" in error["detail"]
    assert len(users_service.all_users()) == users
    assert idp.get("/Users").json["totalResults"] == 0
    UserModel(jane_id).update(actions=[UserModel.email_unconfirmed.remove()])  # confirmed
    assert instance_id(idp.user("jane@example.com")) == jane_id


# ----- SCIM attributes of users (go-tfe TestAdminUsers_List, TestUsersReadCurrent) -----------


def test_admin_users_carry_the_scim_attributes_of_users_scim_made(api: Api, idp: Scim) -> None:
    """go-tfe v1.109.0 admin_user_integration_test.go, TestAdminUsers_List "with scim
    attributes": with SCIM on, a user SCIM created is found by ``q`` = its userName, with
    ``scim-username`` = that userName, ``is-scim-managed`` true and ``scim-updated-at``
    within 10 s of now (bounded here by the clock before and after the writes); a SCIM
    write moves it. users_integration_test.go TestUsersReadCurrent "with scim attributes":
    the caller, whom SCIM did not make, reads ``is-scim-managed`` false and no SCIM
    username or time."""
    from datetime import UTC, datetime, timedelta

    before = datetime.now(UTC).replace(microsecond=0)
    made = idp.user("tst-scim-jane@example.com")
    after = datetime.now(UTC) + timedelta(seconds=1)
    listed = api.get("/api/v2/admin/users?q=tst-scim-jane%40example.com")
    assert listed.status == 200 and len(listed.data) == 1
    attributes = listed.data[0]["attributes"]
    assert attributes["scim-username"] == "tst-scim-jane@example.com"
    assert attributes["is-scim-managed"] is True
    assert before <= datetime.fromisoformat(attributes["scim-updated-at"]) <= after

    renamed = idp.put(
        f"/Users/{made['id']}", {"schemas": [USER], "userName": "tst-scim-jane2@example.com"}
    )
    assert renamed.status == 200, renamed.json
    shown = api.get(f"/api/v2/admin/users?q={listed.data[0]['attributes']['username']}")
    assert shown.data[0]["attributes"]["scim-username"] == "tst-scim-jane2@example.com"

    me = api.get("/api/v2/account/details").data["attributes"]
    assert me["is-scim-managed"] is False
    assert me["scim-username"] is None and me["scim-updated-at"] is None


def test_with_scim_off_users_carry_no_scim_attributes(api: Api) -> None:
    """go-tfe v1.109.0 users_integration_test.go, TestUsersReadCurrent "with no scim
    attributes": while SCIM is disabled the API omits every SCIM attribute (go-tfe asserts
    nil, which ``false`` is not); the admin users list too."""
    me = api.get("/api/v2/account/details").data["attributes"]
    admin = api.get("/api/v2/admin/users?q=admin").data[0]["attributes"]
    for attributes in (me, admin):
        for name in ("is-scim-managed", "scim-username", "scim-updated-at"):
            assert name not in attributes, name
