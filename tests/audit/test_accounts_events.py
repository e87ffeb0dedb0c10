"""The audit events of the accounts' changes (issue #37): organizations, teams and their
members, invitations, tokens, and a user's own account each record exactly one event, in the
organization's partition or the site's, naming who acted and what changed (never a secret),
and a refused change records none."""

from __future__ import annotations

import json
from typing import Any

import pyotp
import pytest

from chalicelib.core.audit import trail
from tests.accounts.helpers import MEMBERSHIPS, add_member, admin_id, invite_body, new_user
from tests.conftest import Api, doc, make_org, make_team
from tests.web.helpers import PASSWORD


def trail_of(organization: str | None) -> list[dict[str, Any]]:
    """Every event of a partition (None: the site's), oldest first."""
    return trail.read_page(organization, None, 1, 1000)[0]


class Recorded:
    """The events a partition gains from here on."""

    def __init__(self, organization: str | None) -> None:
        self.organization = organization
        self.seen = len(trail_of(organization))

    def new(self) -> list[dict[str, Any]]:
        found = trail_of(self.organization)
        fresh, self.seen = found[self.seen :], len(found)
        return fresh

    def one(
        self, resource_type: str, action: str, actor: str, kind: str = "Client"
    ) -> dict[str, Any]:
        """The one new event, checked: its resource type, action, actor and outcome."""
        fresh = self.new()
        assert len(fresh) == 1, [(e["resource"]["type"], e["resource"]["action"]) for e in fresh]
        (event,) = fresh
        assert (event["resource"]["type"], event["resource"]["action"]) == (resource_type, action)
        assert event["auth"]["accessor_id"] == actor
        assert event["auth"]["type"] == kind
        assert event["auth"]["organization_id"] == (self.organization or "")
        assert event["resource"]["meta"]["outcome"] == "succeeded"
        assert event["request"]["id"]
        return event

    def none(self) -> None:
        assert self.new() == []


def test_an_organization_records_its_creation_update_and_deletion(api: Api) -> None:
    admin = admin_id(api)
    acme = Recorded("acme")
    make_org(api, "acme")
    created = acme.one("organization", "created", admin)
    assert created["resource"]["id"] == "acme"
    assert created["auth"]["description"] == "admin"
    assert created["resource"]["meta"]["external-id"].startswith("org-")
    assert Recorded(None).seen == 0  # nothing in the site's partition

    # Refused: a taken name (nothing written, the owners team included), a non-owner.
    taken = api.post("/api/v2/organizations", doc("organizations", name="acme", email="o@x.io"))
    assert taken.status == 422
    _, stranger = new_user(api, "stranger")
    patch = doc("organizations", email="new@x.io")
    assert stranger.patch("/api/v2/organizations/acme", patch).status == 404
    assert stranger.delete("/api/v2/organizations/acme").status == 404
    acme.none()
    teams = api.get("/api/v2/organizations/acme/teams").data
    assert [t["attributes"]["name"] for t in teams] == ["owners"]

    assert api.patch("/api/v2/organizations/acme", patch).status == 200
    updated = acme.one("organization", "updated", admin)
    assert updated["resource"]["meta"]["changed"] == ["email"]
    assert "new@x.io" not in json.dumps(updated)  # names of attributes, not values

    # Deleting it deletes its teams and tokens too: one event for the one change.
    make_team(api, "acme", "devs", manage_modules=True)
    acme.new()
    assert api.post("/api/v2/organizations/acme/authentication-token", raw="null").status == 201
    acme.new()
    assert api.delete("/api/v2/organizations/acme").status == 204
    acme.one("organization", "deleted", admin)

    make_org(api, "beta")  # a site admin deleting it through the admin API: the same event
    beta = Recorded("beta")
    assert api.delete("/api/v2/admin/organizations/beta").status == 204
    beta.one("organization", "deleted", admin)


