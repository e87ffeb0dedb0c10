"""Site administration of users and organizations (/api/v2/admin/users and
/api/v2/admin/organizations), and module sharing across organizations.

Cases ported from go-tfe's admin_user_integration_test.go and
admin_organization_integration_test.go where they apply here."""

from __future__ import annotations

from typing import Any

import pytest

from chalicelib.accounts.teams import service as teams_service
from chalicelib.accounts.tokens import service as tokens_service
from chalicelib.accounts.tokens import store as tokens_store
from chalicelib.accounts.users import service as users_service
from chalicelib.accounts.users import store as users_store
from chalicelib.core.auth import Principal, verified
from chalicelib.core.settings import get_settings
from tests.admin.helpers import admin_id, make_user
from tests.conftest import Api, doc, make_org, make_team
from tests.modules.helpers import V1, create_module, publish

USERS = "/api/v2/admin/users"
ORGS = "/api/v2/admin/organizations"


def cold() -> None:
    """Another instance, or this one after the token cache's window."""
    verified.clear()
    users_store._users.clear()


def user_snapshot() -> list[tuple[str, bool, bool]]:
    return [
        (u.username, bool(u.is_site_admin), bool(u.suspended)) for u in users_service.all_users()
    ]


# ----- who may call --------------------------------------------------------------------------


def every_route(user_id: str, org: str) -> list[tuple[str, str, Any]]:
    consumers = {"data": [{"type": "organizations", "id": org}]}
    return [
        ("GET", USERS, None),
        ("DELETE", f"{USERS}/{user_id}", None),
        *(
            ("POST", f"{USERS}/{user_id}/actions/{action}", None)
            for action in (
                "suspend",
                "unsuspend",
                "grant_admin",
                "revoke_admin",
                "disable_two_factor",
            )
        ),
        ("GET", ORGS, None),
        ("GET", f"{ORGS}/{org}", None),
        ("PATCH", f"{ORGS}/{org}", doc("organizations", **{"is-disabled": True})),
        ("DELETE", f"{ORGS}/{org}", None),
        ("GET", f"{ORGS}/{org}/relationships/module-consumers", None),
        ("PATCH", f"{ORGS}/{org}/relationships/module-consumers", consumers),
        ("PUT", f"{ORGS}/{org}/module-consumers", partnerships([])),
    ]


def test_only_site_admins_reach_the_admin_people_routes(api: Api):
    make_org(api, "acme")
    make_org(api, "beta")
    user_id, user_token = make_user("someone")
    _, team_token = make_team(api, "acme", "owners-like", manage_modules=True)
    before = user_snapshot()
    for caller in (user_token, team_token):
        for method, path, body in every_route(user_id, "acme"):
            reply = api.as_(caller).call(method, path, body)
            assert reply.status == 404, (method, path, reply.json)
    for method, path, body in every_route(user_id, "acme"):
        assert api.as_(None).call(method, path, body).status == 401, (method, path)
    assert user_snapshot() == before
    assert api.get(f"{ORGS}/acme").data["attributes"]["is-disabled"] is False


def test_the_hosted_edition_has_no_admin_people_routes(api: Api, hosted: None):
    assert api.get(USERS).status == 404
    assert api.get(ORGS).status == 404


# ----- users ---------------------------------------------------------------------------------


def test_list_users_searches_filters_includes_and_pages(api: Api):
    make_org(api, "acme")
    alice, _ = make_user("alice")
    make_user("bob", admin=True)
    make_user("carol")
    team_id, _ = make_team(api, "acme", "devs")
    api.post(
        f"/api/v2/teams/{team_id}/relationships/users",
        {"data": [{"type": "users", "id": "alice"}]},
    )
    names = [u["attributes"]["username"] for u in api.get(USERS).data]
    assert names == ["admin", "alice", "bob", "carol"]
    # q: the start of a username, or a whole email address, any case (read on keys)
    assert [u["id"] for u in api.get(f"{USERS}?q=ALI").data] == [alice]
    assert [u["id"] for u in api.get(f"{USERS}?q=Alice@Example.COM").data] == [alice]
    assert api.get(f"{USERS}?q=lice").data == []  # not a substring search
    assert api.get(f"{USERS}?q=example.com").data == []
    assert [u["attributes"]["username"] for u in api.get(f"{USERS}?q=a").data] == [
        "admin",
        "alice",
    ]
    matched = api.get(f"{USERS}?q=a&filter%5Badmin%5D=false")
    assert [u["id"] for u in matched.data] == [alice]
    assert matched.json["meta"]["pagination"]["total-count"] == 1
    admins = api.get(f"{USERS}?filter%5Badmin%5D=true").data
    assert sorted(u["attributes"]["username"] for u in admins) == ["admin", "bob"]
    assert all(u["attributes"]["is-admin"] for u in admins)
    others = api.get(f"{USERS}?filter%5Badmin%5D=false").data
    assert sorted(u["attributes"]["username"] for u in others) == ["alice", "carol"]
    assert api.get(f"{USERS}?filter%5Bsuspended%5D=true").data == []
    # include=organizations
    reply = api.get(f"{USERS}?q=alice&include=organizations")
    (user,) = reply.data
    assert user["relationships"]["organizations"]["data"] == [
        {"type": "organizations", "id": "acme"}
    ]
    assert [i["id"] for i in reply.json["included"]] == ["acme"]
    attributes = user["attributes"]
    assert attributes["two-factor"] == {"enabled": False, "verified": False}
    assert attributes["is-suspended"] is False and attributes["is-service-account"] is False
    # pagination
    page = api.get(f"{USERS}?page%5Bsize%5D=3&page%5Bnumber%5D=2")
    assert [u["attributes"]["username"] for u in page.data] == ["carol"]
    assert page.json["meta"]["pagination"]["total-count"] == 4


