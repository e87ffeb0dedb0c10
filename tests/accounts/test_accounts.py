"""The accounts surface through HTTP: organizations, users, teams, tokens and permissions.

Each test is a scenario a real client (go-tfe, pytfe, terrasnek, the tfe provider) runs,
asserting what those clients read: status codes, JSON:API shapes and the permission model
("not permitted" answers 404, a token problem answers 401).
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest

from tests.accounts.helpers import (
    JSONAPI,
    add_member,
    admin_id,
    assert_error,
    new_user,
    team_id_by_name,
)
from tests.conftest import ADMIN_TOKEN, Api, Reply, doc, make_org, make_team

# ----- meta: ping, discovery, 401 -----------------------------------------------------------


def test_ping_and_discovery_are_public_and_carry_what_clients_read(
    rate_limited: None, api: Api
) -> None:
    anonymous = api.as_(None)
    ping = anonymous.get("/api/v2/ping")
    assert ping.status == 204
    assert ping.headers["TFP-API-Version"]
    assert int(ping.headers["X-RateLimit-Limit"]) > 0
    # go-tfe log.Fatal()s when the reset header is not a float.
    float(ping.headers["X-RateLimit-Reset"])

    discovery = anonymous.get("/.well-known/terraform.json")
    assert discovery.status == 200
    assert discovery.headers["Content-Type"].split(";")[0] == "application/json"
    assert discovery.json["modules.v1"] == "/api/registry/v1/modules/"
    assert discovery.json["tfe.v2"] == "/api/v2/"


def test_missing_garbage_and_revoked_tokens_get_401(api: Api) -> None:
    make_org(api)
    for client in (api.as_(None), api.as_("garbage.atlasv1.nonsense")):
        for path in (
            "/api/v2/organizations",
            "/api/v2/organizations/acme",
            "/api/v2/account/details",
        ):
            assert_error(client.get(path), 401)
        assert_error(client.post("/api/v2/organizations", doc("organizations", name="x")), 401)
    assert api.get("/api/v2/organizations").status == 200  # the admin token itself works
    for header in ("Basic YWRtaW46YWRtaW4=", "Bearer", ADMIN_TOKEN):
        raw = api.client.http.get("/api/v2/organizations", headers={"Authorization": header})
        assert raw.status_code == 401, header
        assert json.loads(raw.body)["errors"][0]["status"] == "401"

    created = api.post(
        "/api/v2/users/" + admin_id(api) + "/authentication-tokens",
        doc("authentication-tokens", description="short-lived"),
    )
    assert created.status == 201, created.json
    temporary = api.as_(created.data["attributes"]["token"])
    assert temporary.get("/api/v2/organizations/acme").status == 200
    assert api.delete(f"/api/v2/authentication-tokens/{created.data['id']}").status == 204
    assert_error(temporary.get("/api/v2/organizations/acme"), 401)
    assert api.get("/api/v2/organizations/acme").status == 200  # other tokens unaffected


# ----- organizations ------------------------------------------------------------------------


def test_create_organization_makes_an_owners_team_with_the_creator(api: Api) -> None:
    reply = api.post("/api/v2/organizations", doc("organizations", name="acme", email="a@b.io"))
    assert reply.status == 201, reply.json
    assert reply.headers["Content-Type"].startswith(JSONAPI)
    assert reply.data["type"] == "organizations"
    assert reply.data["id"] == "acme"
    assert reply.data["attributes"]["email"] == "a@b.io"

    owners = api.get(f"/api/v2/teams/{team_id_by_name(api, 'acme', 'owners')}")
    assert owners.status == 200
    members = [u["id"] for u in owners.data["relationships"]["users"]["data"]]
    assert members == [admin_id(api)]
    assert owners.data["attributes"]["users-count"] == 1

    shown = api.get("/api/v2/organizations/acme")
    assert shown.status == 200
    assert shown.data["attributes"]["name"] == "acme"
    assert shown.data["attributes"]["permissions"]["can-destroy"] is True


def test_create_organization_validation(api: Api) -> None:
    make_org(api, "acme")
    duplicate = api.post("/api/v2/organizations", doc("organizations", name="acme", email="o@x.io"))
    error = assert_error(duplicate, 422)
    assert error["source"]["pointer"] == "/data/attributes/name"

    for bad_name in ("", "has space", "-leading", "x" * 65, "ünïcode"):
        reply = api.post(
            "/api/v2/organizations", doc("organizations", name=bad_name, email="o@x.io")
        )
        assert assert_error(reply, 422)["source"]["pointer"] == "/data/attributes/name", bad_name

    for bad_email in ("", "not-an-email", "a b@c.d"):
        reply = api.post(
            "/api/v2/organizations", doc("organizations", name="fresh", email=bad_email)
        )
        assert assert_error(reply, 422)["source"]["pointer"] == "/data/attributes/email"
    missing_email = api.post("/api/v2/organizations", doc("organizations", name="fresh"))
    assert_error(missing_email, 422)

    for raw in ("null", "", "{not json", "{}", '{"data": null}'):
        reply = api.post("/api/v2/organizations", raw=raw)
        assert 400 <= reply.status < 500, (raw, reply.status, reply.body)
        assert reply.error["status"] == str(reply.status)
    assert api.get("/api/v2/organizations/fresh").status == 404  # nothing half-created


def test_list_organizations_paginates_with_absolute_links(api: Api) -> None:
    for index in range(5):
        make_org(api, f"org-{index}")
    reply = api.get("/api/v2/organizations?page[size]=2&page[number]=2")
    assert reply.status == 200
    assert [o["id"] for o in reply.data] == ["org-2", "org-3"]
    pagination = reply.json["meta"]["pagination"]
    assert pagination["current-page"] == 2
    assert pagination["total-pages"] == 3
    assert pagination["total-count"] == 5
    assert pagination["next-page"] == 3
    assert pagination["prev-page"] == 1
    links = reply.json["links"]
    for name in ("self", "first", "next", "last"):
        assert links[name].startswith("http://") or links[name].startswith("https://"), links
    assert "page%5Bnumber%5D=3" in links["next"] or "page[number]=3" in links["next"]

    # Percent-encoded brackets, as go-tfe sends them, mean the same thing.
    encoded = api.get("/api/v2/organizations?page%5Bsize%5D=2&page%5Bnumber%5D=3")
    assert [o["id"] for o in encoded.data] == ["org-4"]
    assert encoded.json["meta"]["pagination"]["next-page"] is None

    past = api.get("/api/v2/organizations?page[number]=999&page[size]=2")
    assert past.status == 200
    assert past.data == []
    assert past.json["meta"]["pagination"]["current-page"] == 999
    assert past.json["meta"]["pagination"]["total-count"] == 5


def test_update_and_delete_organization(api: Api) -> None:
    make_org(api)
    updated = api.patch("/api/v2/organizations/acme", doc("organizations", email="new@example.com"))
    assert updated.status == 200, updated.json
    assert updated.data["attributes"]["email"] == "new@example.com"
    assert api.get("/api/v2/organizations/acme").data["attributes"]["email"] == "new@example.com"
    assert_error(api.patch("/api/v2/organizations/acme", doc("organizations", email="nope")), 422)

    team_id, team_token = make_team(api, "acme", "devs")
    assert api.delete("/api/v2/organizations/acme", raw="null").status == 204
    assert_error(api.get("/api/v2/organizations/acme"), 404)
    assert_error(api.get(f"/api/v2/teams/{team_id}"), 404)
    # Its teams' tokens went with it.
    assert_error(api.as_(team_token).get("/api/v2/account/details"), 401)
    assert_error(api.delete("/api/v2/organizations/acme"), 404)
    # The name is free again.
    make_org(api)


def test_entitlement_set_enables_the_private_registry(api: Api) -> None:
    make_org(api)
    reply = api.get("/api/v2/organizations/acme/entitlement-set")
    assert reply.status == 200
    assert reply.data["type"] == "entitlement-sets"
    assert reply.data["attributes"]["private-module-registry"] is True
    assert_error(api.get("/api/v2/organizations/ghost/entitlement-set"), 404)


def test_non_admin_cannot_create_organizations_by_default(api: Api) -> None:
    _, bob = new_user(api, "bob")
    reply = bob.post("/api/v2/organizations", doc("organizations", name="bobs", email="b@x.io"))
    assert_error(reply, 404)
    assert_error(api.get("/api/v2/organizations/bobs"), 404)
    listed = bob.get("/api/v2/organizations")
    assert listed.status == 200 and listed.data == []


def test_users_may_create_organizations_when_the_site_allows_it(api: Api) -> None:
    from chalicelib.admin.store import GENERAL_DEFAULTS, write_settings

    write_settings("general", {**GENERAL_DEFAULTS, "limit-user-organization-creation": False})
    _, bob = new_user(api, "bob")
    _, eve = new_user(api, "eve")
    created = bob.post("/api/v2/organizations", doc("organizations", name="bobs", email="b@x.io"))
    assert created.status == 201, created.json
    assert bob.get("/api/v2/organizations/bobs").data["attributes"]["permissions"]["can-destroy"]
    assert [o["id"] for o in bob.get("/api/v2/organizations").data] == ["bobs"]
    assert_error(eve.get("/api/v2/organizations/bobs"), 404)
    assert eve.get("/api/v2/organizations").data == []
    assert bob.delete("/api/v2/organizations/bobs").status == 204


# ----- account details ----------------------------------------------------------------------


def test_account_details_for_user_and_team_tokens(api: Api) -> None:
    me = api.get("/api/v2/account/details")
    assert me.status == 200
    assert me.data["type"] == "users"
    assert me.data["attributes"]["username"] == "admin"
    assert me.data["attributes"]["is-site-admin"] is True

    bob_id, bob = new_user(api, "bob")
    details = bob.get("/api/v2/account/details")
    assert details.data["id"] == bob_id
    assert details.data["attributes"]["username"] == "bob"
    assert details.data["attributes"]["is-site-admin"] is False

    make_org(api)
    _, token = make_team(api, "acme", "ci")
    service = api.as_(token).get("/api/v2/account/details")
    assert service.status == 200
    assert service.data["type"] == "users"
    assert service.data["attributes"]["is-service-account"] is True
    assert service.data["attributes"]["is-site-admin"] is False


# ----- teams --------------------------------------------------------------------------------


def test_team_lifecycle_and_client_dialects(api: Api) -> None:
    make_org(api)
    created = api.post(
        "/api/v2/organizations/acme/teams",
        doc("teams", name="publishers", **{"organization-access": {"manage-modules": True}}),
    )
    assert created.status == 201, created.json
    team = created.data
    assert team["type"] == "teams"
    assert team["attributes"]["organization-access"]["manage-modules"] is True
    assert team["attributes"]["organization-access"]["manage-workspaces"] is False
    assert team["relationships"]["organization"]["data"] == {"id": "acme", "type": "organizations"}

    # terrasnek: data.type "organizations" on team create.
    terrasnek = api.post("/api/v2/organizations/acme/teams", doc("organizations", name="snek"))
    assert terrasnek.status == 201, terrasnek.json
    # pytfe: snake_case attribute names.
    pytfe = api.post(
        "/api/v2/organizations/acme/teams",
        doc("teams", name="py", organization_access={"manage_modules": True}),
    )
    assert pytfe.status == 201, pytfe.json
    assert pytfe.data["attributes"]["organization-access"]["manage-modules"] is True

    assert_error(api.post("/api/v2/organizations/acme/teams", doc("teams", name="py")), 422)
    wrong_type = api.post(
        "/api/v2/organizations/acme/teams",
        doc("teams", name="t2", **{"organization-access": {"manage-modules": 1}}),
    )
    assert_error(wrong_type, 422)

    listed = api.get("/api/v2/organizations/acme/teams?filter[names]=publishers,py")
    assert listed.status == 200
    assert sorted(t["attributes"]["name"] for t in listed.data) == ["publishers", "py"]
    assert listed.json["meta"]["pagination"]["total-count"] == 2
    everything = api.get("/api/v2/organizations/acme/teams")
    assert sorted(t["attributes"]["name"] for t in everything.data) == [
        "owners",
        "publishers",
        "py",
        "snek",
    ]

    shown = api.get(f"/api/v2/teams/{team['id']}")
    assert shown.status == 200 and shown.data["attributes"]["name"] == "publishers"

    patched = api.patch(
        f"/api/v2/teams/{team['id']}",
        doc(
            "teams", **{"organization-access": {"manage-modules": False, "manage-workspaces": True}}
        ),
    )
    assert patched.status == 200, patched.json
    access = patched.data["attributes"]["organization-access"]
    assert access["manage-modules"] is False and access["manage-workspaces"] is True
    again = api.get(f"/api/v2/teams/{team['id']}").data["attributes"]["organization-access"]
    assert again == access

    owners_id = team_id_by_name(api, "acme", "owners")
    assert_error(api.delete(f"/api/v2/teams/{owners_id}"), 422)
    assert api.get(f"/api/v2/teams/{owners_id}").status == 200

    token = api.post(f"/api/v2/teams/{team['id']}/authentication-token")
    team_client = api.as_(token.data["attributes"]["token"])
    assert team_client.get("/api/v2/organizations/acme").status == 200
    assert api.delete(f"/api/v2/teams/{team['id']}").status == 204
    assert_error(api.get(f"/api/v2/teams/{team['id']}"), 404)
    assert_error(team_client.get("/api/v2/organizations/acme"), 401)
    assert_error(api.delete(f"/api/v2/teams/{team['id']}"), 404)


def test_membership_grants_and_revokes_access(api: Api) -> None:
    make_org(api, "alpha")
    make_org(api, "beta")
    bob_id, bob = new_user(api, "bob")
    devs, _ = make_team(api, "alpha", "devs")

    assert_error(bob.get("/api/v2/organizations/alpha"), 404)
    assert add_member(api, devs, "bob").status == 204
    members = api.get(f"/api/v2/teams/{devs}").data["relationships"]["users"]["data"]
    assert [m["id"] for m in members] == [bob_id]

    # A plain member reads alpha, cannot manage it, and knows nothing of beta.
    assert bob.get("/api/v2/organizations/alpha").status == 200
    assert bob.get("/api/v2/organizations/alpha/teams").status == 200
    assert [o["id"] for o in bob.get("/api/v2/organizations").data] == ["alpha"]
    assert_error(bob.get("/api/v2/organizations/beta"), 404)
    assert_error(bob.get("/api/v2/organizations/beta/teams"), 404)
    assert_error(bob.delete("/api/v2/organizations/alpha"), 404)
    assert_error(bob.post("/api/v2/organizations/alpha/teams", doc("teams", name="mine")), 404)
    assert_error(bob.post(f"/api/v2/teams/{devs}/authentication-token"), 404)

    unknown = add_member(api, devs, "nobody")
    assert_error(unknown, 404)

    removed = api.delete(
        f"/api/v2/teams/{devs}/relationships/users", {"data": [{"type": "users", "id": "bob"}]}
    )
    assert removed.status == 204
    assert_error(bob.get("/api/v2/organizations/alpha"), 404)

    # A member of the owners team may do everything, including deleting the organization.
    owners = team_id_by_name(api, "alpha", "owners")
    assert add_member(api, owners, "bob").status == 204
    assert bob.post("/api/v2/organizations/alpha/teams", doc("teams", name="mine")).status == 201
    assert_error(bob.get("/api/v2/organizations/beta"), 404)
    assert bob.delete("/api/v2/organizations/alpha").status == 204
    assert_error(api.get("/api/v2/organizations/alpha"), 404)
    assert bob.get("/api/v2/organizations").data == []


def test_usernames_are_unique_and_found_whatever_their_case(api: Api) -> None:
    from chalicelib.accounts.users.service import create_user, find_user_by_name
    from chalicelib.core.api.errors import Unprocessable

    bob_id, _ = new_user(api, "bob")
    for taken in ("BOB", "Bob", "bob"):
        with pytest.raises(Unprocessable):
            create_user(taken, f"{taken}@example.com")
    assert find_user_by_name("BOB").id == bob_id
    assert find_user_by_name("nobody") is None
    # team membership by username resolves any case, as TFE does
    make_org(api)
    devs, _ = make_team(api, "acme", "devs")
    assert add_member(api, devs, "BOB").status == 204
    members = api.get(f"/api/v2/teams/{devs}").data["relationships"]["users"]["data"]
    assert [m["id"] for m in members] == [bob_id]
    # a claim is no user
    assert_error(api.get("/api/v2/users/username%23bob"), 404)


def test_the_backfill_claims_old_usernames_once(api: Api) -> None:
    """Users written before the claims: the backfill claims their names, idempotently, and
    counts the case-twins it cannot claim."""
    from chalicelib.accounts.users.service import create_user, find_user_by_name
    from chalicelib.accounts.users.store import UserModel
    from chalicelib.core.api.errors import Unprocessable
    from chalicelib.core.data.ids import now
    from infrastructure import backfill

    for user_id, name in (("user-old1", "Carol"), ("user-old2", "dave"), ("user-old3", "DAVE")):
        UserModel(user_id, username=name, email=f"{user_id}@x.io", created_at=now()).save()
    first = backfill.backfill_all()["usernames"]
    assert first["claimed"] == 2 and first["conflicts"] == 1 and first["kept"] >= 1  # admin
    again = backfill.backfill_all()["usernames"]
    assert again["claimed"] == 0 and again["kept"] == first["kept"] + 2
    assert find_user_by_name("carol").id == "user-old1"
    with pytest.raises(Unprocessable):
        create_user("CAROL", "c@x.io")


def test_secret_teams_show_only_to_their_members_and_the_owners(api: Api) -> None:
    """TFE: a secret team is visible to its members, the organization's owners and site
    admins; everyone else never sees it: not listed, not readable (404), not in includes."""
    make_org(api)
    bob_id, bob = new_user(api, "bob")
    carol_id, carol = new_user(api, "carol")
    hidden, hidden_token = make_team(api, "acme", "hidden")  # secret: the default
    shown = api.post(
        "/api/v2/organizations/acme/teams", doc("teams", name="shown", visibility="organization")
    ).data["id"]
    assert add_member(api, shown, "bob", "carol").status == 204
    assert add_member(api, hidden, "carol").status == 204

    def names(client: Api, query: str = "") -> list[str]:
        reply = client.get(f"/api/v2/organizations/acme/teams{query}")
        assert reply.status == 200, reply.json
        assert reply.json["meta"]["pagination"]["total-count"] == len(reply.data)
        return sorted(t["attributes"]["name"] for t in reply.data)

    assert names(bob) == ["shown"]  # neither "hidden" nor the (secret) owners team
    assert names(bob, "?filter[names]=hidden") == []
    assert names(carol) == ["hidden", "shown"]
    assert names(api) == ["hidden", "owners", "shown"]
    assert_error(bob.get(f"/api/v2/teams/{hidden}"), 404)
    assert carol.get(f"/api/v2/teams/{hidden}").status == 200
    assert api.as_(hidden_token).get(f"/api/v2/teams/{hidden}").status == 200

    # includes: carol's membership lists her teams, but not the secret one to bob
    reply = bob.get(f"/api/v2/teams/{shown}?include=users,organization-memberships")
    assert reply.status == 200
    teams_of = {
        m["relationships"]["user"]["data"]["id"]: {
            t["id"] for t in m["relationships"]["teams"]["data"]
        }
        for m in reply.json["included"]
        if m["type"] == "organization-memberships"
    }
    assert teams_of == {bob_id: {shown}, carol_id: {shown}}
    listed = bob.get("/api/v2/organizations/acme/teams?include=organization-memberships")
    assert hidden not in json.dumps(listed.json)
    as_carol = carol.get(f"/api/v2/teams/{shown}?include=organization-memberships").json
    assert hidden in json.dumps(as_carol["included"])
    as_owner = api.get(f"/api/v2/teams/{shown}?include=organization-memberships").json
    assert hidden in json.dumps(as_owner["included"])


def test_owners_team_keeps_a_member(api: Api) -> None:
    make_org(api)
    owners = team_id_by_name(api, "acme", "owners")
    reply = api.delete(
        f"/api/v2/teams/{owners}/relationships/users", {"data": [{"type": "users", "id": "admin"}]}
    )
    assert_error(reply, 422)
    assert api.get(f"/api/v2/teams/{owners}").data["attributes"]["users-count"] == 1


# ----- tokens -------------------------------------------------------------------------------


def test_team_token_is_shown_once_rotates_and_revokes(api: Api) -> None:
    make_org(api)
    team = api.post(
        "/api/v2/organizations/acme/teams",
        doc("teams", name="ci", **{"organization-access": {"manage-modules": True}}),
    )
    team_id = team.data["id"]
    path = f"/api/v2/teams/{team_id}/authentication-token"

    first = api.post(path, doc("authentication-tokens", description="first"))
    assert first.status == 201, first.json
    assert first.data["type"] == "authentication-tokens"
    secret = first.data["attributes"]["token"]
    assert isinstance(secret, str) and len(secret) > 20
    assert api.as_(secret).get("/api/v2/organizations/acme").status == 200
    assert api.as_(secret).get(f"/api/v2/teams/{team_id}").status == 200

    shown = api.get(path)
    assert shown.status == 200
    assert shown.data["id"] == first.data["id"]
    assert shown.data["attributes"]["token"] is None
    assert shown.data["attributes"]["description"] == "first"

    second = api.post(path)  # go-tfe may send no body at all
    assert second.status == 201, second.json
    assert_error(api.as_(secret).get("/api/v2/organizations/acme"), 401)
    renewed = api.as_(second.data["attributes"]["token"])
    assert renewed.get("/api/v2/organizations/acme").status == 200

    assert api.delete(path).status == 204
    assert_error(renewed.get("/api/v2/organizations/acme"), 401)
    assert_error(api.get(path), 404)
    assert_error(api.delete(path), 404)


def test_organization_token_is_scoped_to_its_organization(api: Api) -> None:
    make_org(api, "alpha")
    make_org(api, "beta")
    path = "/api/v2/organizations/alpha/authentication-token"
    assert_error(api.get(path), 404)
    created = api.post(path, raw="null")
    assert created.status == 201, created.json
    org_client = api.as_(created.data["attributes"]["token"])

    assert org_client.get("/api/v2/organizations/alpha").status == 200
    assert org_client.get("/api/v2/organizations/alpha/teams").status == 200
    assert_error(org_client.get("/api/v2/organizations/beta"), 404)
    assert_error(org_client.get("/api/v2/organizations/beta/teams"), 404)
    assert [o["id"] for o in org_client.get("/api/v2/organizations").data] == ["alpha"]
    created_org = org_client.post(
        "/api/v2/organizations", doc("organizations", name="gamma", email="g@x.io")
    )
    assert_error(created_org, 404)
    assert org_client.get("/api/v2/account/details").data["attributes"]["is-service-account"]

    shown = api.get(path)
    assert shown.status == 200
    assert shown.data["id"] == created.data["id"]
    assert shown.data["attributes"]["token"] is None

    assert api.delete(path).status == 204
    assert_error(org_client.get("/api/v2/organizations/alpha"), 401)
    assert_error(api.get(path), 404)


def test_user_tokens_are_private_to_their_user(api: Api) -> None:
    bob_id, bob = new_user(api, "bob")
    eve_id, eve = new_user(api, "eve")
    path = f"/api/v2/users/{bob_id}/authentication-tokens"

    created = bob.post(path, doc("authentication-tokens", description="laptop"))
    assert created.status == 201, created.json
    token_id = created.data["id"]
    laptop = api.as_(created.data["attributes"]["token"])
    assert laptop.get("/api/v2/account/details").data["id"] == bob_id

    listed = bob.get(path)
    assert listed.status == 200
    assert token_id in [t["id"] for t in listed.data]
    assert all(t["attributes"]["token"] is None for t in listed.data)
    assert "pagination" in listed.json["meta"]
    shown = bob.get(f"/api/v2/authentication-tokens/{token_id}")
    assert shown.status == 200 and shown.data["attributes"]["description"] == "laptop"

    # Another user sees nothing and can touch nothing.
    assert_error(eve.get(path), 404)
    assert_error(eve.post(path, doc("authentication-tokens", description="mine now")), 404)
    assert_error(eve.get(f"/api/v2/authentication-tokens/{token_id}"), 404)
    assert_error(eve.delete(f"/api/v2/authentication-tokens/{token_id}"), 404)
    assert token_id not in [
        t["id"] for t in eve.get(f"/api/v2/users/{eve_id}/authentication-tokens").data
    ]
    assert laptop.get("/api/v2/account/details").status == 200

    # Team and organization tokens cannot manage user tokens.
    make_org(api)
    _, team_token = make_team(api, "acme", "ci")
    assert_error(api.as_(team_token).get(path), 404)

    assert bob.delete(f"/api/v2/authentication-tokens/{token_id}").status == 204
    assert_error(laptop.get("/api/v2/account/details"), 401)
    assert_error(bob.get(f"/api/v2/authentication-tokens/{token_id}"), 404)


def test_expired_user_token_is_rejected(api: Api) -> None:
    bob_id, bob = new_user(api, "bob")
    path = f"/api/v2/users/{bob_id}/authentication-tokens"
    past = (datetime.now(UTC) - timedelta(minutes=1)).strftime("%Y-%m-%dT%H:%M:%S.000Z")
    future = (datetime.now(UTC) + timedelta(days=1)).strftime("%Y-%m-%dT%H:%M:%S.000Z")

    expired = bob.post(
        path, doc("authentication-tokens", description="old", **{"expired-at": past})
    )
    assert expired.status == 201, expired.json
    assert expired.data["attributes"]["expired-at"] == past
    assert_error(api.as_(expired.data["attributes"]["token"]).get("/api/v2/account/details"), 401)

    valid = bob.post(path, doc("authentication-tokens", **{"expired-at": future}))
    assert valid.status == 201, valid.json
    assert api.as_(valid.data["attributes"]["token"]).get("/api/v2/account/details").status == 200

    bad = bob.post(path, doc("authentication-tokens", **{"expired-at": "tomorrow"}))
    assert assert_error(bad, 422)["source"]["pointer"] == "/data/attributes/expired-at"


def test_other_organizations_teams_and_tokens_are_invisible(api: Api) -> None:
    """An owner of one organization learns nothing about another one's teams or tokens."""
    make_org(api, "alpha")
    make_org(api, "beta")
    beta_team, beta_token = make_team(api, "beta", "secret-team")
    _, alice = new_user(api, "alice")
    assert add_member(api, team_id_by_name(api, "alpha", "owners"), "alice").status == 204
    alpha_team, alpha_token = make_team(alice, "alpha", "ci", manage_modules=True)

    for client in (alice, api.as_(alpha_token)):
        assert_error(client.get(f"/api/v2/teams/{beta_team}"), 404)
        assert_error(client.patch(f"/api/v2/teams/{beta_team}", doc("teams", name="mine")), 404)
        assert_error(client.delete(f"/api/v2/teams/{beta_team}"), 404)
        assert_error(client.get(f"/api/v2/teams/{beta_team}/authentication-token"), 404)
        assert_error(client.post(f"/api/v2/teams/{beta_team}/authentication-token"), 404)
        assert_error(client.delete(f"/api/v2/teams/{beta_team}/authentication-token"), 404)
        assert_error(add_member(client, beta_team, "alice"), 404)
        assert_error(client.get("/api/v2/organizations/beta/authentication-token"), 404)
        assert_error(client.post("/api/v2/organizations/beta/authentication-token"), 404)
        assert_error(client.get("/api/v2/organizations/beta/teams"), 404)
        assert_error(client.post("/api/v2/organizations/beta/teams", doc("teams", name="x")), 404)
        assert_error(
            client.patch("/api/v2/organizations/beta", doc("organizations", email="x@x.io")), 404
        )
        assert_error(client.delete("/api/v2/organizations/beta"), 404)

    # None of that changed anything in beta.
    assert api.as_(beta_token).get("/api/v2/organizations/beta").status == 200
    assert api.get(f"/api/v2/teams/{beta_team}").data["attributes"]["name"] == "secret-team"
    assert api.get("/api/v2/organizations/beta").status == 200
    # A team token of a non-owners team cannot manage its own organization's teams either.
    assert_error(api.as_(alpha_token).delete(f"/api/v2/teams/{alpha_team}"), 404)
    assert_error(api.as_(alpha_token).post(f"/api/v2/teams/{alpha_team}/authentication-token"), 404)