def test_a_team_records_its_changes_and_its_members(api: Api) -> None:
    admin = admin_id(api)
    make_org(api, "acme")
    jane_id, _ = new_user(api, "jane")
    acme = Recorded("acme")
    team_id, _ = make_team(api, "acme", "devs", manage_modules=True)
    # make_team also makes the team's token: two changes, two events.
    created, token = acme.new()
    assert (created["resource"]["type"], created["resource"]["action"]) == ("team", "created")
    assert created["resource"]["id"] == team_id and created["auth"]["accessor_id"] == admin
    assert (token["resource"]["type"], token["resource"]["action"]) == (
        "authentication-token",
        "created",
    )

    body = doc("teams", name="developers", **{"organization-access": {"manage-providers": True}})
    assert api.patch(f"/api/v2/teams/{team_id}", body).status == 200
    updated = acme.one("team", "updated", admin)
    assert updated["resource"]["meta"]["changed"] == [
        "name",
        "organization-access.manage-providers",
    ]

    assert add_member(api, team_id, "jane").status == 204
    added = acme.one("team", "members-added", admin)
    assert added["resource"]["meta"]["user-ids"] == [jane_id]
    remove = {"data": [{"type": "users", "id": "jane"}]}
    assert api.delete(f"/api/v2/teams/{team_id}/relationships/users", remove).status == 204
    acme.one("team", "members-removed", admin)

    # Refused: an unknown user, the owners team's last member, deleting the owners team.
    owners = next(
        t["id"]
        for t in api.get("/api/v2/organizations/acme/teams").data
        if t["attributes"]["name"] == "owners"
    )
    assert add_member(api, team_id, "nobody").status == 404
    last = {"data": [{"type": "users", "id": "admin"}]}
    assert api.delete(f"/api/v2/teams/{owners}/relationships/users", last).status == 422
    assert api.delete(f"/api/v2/teams/{owners}").status == 422
    acme.none()

    assert api.delete(f"/api/v2/teams/{team_id}").status == 204
    deleted = acme.one("team", "deleted", admin)
    assert deleted["resource"]["meta"]["name"] == "developers"


def test_tokens_record_their_creation_and_deletion_never_their_secret(api: Api) -> None:
    admin = admin_id(api)
    make_org(api, "acme")
    acme, site = Recorded("acme"), Recorded(None)
    secrets: list[str] = []

    def created(path: str) -> dict[str, Any]:
        reply = api.post(path, doc("authentication-tokens", description="ci"))
        assert reply.status == 201, reply.json
        secrets.append(reply.data["attributes"]["token"])
        return reply.data

    org_token = created("/api/v2/organizations/acme/authentication-token")
    event = acme.one("authentication-token", "created", admin)
    assert event["resource"]["id"] == org_token["id"]
    meta = event["resource"]["meta"]
    assert (meta["owner-type"], meta["owner-id"], meta["description"]) == (
        "organization",
        "acme",
        "ci",
    )
    rotated = created("/api/v2/organizations/acme/authentication-token")
    event = acme.one("authentication-token", "created", admin)
    assert event["resource"]["meta"]["replaced-token-id"] == org_token["id"]
    assert api.delete("/api/v2/organizations/acme/authentication-token").status == 204
    assert acme.one("authentication-token", "deleted", admin)["resource"]["id"] == rotated["id"]

    mine = created(f"/api/v2/users/{admin}/authentication-tokens")
    assert site.one("authentication-token", "created", admin)["resource"]["id"] == mine["id"]
    acme.none()  # a user's token is the site's

    # Refused: another user's token, a token the caller may not see, an unknown one.
    _, stranger = new_user(api, "stranger")
    assert stranger.delete(f"/api/v2/authentication-tokens/{mine['id']}").status == 404
    assert stranger.post(f"/api/v2/users/{admin}/authentication-tokens").status == 404
    assert api.delete("/api/v2/authentication-tokens/at-unknown").status == 404
    site.none()

    assert api.delete(f"/api/v2/authentication-tokens/{mine['id']}").status == 204
    site.one("authentication-token", "deleted", admin)

    from chalicelib.core.auth import hash_token

    everything = json.dumps(trail_of("acme") + trail_of(None))
    for secret in secrets:
        assert secret not in everything and hash_token(secret) not in everything