def _page_reads(api: Api, query: str) -> tuple[int, str, list[str]]:
    from bench.reads import counting_reads

    with counting_reads() as counted:
        reply = api.get(f"{USERS}?{query}")
    assert reply.status == 200, reply.body
    names = [u["attributes"]["username"] for u in reply.data]
    return counted.total_calls, counted.detail(), names


def test_a_user_list_page_reads_its_page_not_the_table(api: Api, monkeypatch: pytest.MonkeyPatch):
    """A page costs the same DynamoDB calls with 4 users and with 150 (a Query of the
    user directory index, one BatchGetItem, the kept count), never a Scan; filters and a
    username prefix read the index's entries, not the users table. The per-instance caches
    (the token's, SCIM's and the site's settings) last the whole test, so no count depends
    on how fast the requests run."""

    monkeypatch.setenv("REGISTRY_TOKEN_CACHE_SECONDS", "3600")
    monkeypatch.setenv("REGISTRY_SETTINGS_CACHE_SECONDS", "3600")  # a slow machine's minutes
    get_settings.cache_clear()
    queries = (
        "page%5Bsize%5D=3",
        "page%5Bsize%5D=3&page%5Bnumber%5D=2",
        "q=us&page%5Bsize%5D=3",
        "filter%5Badmin%5D=true",
        "filter%5Bsuspended%5D=false&page%5Bsize%5D=3",
        "q=user007@example.com",
    )
    for name in ("user001", "user002", "user007"):
        make_user(name)
    api.get(USERS)  # warm: the admin's token is verified and cached
    few = {q: _page_reads(api, q) for q in queries}
    for number in range(8, 155):
        users_service.create_user(f"user{number:03}", f"user{number:03}@example.com")
    api.get(USERS)  # warm again (the token cache's window may have passed)
    many = {q: _page_reads(api, q) for q in queries}
    for query in queries:
        assert few[query][0] == many[query][0], (query, few[query], many[query])
        assert "Scan" not in many[query][1], (query, many[query])
    assert many["page%5Bsize%5D=3"][2] == ["admin", "user001", "user002"]
    assert many["page%5Bsize%5D=3&page%5Bnumber%5D=2"][2] == ["user007", "user008", "user009"]
    assert many["q=user007@example.com"][2] == ["user007"]
    assert many["filter%5Badmin%5D=true"][2] == ["admin"]
    total = api.get(f"{USERS}?page%5Bsize%5D=1").json["meta"]["pagination"]["total-count"]
    assert total == 151


def test_the_backfill_lists_users_made_before_the_directory(api: Api):
    """Users written before the directory index (no ``directory``/``username_key``) are
    missing from the list until ``python -m infrastructure.backfill``, which keys them and
    sets the kept count; a second run changes nothing."""
    from chalicelib.core.data import lists
    from chalicelib.core.data.ids import now
    from infrastructure.backfill import backfill_all

    old = users_store.UserModel(
        "user-old", username="Zed", email="zed@example.com", created_at=now()
    )
    old.save()
    lists.CountModel(users_store.USER_DIRECTORY, lists.ALL).delete()
    assert "Zed" not in [u["attributes"]["username"] for u in api.get(USERS).data]
    report = backfill_all()["user directory"]
    assert report["listed"] == 1 and report["counted"] == 2
    listed = api.get(USERS)
    assert [u["attributes"]["username"] for u in listed.data] == ["admin", "Zed"]
    assert listed.json["meta"]["pagination"]["total-count"] == 2
    assert api.get(f"{USERS}?q=z").data[0]["id"] == "user-old"
    again = backfill_all()["user directory"]
    assert again["listed"] == 0 and again["kept"] == 2