def test_organization_token_endpoints_ignore_other_owners_tokens(api: Api) -> None:
    """Organization names share the token-owner key space with user and team ids: an
    organization named like a user id must not see or revoke that user's tokens."""
    bob_id, bob = new_user(api, "bob")
    bob_tokens = f"/api/v2/users/{bob_id}/authentication-tokens"
    (bobs_token,) = [t["id"] for t in bob.get(bob_tokens).data]
    make_org(api, bob_id)
    path = f"/api/v2/organizations/{bob_id}/authentication-token"
    assert_error(api.get(path), 404)
    assert_error(api.delete(path), 404)
    assert bob.get("/api/v2/account/details").status == 200

    org_token = api.post(path)
    assert org_token.status == 201
    assert bob.get("/api/v2/account/details").status == 200  # creating did not revoke bob's
    assert api.get(path).data["id"] == org_token.data["id"]
    assert [t["id"] for t in bob.get(bob_tokens).data] == [bobs_token]

    assert api.delete(f"/api/v2/organizations/{bob_id}").status == 204
    assert bob.get("/api/v2/account/details").status == 200


# ----- robustness ---------------------------------------------------------------------------


def test_chalice_errors_are_jsonapi(api: Api) -> None:
    unsupported = api.post("/api/v2/organizations", raw="name=acme", content_type="text/plain")
    assert_error(unsupported, 415)
    assert api.get("/api/v2/organizations/acme").status == 404

    not_allowed = api.call("PUT", "/api/v2/organizations", doc("organizations", name="x"))
    assert_error(not_allowed, 405)

    # Both JSON media types are accepted, also on body-less requests.
    plain = api.post(
        "/api/v2/organizations",
        doc("organizations", name="acme", email="a@b.io"),
        content_type="application/json",
    )
    assert plain.status == 201, plain.json