def test_an_invitation_records_its_sending_acceptance_and_withdrawal(api: Api) -> None:
    admin = admin_id(api)
    make_org(api, "acme")
    acme, site = Recorded("acme"), Recorded(None)

    reply = api.post(MEMBERSHIPS, invite_body("jane@example.com"))
    assert reply.status == 201
    link = reply.json["data"]["meta"]["invitation-url"]
    invited = acme.one("organization-membership", "invited", admin)
    assert invited["resource"]["id"] == reply.data["id"]
    assert invited["resource"]["meta"]["email"] == "jane@example.com"
    assert invited["resource"]["meta"]["mailed"] is False
    token = link.rsplit("/", 1)[1]
    assert token not in json.dumps(invited)

    # Accepting, as the link's page does (``web.routes``: its GET keeps a session of its
    # own). Refused: invited already; a password the policy refuses changes nothing.
    from chalicelib.accounts import memberships
    from chalicelib.core.api.errors import Unprocessable
    from chalicelib.core.observe import scope

    assert api.post(MEMBERSHIPS, invite_body("jane@example.com")).status == 422
    with scope(), pytest.raises(Unprocessable):
        opened = memberships.open_invitation(token)
        assert opened is not None
        memberships.accept(opened, token, None, "jane", PASSWORD, "other")
    acme.none()
    site.none()

    with scope():
        opened = memberships.open_invitation(token)
        assert opened is not None
        jane = memberships.accept(opened, token, None, "jane", PASSWORD, PASSWORD)
    assert jane is not None
    joined = acme.one("organization-membership", "joined", jane.id)
    assert joined["auth"]["description"] == "jane"
    user = site.one("user", "created", jane.id)
    assert user["resource"]["id"] == jane.id and user["resource"]["meta"]["via"] == "invitation"
    assert PASSWORD not in json.dumps([joined, user]) and token not in json.dumps(user)

    kim = api.post(MEMBERSHIPS, invite_body("kim@example.com")).data["id"]
    acme.new()
    assert api.delete(f"/api/v2/organization-memberships/{kim}").status == 204
    assert acme.one("organization-membership", "cancelled", admin)["resource"]["id"] == kim
    member = next(
        m["id"] for m in api.get(MEMBERSHIPS).data if m["attributes"]["email"] == "jane@example.com"
    )
    assert api.delete(f"/api/v2/organization-memberships/{member}").status == 204
    acme.one("organization-membership", "removed", admin)


def test_a_users_own_account_changes_are_the_sites_events(api: Api) -> None:
    from chalicelib.accounts import twofactor
    from chalicelib.accounts.users.service import get_user
    from chalicelib.core import observe

    jane_id, jane = new_user(api, "jane")
    site = Recorded(None)
    body = doc("users", **{"password": PASSWORD, "password-confirmation": PASSWORD})
    assert jane.patch("/api/v2/account/password", body).status == 200
    changed = site.one("user", "password-changed", jane_id)
    assert changed["resource"]["id"] == jane_id and changed["auth"]["description"] == "jane"

    # Refused: a wrong current password, a weak one: no event.
    wrong = {"current-password": "not-it", "password": "x" * 20, "password-confirmation": "x" * 20}
    assert jane.patch("/api/v2/account/password", doc("users", **wrong)).status == 422
    weak = {"current-password": PASSWORD, "password": "short", "password-confirmation": "short"}
    assert jane.patch("/api/v2/account/password", doc("users", **weak)).status == 422
    site.none()

    assert jane.patch("/api/v2/account/update", doc("users", username="janet")).status == 200
    renamed = site.one("user", "updated", jane_id)
    assert renamed["resource"]["meta"]["changed"] == ["username"]
    new_user(api, "taken")
    assert jane.patch("/api/v2/account/update", doc("users", username="TAKEN")).status == 422
    site.none()

    # Two-factor, as the account page turns it on and off (the user's own session).
    with observe.scope():
        secret, _ = twofactor.begin(get_user(jane_id))
    site.one("user", "two-factor-setup-started", jane_id)
    with observe.scope():
        assert twofactor.confirm(get_user(jane_id), "000000", keep_token_id="at-x") is None
    site.none()
    with observe.scope():
        code = pyotp.TOTP(secret).now()
        assert twofactor.confirm(get_user(jane_id), code, keep_token_id="at-x")
    site.one("user", "two-factor-enabled", jane_id)
    with observe.scope():
        twofactor.disable(jane_id, keep_token_id="at-x")
    site.one("user", "two-factor-disabled", jane_id)
    with observe.scope():  # off already: only a pending setup is dropped
        twofactor.disable(jane_id, keep_token_id="at-x")
    site.one("user", "two-factor-setup-cancelled", jane_id)
    with observe.scope():  # a site admin's: the admin's action records it (chalicelib.admin)
        twofactor.disable(jane_id)
    site.none()
    assert secret not in json.dumps(trail_of(None))