def test_bad_filters_are_422_with_the_parameter(api: Api):
    for name in ("filter%5Badmin%5D", "filter%5Bsuspended%5D"):
        reply = api.get(f"{USERS}?{name}=maybe")
        assert reply.status == 422, reply.json
        assert reply.error["source"]["parameter"].startswith("filter[")
    reply = api.get(f"{ORGS}?filter%5Bmodule_producer%5D=yes")
    assert reply.status == 422
    assert reply.error["source"]["parameter"] == "filter[module_producer]"


def test_suspend_refuses_the_users_tokens_and_unsuspend_restores_them(api: Api):
    make_org(api, "acme")
    user_id, token = make_user("alice")
    assert api.as_(token).get("/api/v2/account/details").status == 200
    reply = api.post(f"{USERS}/{user_id}/actions/suspend")
    assert reply.status == 200, reply.json
    assert reply.data["attributes"]["is-suspended"] is True
    # this instance forgot the token at once; another one after its cache window
    assert api.as_(token).get("/api/v2/account/details").status == 401
    cold()
    refused = api.as_(token).get("/api/v2/account/details")
    assert refused.status == 401
    assert "suspended" in refused.error["detail"]
    assert [u["id"] for u in api.get(f"{USERS}?filter%5Bsuspended%5D=true").data] == [user_id]
    # a token a site admin mints for the suspended user is refused too
    _, minted = tokens_service.create_user_token(
        Principal("user", admin_id(), None), user_id, None, None
    )
    assert api.as_(minted).get("/api/v2/account/details").status == 401
    reply = api.post(f"{USERS}/{user_id}/actions/unsuspend")
    assert reply.status == 200 and reply.data["attributes"]["is-suspended"] is False
    cold()
    for secret in (token, minted):
        assert api.as_(secret).get("/api/v2/account/details").status == 200


def test_a_suspended_users_web_session_stops_at_once(api: Api):
    from chalicelib.core.auth import hash_token, principal_for_hash

    user_id, token = make_user("alice")
    assert principal_for_hash(hash_token(token)) is not None
    api.post(f"{USERS}/{user_id}/actions/suspend")
    cold()
    assert principal_for_hash(hash_token(token)) is None
    api.post(f"{USERS}/{user_id}/actions/unsuspend")
    assert principal_for_hash(hash_token(token)) is not None


def test_grant_and_revoke_admin(api: Api):
    user_id, token = make_user("alice")
    assert api.as_(token).get(USERS).status == 404
    reply = api.post(f"{USERS}/{user_id}/actions/grant_admin")
    assert reply.status == 200 and reply.data["attributes"]["is-admin"] is True
    cold()
    assert api.as_(token).get(USERS).status == 200
    reply = api.post(f"{USERS}/{user_id}/actions/revoke_admin")
    assert reply.status == 200 and reply.data["attributes"]["is-admin"] is False
    cold()
    assert api.as_(token).get(USERS).status == 404


def test_disable_two_factor_answers_the_user_unchanged(api: Api):
    user_id, _ = make_user("alice")
    reply = api.post(f"{USERS}/{user_id}/actions/disable_two_factor")
    assert reply.status == 200
    assert reply.data["id"] == user_id
    assert reply.data["attributes"]["two-factor"] == {"enabled": False, "verified": False}


def test_unknown_users_are_404(api: Api):
    for action in ("suspend", "unsuspend", "grant_admin", "revoke_admin", "disable_two_factor"):
        assert api.post(f"{USERS}/user-nobody/actions/{action}").status == 404
    assert api.delete(f"{USERS}/user-nobody").status == 404
    assert api.delete(f"{USERS}/username%23admin").status == 404  # a claim is no user


def test_the_last_site_admin_cannot_be_removed_demoted_or_suspended(api: Api):
    me = admin_id()
    before = user_snapshot()
    for method, path in (
        ("DELETE", f"{USERS}/{me}"),
        ("POST", f"{USERS}/{me}/actions/revoke_admin"),
        ("POST", f"{USERS}/{me}/actions/suspend"),
    ):
        reply = api.call(method, path)
        assert reply.status == 422, (path, reply.json)
        assert "last site administrator" in reply.error["detail"]
    assert user_snapshot() == before
    assert api.get(USERS).status == 200  # still an admin, still in
    # with a second active admin, the first may go
    other, other_token = make_user("second", admin=True)
    assert api.post(f"{USERS}/{me}/actions/suspend").status == 200
    # the only active admin left is protected (a suspended one does not count)
    assert api.as_(other_token).post(f"{USERS}/{other}/actions/revoke_admin").status == 422
    assert api.as_(other_token).post(f"{USERS}/{me}/actions/unsuspend").status == 200


def test_the_last_admin_rule_is_one_transaction_on_a_kept_count(api: Api):
    """Deleting, suspending or demoting an admin reads no list of users (no Scan, no Query:
    it used to query the user directory, then write): the user's change and the kept count
    of active site admins go in one TransactWriteItems, flat with the number of users."""
    from bench.reads import counting_reads

    for n in range(30):
        make_user(f"plain{n:02d}")
    other, _ = make_user("second", admin=True)
    assert users_store.admin_count() == 2
    with counting_reads() as counted:
        assert api.post(f"{USERS}/{other}/actions/revoke_admin").status == 200
    assert counted.calls.get("Scan", 0) == 0 and counted.calls.get("Query", 0) == 0
    assert counted.calls["TransactWriteItems"] == 1, counted.detail()
    assert users_store.admin_count() == 1