JUNK_BODIES = [
    "",
    "null",
    "[]",
    '{"data": 5}',
    '{"data": []}',
    '{"data": {"attributes": {"name": 5}}}',
    '{"data": {"type": 5, "attributes": {"name": "x", "email": 5}}}',
    '{"data": {"attributes": 5}}',
    '{"data": {"attributes": {"organization-access": 5, "expired-at": 5, "description": 5}}}',
    '{"data": [5, {"type": "users"}, {"type": "users", "id": 5}]}',
    '{"data": [{"type": "users", "id": ["bob"]}]}',
    "{not json",
    '"just a string"',
]


def test_junk_bodies_never_cause_a_500(api: Api) -> None:
    make_org(api)
    team_id, _ = make_team(api, "acme", "devs")
    bob_id, _ = new_user(api, "bob")
    endpoints = [
        ("POST", "/api/v2/organizations"),
        ("PATCH", "/api/v2/organizations/acme"),
        ("POST", "/api/v2/organizations/acme/teams"),
        ("PATCH", f"/api/v2/teams/{team_id}"),
        ("POST", f"/api/v2/teams/{team_id}/relationships/users"),
        ("DELETE", f"/api/v2/teams/{team_id}/relationships/users"),
        ("POST", f"/api/v2/teams/{team_id}/authentication-token"),
        ("POST", "/api/v2/organizations/acme/authentication-token"),
        ("POST", f"/api/v2/users/{bob_id}/authentication-tokens"),
    ]
    failures = []
    for method, path in endpoints:
        for raw in JUNK_BODIES:
            reply = api.call(method, path, raw=raw)
            if reply.status >= 500 or (reply.status >= 400 and not _is_error_doc(reply)):
                failures.append((method, path, raw, reply.status, reply.body[:200]))
    assert failures == []
    # The organization survived the barrage.
    assert api.get("/api/v2/organizations/acme").data["attributes"]["email"] == "o@x.io"