class Catcher:
    """The site's mail, caught: the links it would send."""

    def __init__(self) -> None:
        self.links: list[str] = []

    def configured(self) -> object:
        return self

    def send_password_reset(self, recipient: str, link: str) -> bool:
        self.links.append(link)
        return True


def test_a_reset_link_made_and_used_are_the_sites_events(
    api: Api, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The ingest worker makes the link (the registry acts: ``System``); whoever holds it sets
    the password for the user; a refused or used link records nothing; no link or password
    is in an event."""
    from chalicelib.accounts import memberships, resets
    from chalicelib.core.api.errors import Unprocessable
    from chalicelib.core.observe import scope
    from tests.accounts.helpers import NEW_PASSWORD, make_user

    mail = Catcher()
    monkeypatch.setattr(memberships, "_mailer", [lambda: mail])
    jane_id = make_user()
    site = Recorded(None)
    with scope():
        resets.deliver({"login": "jane"})
    made = site.one("user", "password-reset-link-made", "registry", kind="System")
    assert made["resource"]["id"] == jane_id
    (link,) = mail.links
    token = link.rsplit("/", 1)[1]

    with scope(), pytest.raises(Unprocessable):
        resets.use(token, "short", "short")
    site.none()
    with scope():
        assert resets.use(token, NEW_PASSWORD, NEW_PASSWORD) is not None
    used = site.one("user", "password-changed", jane_id)
    assert used["resource"]["meta"]["via"] == "reset-link"
    with scope():
        assert resets.use(token, NEW_PASSWORD, NEW_PASSWORD) is None
    site.none()
    everything = json.dumps(trail_of(None))
    assert token.rsplit(".", 1)[1] not in everything and NEW_PASSWORD not in everything


def test_an_invitation_whose_mail_fails_is_taken_back_and_recorded_as_failed(
    api: Api, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The invitation is written before its mail goes out; when the mail fails it is deleted
    again (the answer is the mail's error) and its one event says so: ``outcome`` failed."""
    from chalicelib.accounts import memberships
    from chalicelib.core.api.errors import BadGateway

    class Down(Catcher):
        def send_invitation(self, recipient: str, organization: str, link: str) -> bool:
            raise BadGateway("the mail server refused the message")

    monkeypatch.setattr(memberships, "_mailer", [lambda: Down()])
    make_org(api, "acme")
    acme = Recorded("acme")
    reply = api.post(MEMBERSHIPS, invite_body("jane@example.com"))
    assert reply.status == 502
    assert [m["attributes"]["email"] for m in api.get(MEMBERSHIPS).data] == ["admin@localhost"]
    (event,) = acme.new()
    assert (event["resource"]["type"], event["resource"]["action"]) == (
        "organization-membership",
        "invited",
    )
    assert event["resource"]["meta"]["outcome"] == "failed"
    assert event["resource"]["meta"]["email"] == "jane@example.com"