def test_every_setter_keeps_the_last_site_admin(api: Api):
    """The rule is the setters' own, not their callers' (SCIM and the accounts service
    called them unchecked): demoting, suspending or deleting the last active site admin
    straight through the service is a 422 that changes nothing."""
    from chalicelib.core.api.errors import Unprocessable

    me = admin_id()
    before = user_snapshot(), sorted(t.token_hash for t in tokens_store.owned_tokens("user", me))
    for change in (
        lambda: users_service.set_site_admin(me, False),
        lambda: users_service.set_suspended(me, True),
        lambda: users_service.delete_user(users_service.get_user(me)),
    ):
        with pytest.raises(Unprocessable) as refused:
            change()
        assert refused.value.status == 422
        assert "last site administrator" in refused.value.detail
    assert (
        user_snapshot(),
        sorted(t.token_hash for t in tokens_store.owned_tokens("user", me)),
    ) == before
    assert users_store.admin_count() == 1
    assert api.get(USERS).status == 200  # still an admin, its token still works


def test_two_demotions_that_both_read_first_leave_one_admin(
    api: Api, monkeypatch: pytest.MonkeyPatch
):
    """Two site admins demote each other at the same moment: each setter call reads its
    user before either writes (the second runs whole between the first one's read and its
    write). Only one passes; the other is a 422 that changes nothing. A check that reads
    who else is an admin, then writes, lets both pass and leaves the site with none."""
    from chalicelib.core.api.errors import Unprocessable

    me = admin_id()
    other, _ = make_user("second", admin=True)
    outcomes: dict[str, int] = {}

    def demote(user_id: str) -> None:
        try:
            users_service.set_site_admin(user_id, False)
            outcomes[user_id] = 200
        except Unprocessable as refused:
            outcomes[user_id] = refused.status

    real_get = users_store.UserModel.get.__func__  # type: ignore[attr-defined]

    def get(cls: Any, key: Any, *args: Any, **kwargs: Any) -> Any:
        item = real_get(cls, key, *args, **kwargs)
        if key == me and other not in outcomes:
            demote(other)  # the other demotion, between this one's read and its write
        return item

    monkeypatch.setattr(users_store.UserModel, "get", classmethod(get))
    demote(me)
    if other not in outcomes:  # a setter that read nothing: the second call in turn
        demote(other)
    monkeypatch.undo()
    assert outcomes == {other: 200, me: 422}
    assert [(u.username, bool(u.is_site_admin)) for u in users_service.all_users()] == [
        ("admin", True),
        ("second", False),
    ]
    assert users_store.admin_count() == 1


def test_the_count_of_active_admins_is_derived_once_for_existing_data(api: Api):
    """Data from before the kept count has no count item: the backfill (or the first change
    that needs it) counts the active site admins once (a suspended one does not count) and
    never overwrites a count that exists. The item is no user."""
    from chalicelib.core.api.errors import Unprocessable
    from infrastructure.backfill import backfill_all

    second, _ = make_user("second", admin=True)
    third, _ = make_user("third", admin=True)
    users_service.set_suspended(third, True)
    counter = users_store.AdminCountModel(users_store.ADMIN_COUNT_KEY)
    counter.delete()
    assert backfill_all()["site admins"] == {"counted": 2}
    assert backfill_all()["site admins"] == {"kept": 2}

    counter.delete()  # the first change derives it
    users_service.set_site_admin(second, False)
    assert users_store.admin_count() == 1
    with pytest.raises(Unprocessable):
        users_service.set_site_admin(admin_id(), False)
    counter.delete()  # a new site admin counts itself once the count is derived
    make_user("fourth", admin=True)
    assert users_store.admin_count() == 2
    users_service.set_suspended(third, False)
    assert users_store.admin_count() == 3

    assert api.delete(f"{USERS}/{users_store.ADMIN_COUNT_KEY.replace('#', '%23')}").status == 404
    assert "count#active-site-admins" not in [u.id for u in users_service.all_users()]
    listed = api.get(USERS)
    assert listed.json["meta"]["pagination"]["total-count"] == 4


def test_delete_user_removes_tokens_memberships_and_username(api: Api):
    make_org(api, "acme")
    user_id, token = make_user("alice")
    team_id, _ = make_team(api, "acme", "devs")
    api.post(
        f"/api/v2/teams/{team_id}/relationships/users",
        {"data": [{"type": "users", "id": "alice"}]},
    )
    assert api.delete(f"{USERS}/{user_id}").status == 204
    cold()
    assert api.as_(token).get("/api/v2/account/details").status == 401
    assert user_id not in (teams_service.find_team(team_id).user_ids or set())
    assert users_service.find_user_by_name("alice") is None
    users_service.create_user("alice", "new@example.com")  # the name is free again