def _is_error_doc(reply: Reply) -> bool:
    try:
        errors = json.loads(reply.body)["errors"]
    except (ValueError, KeyError, TypeError):
        return False
    return bool(errors) and errors[0].get("status") == str(reply.status)


@pytest.mark.parametrize("raw", ["", "null"])
def test_bodyless_token_actions_accept_empty_and_null(api: Api, raw: str) -> None:
    make_org(api)
    team_id, _ = make_team(api, "acme", "devs")
    assert api.post(f"/api/v2/teams/{team_id}/authentication-token", raw=raw).status == 201
    assert api.delete(f"/api/v2/teams/{team_id}/authentication-token", raw=raw).status == 204
    assert api.delete(f"/api/v2/teams/{team_id}", raw=raw).status == 204


def test_a_users_email_is_shown_only_to_them_and_site_admins(api: Api) -> None:
    alice_id, alice = new_user(api, "alice")
    _, bob = new_user(api, "bob")
    assert alice.get(f"/api/v2/users/{alice_id}").data["attributes"]["email"] == "alice@example.com"
    assert api.get(f"/api/v2/users/{alice_id}").data["attributes"]["email"] == "alice@example.com"
    seen_by_bob = bob.get(f"/api/v2/users/{alice_id}").data["attributes"]
    assert seen_by_bob["username"] == "alice" and seen_by_bob["email"] == ""


