"""The organization's publishing policy through the API: ``GET``/``PATCH
/api/v2/organizations/:org/registry-policy`` (a ``registry-policies`` singleton), read by the
organization's members and tokens, changed by its owners only; every bound checked before the
write; what is saved is what ``trust.policy.policy_of`` (ingest's and the scan's question)
reads."""

from __future__ import annotations

import pytest

from chalicelib.trust.policy import MAX_IGNORED_RULES, Policy, policy_of
from tests.accounts.helpers import add_member, new_user, team_id_by_name
from tests.conftest import Api, doc, make_org, make_team

POLICY = "/api/v2/organizations/acme/registry-policy"
DEFAULTS = {
    "block-severity": "none",
    "ignored-rules": [],
    "require-readme": False,
    "holds-versions": False,
    "updated-at": None,
}


def policy_doc(**attributes: object) -> dict:
    return doc("registry-policies", **attributes)


@pytest.fixture
def acme(api: Api) -> Api:
    make_org(api, "acme")
    return api


def test_the_defaults_until_an_owner_saves_one_and_what_ingest_reads(acme: Api) -> None:
    shown = acme.get(POLICY)
    assert shown.status == 200, shown.json
    assert shown.data["type"] == "registry-policies" and shown.data["id"] == "acme"
    assert shown.data["attributes"] == DEFAULTS
    assert shown.data["relationships"]["organization"]["data"] == {
        "type": "organizations",
        "id": "acme",
    }
    assert policy_of("acme") == Policy()

    saved = acme.patch(
        POLICY,
        policy_doc(**{"block-severity": "HIGH", "ignored-rules": ["AVD-AWS-0086", "CKV_AWS_20"]}),
    )
    assert saved.status == 200, saved.json
    attrs = saved.data["attributes"]
    assert attrs["block-severity"] == "high" and attrs["holds-versions"] is True
    assert attrs["ignored-rules"] == ["AVD-AWS-0086", "CKV_AWS_20"]
    assert attrs["require-readme"] is False and attrs["updated-at"]
    assert acme.get(POLICY).data == saved.data
    assert policy_of("acme") == Policy("high", frozenset({"AVD-AWS-0086", "CKV_AWS_20"}), False)

    # An attribute left out keeps its value; [] clears the list; no type (go-tfe's
    # singletons) is accepted.
    body = {"data": {"attributes": {"require-readme": True, "ignored-rules": []}}}
    again = acme.patch(POLICY, body)
    assert again.status == 200, again.json
    assert policy_of("acme") == Policy("high", frozenset(), True)
    none = acme.patch(POLICY, policy_doc(**{"block-severity": "none"}))
    assert none.data["attributes"]["holds-versions"] is True  # the README rule still holds
    assert policy_of("acme") == Policy("none", frozenset(), True)
    # Another organization's policy is its own.
    make_org(acme, "other")
    assert policy_of("other") == Policy()


@pytest.mark.parametrize(
    ("attributes", "pointer"),
    [
        ({"block-severity": "unknown"}, "/data/attributes/block-severity"),
        ({"block-severity": "severe"}, "/data/attributes/block-severity"),
        ({"block-severity": 3}, "/data/attributes/block-severity"),
        ({"block-severity": "x" * 300}, "/data/attributes/block-severity"),
        ({"ignored-rules": "AVD-AWS-0086"}, "/data/attributes/ignored-rules"),
        ({"ignored-rules": ["ok-1", "has space"]}, "/data/attributes/ignored-rules/1"),
        ({"ignored-rules": [""]}, "/data/attributes/ignored-rules/0"),
        ({"ignored-rules": ["r" * 129]}, "/data/attributes/ignored-rules/0"),
        (
            {"ignored-rules": [f"R-{i}" for i in range(MAX_IGNORED_RULES + 1)]},
            "/data/attributes/ignored-rules",
        ),
        ({"require-readme": "yes"}, "/data/attributes/require-readme"),
    ],
)
def test_a_bad_value_is_a_422_naming_it_that_changes_nothing(
    acme: Api, attributes: dict, pointer: str
) -> None:
    before = acme.patch(POLICY, policy_doc(**{"block-severity": "critical"})).data
    reply = acme.patch(POLICY, policy_doc(**{"block-severity": "low", **attributes}))
    assert reply.status == 422, reply.json
    assert reply.error["source"]["pointer"].startswith(pointer), reply.error
    assert acme.get(POLICY).data == before


def test_the_bounds_themselves_are_accepted(acme: Api) -> None:
    rules = [f"AVD-AWS-{i:04d}" for i in range(MAX_IGNORED_RULES - 4)] + ["r" * 128]
    reply = acme.patch(POLICY, policy_doc(**{"ignored-rules": rules + rules[:3]}))
    assert reply.status == 200, reply.json  # 100 ids sent, 97 different
    assert reply.data["attributes"]["ignored-rules"] == sorted(rules)  # repeats counted once