# ----- organizations -------------------------------------------------------------------------


def test_list_show_update_and_filter_organizations(api: Api):
    make_org(api, "acme")
    make_org(api, "beta")
    assert [o["id"] for o in api.get(ORGS).data] == ["acme", "beta"]
    assert [o["id"] for o in api.get(f"{ORGS}?q=BET").data] == ["beta"]
    page = api.get(f"{ORGS}?page%5Bsize%5D=1&page%5Bnumber%5D=2")
    assert [o["id"] for o in page.data] == ["beta"]
    shown = api.get(f"{ORGS}/acme?include=owners")
    assert shown.status == 200
    attributes = shown.data["attributes"]
    assert attributes["notification-email"] == "o@x.io"
    assert attributes["access-beta-tools"] is False and attributes["is-disabled"] is False
    owners = shown.data["relationships"]["owners"]["data"]
    assert [o["id"] for o in owners] == [admin_id()]
    assert [i["id"] for i in shown.json["included"]] == [admin_id()]
    changes = {
        "access-beta-tools": True,
        "is-disabled": True,
        "terraform-build-worker-apply-timeout": "1h30m",
        "terraform-build-worker-plan-timeout": "45m",
    }
    reply = api.patch(f"{ORGS}/acme", doc("organizations", **changes))
    assert reply.status == 200, reply.json
    for name, value in changes.items():
        assert reply.data["attributes"][name] == value
        assert api.get(f"{ORGS}/acme").data["attributes"][name] == value
    assert api.get(f"{ORGS}?filter%5Bmodule_producer%5D=true").data == []
    api.patch(f"{ORGS}/beta", doc("organizations", **{"global-module-sharing": True}))
    producers = api.get(f"{ORGS}?filter%5Bmodule_producer%5D=true").data
    assert [o["id"] for o in producers] == ["beta"]
    assert producers[0]["attributes"]["global-module-sharing"] is True


def test_go_tfe_admin_organizations_update(api: Api):
    """go-tfe admin_organization_integration_test.go, TestAdminOrganizations_Update "fetches
    and updates organization": access-beta-tools true, global-module-sharing false,
    is-disabled false, both worker timeouts "24h", terraform-worker-sudo-enabled true, each
    echoed back, and workspace-limit nil by default; then global-module-sharing and
    is-disabled true with workspace-limit 42; then both false with workspace-limit 0 (0, not
    nil). go-tfe v1.109.0's AdminOrganization also names the timeouts ``apply-timeout`` and
    ``plan-timeout``: sent under those names they are the same two values, shown under both;
    the two names of one timeout given different values are a 422 that changes nothing."""
    make_org(api, "acme")
    assert api.get(f"{ORGS}/acme").data["attributes"]["workspace-limit"] is None
    first = {
        "access-beta-tools": True,
        "global-module-sharing": False,
        "is-disabled": False,
        "apply-timeout": "24h",
        "plan-timeout": "24h",
        "terraform-worker-sudo-enabled": True,
    }
    reply = api.patch(f"{ORGS}/acme", doc("organizations", **first))
    assert reply.status == 200, reply.json
    attributes = reply.data["attributes"]
    for name, value in first.items():
        assert attributes[name] == value, name
    assert attributes["terraform-build-worker-apply-timeout"] == "24h"
    assert attributes["terraform-build-worker-plan-timeout"] == "24h"
    assert attributes["workspace-limit"] is None
    for limit, flag in ((42, True), (0, False)):
        changes = {"global-module-sharing": flag, "is-disabled": flag, "workspace-limit": limit}
        reply = api.patch(f"{ORGS}/acme", doc("organizations", **changes))
        assert reply.status == 200, reply.json
        assert {k: reply.data["attributes"][k] for k in changes} == changes

    before = api.get(f"{ORGS}/acme").data
    both = {"plan-timeout": "1h", "terraform-build-worker-plan-timeout": "2h", "is-disabled": True}
    reply = api.patch(f"{ORGS}/acme", doc("organizations", **both))
    assert (
        reply.status == 422 and reply.error["source"]["pointer"] == "/data/attributes/plan-timeout"
    )
    assert api.get(f"{ORGS}/acme").data == before
    same = {"plan-timeout": "90m", "terraform-build-worker-plan-timeout": "90m"}
    reply = api.patch(f"{ORGS}/acme", doc("organizations", **same))
    assert reply.status == 200 and reply.data["attributes"]["plan-timeout"] == "90m"