def test_team_token_rotation_revokes_by_key_not_by_index(api: Api) -> None:
    """The old token is found through the hash kept on the team, so rotation never depends
    on the (eventually consistent) by-owner index."""
    from chalicelib.accounts.teams.store import TeamModel

    make_org(api, "acme")
    team_id, first = make_team(api, "acme", "ci")
    assert TeamModel.get(team_id).token_hash is not None
    second = api.post(f"/api/v2/teams/{team_id}/authentication-token").data["attributes"]["token"]
    assert api.as_(first).get("/api/v2/organizations/acme").status == 401
    assert api.as_(second).get("/api/v2/organizations/acme").status == 200
    assert api.delete(f"/api/v2/teams/{team_id}/authentication-token").status == 204
    assert api.as_(second).get("/api/v2/organizations/acme").status == 401
    assert TeamModel.get(team_id).token_hash is None


def test_additional_team_tokens_by_id_are_for_owners_only(api: Api) -> None:
    """pytfe's multi-token endpoints: extra team tokens revoke nothing, are listed per
    organization, and only the organization's owners see or delete them by id."""
    from chalicelib.accounts.teams.store import TeamModel

    make_org(api, "acme")
    make_org(api, "other")
    team_id, legacy = make_team(api, "acme", "ci", manage_modules=True)
    extra = api.post(
        f"/api/v2/teams/{team_id}/authentication-tokens",
        {"data": {"type": "authentication-tokens", "attributes": {"description": "nightly"}}},
    )
    assert extra.status == 201, extra.json
    extra_id, extra_secret = extra.data["id"], extra.data["attributes"]["token"]
    assert api.as_(legacy).get("/api/v2/organizations/acme").status == 200
    assert api.as_(extra_secret).get("/api/v2/organizations/acme").status == 200
    listed = api.get("/api/v2/organizations/acme/team-tokens").data
    assert {t["id"] for t in listed} >= {extra_id}
    assert all(t["attributes"]["token"] is None for t in listed)
    assert (
        api.get(f"/api/v2/authentication-tokens/{extra_id}").data["attributes"]["description"]
        == "nightly"
    )

    _, outsider = make_team(api, "other", "owners-elsewhere", manage_modules=True)
    for caller in (outsider, legacy):  # another organization; a non-owner team token
        assert api.as_(caller).get(f"/api/v2/authentication-tokens/{extra_id}").status == 404
        assert api.as_(caller).delete(f"/api/v2/authentication-tokens/{extra_id}").status == 404
    assert api.as_(outsider).get("/api/v2/organizations/acme/team-tokens").status == 404

    assert api.delete(f"/api/v2/authentication-tokens/{extra_id}").status == 204
    assert api.as_(extra_secret).get("/api/v2/organizations/acme").status == 401
    # Deleting the legacy token by id also clears the team's record of it.
    legacy_id = TeamModel.get(team_id).token_id
    assert api.delete(f"/api/v2/authentication-tokens/{legacy_id}").status == 204
    assert TeamModel.get(team_id).token_hash is None
    assert api.as_(legacy).get("/api/v2/organizations/acme").status == 401