def test_members_read_it_owners_change_it_everyone_else_is_refused(acme: Api) -> None:
    """Readers: the organization's members (any team), its team and organization tokens.
    Writers: its owners (and site admins). A manage-modules team, a reader, the
    organization token, another organization's owner: 404, and nothing changes; no token:
    401."""
    _, owner = new_user(acme, "olga")
    assert add_member(acme, team_id_by_name(acme, "acme", "owners"), "olga").status in (200, 204)
    readers_team, reader_token = make_team(acme, "acme", "readers")
    _, publisher = make_team(acme, "acme", "ci", manage_modules=True)
    _, member = new_user(acme, "bob")
    assert add_member(acme, readers_team, "bob").status in (200, 204)
    org_token = acme.post("/api/v2/organizations/acme/authentication-token", raw="null")
    make_org(acme, "evil")
    _, outsider = new_user(acme, "eve")
    evil_owners = team_id_by_name(acme, "evil", "owners")
    assert add_member(acme, evil_owners, "eve").status in (200, 204)

    saved = owner.patch(POLICY, policy_doc(**{"block-severity": "medium"}))
    assert saved.status == 200, saved.json
    readers = {
        "member": member,
        "read-only team token": acme.as_(reader_token),
        "manage-modules team token": acme.as_(publisher),
        "organization token": acme.as_(org_token.data["attributes"]["token"]),
    }
    for kind, who in readers.items():
        shown = who.get(POLICY)
        assert shown.status == 200, (kind, shown.json)
        assert shown.data == saved.data, kind
        refused = who.patch(POLICY, policy_doc(**{"block-severity": "none"}))
        assert refused.status == 404, (kind, refused.json)
    assert outsider.get(POLICY).status == 404
    assert outsider.patch(POLICY, policy_doc(**{"block-severity": "none"})).status == 404
    assert acme.as_(None).get(POLICY).status == 401
    assert acme.as_(None).patch(POLICY, policy_doc(**{"block-severity": "none"})).status == 401
    assert acme.get("/api/v2/organizations/missing/registry-policy").status == 404
    assert acme.get(POLICY).data == saved.data
    assert policy_of("acme").block_severity == "medium"


def test_a_concurrent_change_is_a_409_not_a_lost_write(acme: Api) -> None:
    """...and the refused change writes no audit event: the change and its event are one
    transaction."""
    from chalicelib.core.audit import events, trail
    from chalicelib.core.data.ids import now
    from chalicelib.trust import store

    acme.patch(POLICY, policy_doc(**{"block-severity": "low"}))
    stale = store.find("acme", consistent=True)
    assert acme.patch(POLICY, policy_doc(**{"block-severity": "high"})).status == 200
    from chalicelib.core.api.errors import Conflict

    recorded, before = trail.read_page("acme", None, 1, 100)
    policies = [e for e in recorded if e["resource"]["type"] == "registry-policy"]
    assert [e["resource"]["meta"]["changed"] for e in policies] == [
        ["block-severity"],
        ["block-severity"],
    ]
    lost = events.event(
        None,
        organization="acme",
        resource_type="registry-policy",
        resource_id="acme",
        action="updated",
    )
    with pytest.raises(Conflict):
        store.save(
            stale,
            "acme",
            block_severity="none",
            ignored_rules=[],
            require_readme=False,
            updated_by="user:x",
            moment=now(),
            event=lost,
        )
    assert policy_of("acme").block_severity == "high"
    after, total = trail.read_page("acme", None, 1, 100)
    assert (after, total) == (recorded, before)
    assert lost.id not in {e["id"] for e in after}


def test_the_wrong_callers_walk_covers_the_policy_and_release_routes() -> None:
    """tests/test_authorization.py walks every route of every entry app with the wrong
    callers: these are among them, in the functions that serve them, declared ``bearer``
    (the API) or signed-in (the pages)."""
    from tests.test_authorization import ROUTES, names_the_victim

    walked = {(r.app.rsplit(".", 1)[-1], r.method, r.path, r.access) for r in ROUTES}
    policy = "/api/v2/organizations/{organization_name}/registry-policy"
    release = (
        "/api/v2/organizations/{organization_name}/registry-modules/{registry_name}/"
        "{namespace}/{name}/{provider}/versions/{version}/actions/release"
    )
    expected = {
        ("registry", "GET", policy, "bearer"),
        ("registry", "PATCH", policy, "bearer"),
        ("registry", "POST", release, "bearer"),
        ("webadmin", "POST", "/app/{organization}/settings/registry-policy", "signed-in"),
    }
    assert expected <= walked
    assert all(names_the_victim(r) for r in ROUTES if r.path in (policy, release))


def test_deleting_the_organization_forgets_its_policy(acme: Api) -> None:
    saved = acme.patch(POLICY, policy_doc(**{"block-severity": "high"}))
    assert saved.status == 200, saved.json
    assert acme.delete("/api/v2/organizations/acme").status == 204
    make_org(acme, "acme")
    assert acme.get(POLICY).data["attributes"] == DEFAULTS
    assert policy_of("acme") == Policy()