def test_bad_organization_updates_are_422_and_change_nothing(api: Api):
    make_org(api, "acme")
    make_org(api, "beta")
    before = api.get(f"{ORGS}/acme").data
    for attributes, pointer in (
        ({"is-disabled": "sometimes"}, "/data/attributes/is-disabled"),
        (
            {"terraform-build-worker-apply-timeout": "soon", "is-disabled": True},
            "/data/attributes/terraform-build-worker-apply-timeout",
        ),
    ):
        reply = api.patch(f"{ORGS}/acme", doc("organizations", **attributes))
        assert reply.status == 422, reply.json
        assert reply.error["source"]["pointer"] == pointer
    consumers = f"{ORGS}/acme/relationships/module-consumers"
    for body, pointer in (
        ({"data": [{"type": "organizations", "id": "nowhere"}]}, "/data/0/id"),
        ({"data": [{"type": "organizations", "id": "acme"}]}, "/data/0/id"),
        ({"data": [{"type": "teams", "id": "beta"}]}, "/data/0/type"),
        ({"data": {"type": "organizations", "id": "beta"}}, "/data"),
        ({"data": [{"type": "organizations", "id": "beta"}] * 101}, "/data"),
    ):
        reply = api.patch(consumers, body)
        assert reply.status == 422, (body, reply.json)
        assert reply.error["source"]["pointer"] == pointer
    assert api.get(f"{ORGS}/acme").data == before
    assert api.get(consumers).data == []
    assert api.get(f"{ORGS}/nowhere").status == 404
    assert api.patch(f"{ORGS}/nowhere", doc("organizations", **{"is-disabled": True})).status == 404


def test_admin_delete_organization_runs_the_cascade(api: Api):
    make_org(api, "acme")
    _, team_token = make_team(api, "acme", "devs")
    assert api.delete(f"{ORGS}/acme").status == 204
    assert api.get(f"{ORGS}/acme").status == 404
    assert api.get("/api/v2/organizations/acme").status == 404
    cold()
    assert api.as_(team_token).get("/api/v2/organizations/acme").status == 401
    assert api.delete(f"{ORGS}/acme").status == 404


# ----- module sharing ------------------------------------------------------------------------


@pytest.fixture
def producer(api: Api) -> Api:
    """acme publishes vpc/aws 1.0.0; beta and gamma are other organizations."""
    make_org(api, "acme")
    create_module(api, "vpc", "aws")
    publish(api, "1.0.0")
    make_org(api, "beta")
    make_org(api, "gamma")
    return api


def reads(api: Api, token: str) -> bool:
    versions = api.as_(token).get(f"{V1}/acme/vpc/aws/versions").status
    download = api.as_(token).get(f"{V1}/acme/vpc/aws/1.0.0/download").status
    assert (versions == 200) == (download == 204), (versions, download)
    return versions == 200


def share(api: Api, *consumers: str) -> None:
    body = {"data": [{"type": "organizations", "id": name} for name in consumers]}
    reply = api.patch(f"{ORGS}/acme/relationships/module-consumers", body)
    assert reply.status == 200, reply.json
    assert [o["id"] for o in reply.data] == sorted(consumers)


def test_module_consumers_read_the_producers_modules_only_while_shared(producer: Api):
    api = producer
    _, beta = make_team(api, "beta", "readers")
    _, gamma = make_team(api, "gamma", "readers")
    _, user_token = make_user("bea")
    team_id = next(
        t.id
        for t in teams_service.list_teams(Principal("user", admin_id(), None), "beta", None)
        if t.name == "readers"
    )
    teams_service.change_membership(Principal("user", admin_id(), None), team_id, ["bea"], add=True)
    assert not reads(api, beta) and not reads(api, user_token)
    share(api, "beta")
    assert reads(api, beta) and reads(api, user_token)
    assert not reads(api, gamma)
    consumers = api.get(f"{ORGS}/acme/relationships/module-consumers").data
    assert [o["id"] for o in consumers] == ["beta"]
    share(api)
    assert not reads(api, beta) and not reads(api, user_token)


def partnerships(external_ids: list[str]) -> dict[str, Any]:
    attributes = {"module-consuming-organization-ids": external_ids}
    return {"data": {"type": "module-partnerships", "attributes": attributes}}