def test_an_instance_trusts_a_verified_token_for_the_cache_window_only(
    api: Api, monkeypatch: pytest.MonkeyPatch
) -> None:
    """core/auth.py keeps verified tokens a few seconds per instance. Revoking through this
    instance takes effect at once; a revocation made elsewhere (another Lambda instance:
    here, the item deleted behind the cache's back) takes effect when the window ends."""
    from chalicelib.core import auth

    clock = [1000.0]
    monkeypatch.setattr(auth.time, "monotonic", lambda: clock[0])
    path = f"/api/v2/users/{admin_id(api)}/authentication-tokens"

    def new_token() -> tuple[str, Api]:
        created = api.post(path, doc("authentication-tokens", description="cache"))
        assert created.status == 201, created.json
        return created.data["id"], api.as_(created.data["attributes"]["token"])

    token_id, client = new_token()
    assert client.get("/api/v2/account/details").status == 200  # verified and remembered
    assert api.delete(f"/api/v2/authentication-tokens/{token_id}").status == 204
    assert_error(client.get("/api/v2/account/details"), 401)  # forgotten here at once

    token_id, client = new_token()
    assert client.get("/api/v2/account/details").status == 200
    item = next(iter(auth.TokenModel.by_id.query(token_id)))
    auth.TokenModel._get_connection().delete_item(item.token_hash)  # bypasses Model.delete
    clock[0] += 4.9
    assert client.get("/api/v2/account/details").status == 200  # still within the window
    clock[0] += 0.2
    assert_error(client.get("/api/v2/account/details"), 401)