def test_the_deprecated_module_sharing_api_names_consumers_by_external_id(producer: Api):
    """TFE's Admin Module Sharing API, as terrasnek's ``admin_module_sharing`` calls it
    (PATCH; TFE documents PUT): the consumers by ``external-id``, answered as
    ``module-partnerships``; an unknown id or too many is a 422 that changes nothing."""
    api = producer
    _, beta = make_team(api, "beta", "readers")
    ids = {name: api.get(f"{ORGS}/{name}").data["attributes"]["external-id"] for name in ORGS_}
    reply = api.patch(f"{ORGS}/acme/module-consumers", partnerships([ids["beta"]]))
    assert reply.status == 200, reply.json
    (partnership,) = reply.data
    assert partnership["type"] == "module-partnerships"
    assert partnership["attributes"] == {
        "consuming-organization-id": ids["beta"],
        "consuming-organization-name": "beta",
        "producing-organization-id": ids["acme"],
        "producing-organization-name": "acme",
    }
    assert reads(api, beta)
    unknown = api.call(
        "PUT", f"{ORGS}/acme/module-consumers", partnerships([ids["gamma"], "org-nope"])
    )
    assert unknown.status == 422, unknown.json
    pointer = unknown.json["errors"][0]["source"]["pointer"]
    assert pointer == "/data/attributes/module-consuming-organization-ids/1"
    too_many = api.call("PUT", f"{ORGS}/acme/module-consumers", partnerships([ids["gamma"]] * 101))
    assert too_many.status == 422, too_many.json
    consumers = api.get(f"{ORGS}/acme/relationships/module-consumers").data
    assert [o["id"] for o in consumers] == ["beta"]  # both refusals changed nothing
    emptied = api.call("PUT", f"{ORGS}/acme/module-consumers", partnerships([]))
    assert emptied.status == 200 and emptied.data == []
    assert not reads(api, beta)


ORGS_ = ("acme", "beta", "gamma")


def test_global_module_sharing_serves_every_organization(producer: Api):
    api = producer
    _, gamma = make_team(api, "gamma", "readers")
    _, loner = make_user("loner")  # belongs to no organization
    reply = api.patch(f"{ORGS}/acme", doc("organizations", **{"global-module-sharing": True}))
    assert reply.status == 200 and reply.data["attributes"]["global-module-sharing"] is True
    assert reads(api, gamma)
    assert not reads(api, loner)
    api.patch(f"{ORGS}/acme", doc("organizations", **{"global-module-sharing": False}))
    assert not reads(api, gamma)


def test_sharing_costs_one_read_and_only_for_outsiders(producer: Api):
    """A consumer's download reads the producer's sharing settings: one GetItem more than
    a member's; a member's stays as test_protocol's hot path measures it."""
    from bench.reads import counting_reads

    api = producer
    _, member = make_team(api, "acme", "readers")
    _, consumer = make_team(api, "beta", "readers")
    share(api, "beta")
    path = f"{V1}/acme/vpc/aws/1.0.0/download"
    counts = {}
    for name, token in (("member", member), ("consumer", consumer)):
        api.as_(token).get(path)  # warm
        with counting_reads() as counted:
            assert api.as_(token).get(path).status == 204
        counts[name] = counted.total_calls
    assert counts["consumer"] == counts["member"] + 1, counts


def test_a_deleted_consumers_name_does_not_inherit_the_sharing(producer: Api):
    api = producer
    share(api, "beta", "gamma")
    assert api.delete("/api/v2/organizations/beta").status == 204
    consumers = api.get(f"{ORGS}/acme/relationships/module-consumers").data
    assert [o["id"] for o in consumers] == ["gamma"]
    make_org(api, "beta")  # someone takes the name again
    _, newcomer = make_team(api, "beta", "readers")
    assert not reads(api, newcomer)


# ----- disabled organizations -------------------------------------------------------------


def disable(api: Api, org: str, flag: bool) -> None:
    reply = api.patch(f"{ORGS}/{org}", doc("organizations", **{"is-disabled": flag}))
    assert reply.status == 200, reply.json
    assert reply.data["attributes"]["is-disabled"] is flag


def test_a_disabled_organization_refuses_its_members_and_tokens(producer: Api):
    """``is-disabled``: its members, team and organization tokens get a 403 naming it on
    its API and on the registry protocol (another instance within the token cache's window:
    ``cold``); site admins still read it and enable it again, which restores everything."""
    from chalicelib.accounts.organizations.store import _disabled

    api = producer
    _, team_token = make_team(api, "acme", "readers")
    org_token = api.post("/api/v2/organizations/acme/authentication-token", raw="null")
    member_id, member_token = make_user("member")
    api.post(
        f"/api/v2/teams/{make_team(api, 'acme', 'devs')[0]}/relationships/users",
        {"data": [{"type": "users", "id": "member"}]},
    )
    callers = {
        "team": api.as_(team_token),
        "organization": api.as_(org_token.data["attributes"]["token"]),
        "member": api.as_(member_token),
    }
    paths = ("/api/v2/organizations/acme", "/api/v2/organizations/acme/registry-modules")
    for caller in callers.values():
        assert reads(api, caller.token)
    assert [o["id"] for o in callers["member"].get("/api/v2/organizations").data] == ["acme"]
    assert len(callers["member"].get("/api/v2/organization-memberships").data) == 1

    disable(api, "acme", True)
    for flush in (False, True):
        if flush:  # another instance, or this one after the window
            cold()
            _disabled.clear()
        for name, caller in callers.items():
            for path in (
                *paths,
                f"{V1}/acme/vpc/aws/versions",
                f"{V1}/acme/vpc/aws/1.0.0/download",
            ):
                reply = caller.get(path)
                assert reply.status == 403, (name, path, reply.status)
                assert "'acme' is disabled" in str(reply.json), (name, path, reply.json)
    assert callers["member"].get("/api/v2/organizations").data == []
    own = callers["member"].get("/api/v2/organization-memberships")
    assert own.status == 200 and own.data == []  # its memberships are left out, not a 403
    # a site admin still reads it, on the admin API and the organization's own
    assert api.get(f"{ORGS}/acme").data["attributes"]["is-disabled"] is True
    assert api.get("/api/v2/organizations/acme").status == 200
    assert api.get(f"{V1}/acme/vpc/aws/versions").status == 200

    disable(api, "acme", False)
    for caller in callers.values():
        assert reads(api, caller.token)
        assert caller.get(paths[0]).status == 200
    assert member_id


def test_a_disabled_producer_shares_nothing(producer: Api):
    share(producer, "beta")
    _, consumer = make_team(producer, "beta", "readers")
    assert reads(producer, consumer)
    disable(producer, "acme", True)
    assert not reads(producer, consumer)


def test_the_disabled_check_adds_no_call_to_the_hot_path(producer: Api):
    """The registry protocol's hot path reads what it read before: warm, nothing more (the
    flag is known); cold, the organization item rides in the same BatchGetItem."""
    from bench.reads import counting_reads
    from chalicelib.accounts.organizations.store import _disabled

    api = producer
    _, team_token = make_team(api, "acme", "readers")
    member_id, member_token = make_user("member")
    api.post(
        f"/api/v2/teams/{make_team(api, 'acme', 'devs')[0]}/relationships/users",
        {"data": [{"type": "users", "id": "member"}]},
    )
    path = f"{V1}/acme/vpc/aws/1.0.0/download"
    for token in (team_token, member_token):
        for is_cold, most in ((False, 2), (True, 3)):
            api.as_(token).get(path)  # warm
            if is_cold:
                cold()
                _disabled.clear()
            with counting_reads() as counted:
                assert api.as_(token).get(path).status == 204
            assert counted.total_calls <= most, (is_cold, counted.detail())
    assert member_id


# ----- people invited by email (go-tfe's createOrganizationMembership) ------------------------


def test_go_tfe_an_invited_person_is_a_user_to_site_admins(api: Api):
    """go-tfe v1.109.0 admin_user_integration_test.go, with helper_test.go's
    createOrganizationMembership, which invites a new ``<random>@tfe.local`` and reads the
    membership's User from the answer (no ``include`` asked): its email
    (TestAdminUsers_List, _Delete) and its two-factor (TestAdminUsers_Disable2FA reads
    ``member.User.TwoFactor.Enabled``). TestAdminUsers_List "query by username or email"
    then lists ``q`` = that email: one user, that email, page 1. TestAdminUsers_Delete
    deletes that user by id: the same list is then empty (total 0), and deleting
    ``non-existing-user-id`` is an error. Here the person has no user until they accept:
    deleting them withdraws their invitations. An existing user invited is listed once."""
    from tests.accounts.helpers import invite_body

    make_org(api, "acme")
    memberships = "/api/v2/organizations/acme/organization-memberships"
    email = "k3x9q2@tfe.local"
    invited = api.post(memberships, invite_body(email))
    assert invited.status == 201, invited.json
    user_id = invited.data["relationships"]["user"]["data"]["id"]
    included = {(i["type"], i["id"]): i["attributes"] for i in invited.json["included"]}
    user = included[("users", user_id)]
    assert user["email"] == email and user["username"] == ""
    assert user["two-factor"] == {"enabled": False, "verified": False}

    listed = api.get(f"{USERS}?q={email}")
    assert [(u["id"], u["attributes"]["email"]) for u in listed.data] == [(user_id, email)]
    pagination = listed.json["meta"]["pagination"]
    assert (pagination["current-page"], pagination["total-count"]) == (1, 1)
    assert api.get(f"{USERS}?q={email}&filter%5Badmin%5D=true").data == []

    assert api.delete(f"{USERS}/{user_id}").status == 204
    gone = api.get(f"{USERS}?q={email}")
    assert gone.data == [] and gone.json["meta"]["pagination"]["total-count"] == 0
    assert api.get(f"{memberships}?filter%5Bstatus%5D=invited").data == []
    assert api.delete(f"{USERS}/non-existing-user-id").status == 404

    jane = users_service.create_user("jane", "jane@example.com")
    again = api.post(memberships, invite_body("jane@example.com"))
    assert again.status == 201
    shown = {(i["type"], i["id"]): i["attributes"] for i in again.json["included"]}
    assert shown[("users", jane.id)]["username"] == "jane"
    assert [u["id"] for u in api.get(f"{USERS}?q=jane@example.com").data] == [jane.id]
