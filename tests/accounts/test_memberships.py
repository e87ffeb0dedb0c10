"""Organization memberships and invitations through HTTP (go-tfe's
organization_membership_integration_test.go and team_member_integration_test.go, ported):
invite by email, list and filter, read, remove, team members by membership id; who may
(owners and ``manage-membership`` teams; anyone else 404); bad input is a 422 with a pointer
that changes nothing; the invitation link is never in a list, a read or a log."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from tests.accounts.helpers import (
    MEMBERSHIPS,
    ORG,
    add_member,
    assert_error,
    invite_body,
    new_user,
    team_id_by_name,
)
from tests.conftest import Api, make_org, make_team
from tests.support.admin_servers import smtp_server, use_smtp


def listed(api: Api, query: str = "") -> list[dict[str, Any]]:
    reply = api.get(MEMBERSHIPS + query)
    assert reply.status == 200, reply.json
    return reply.data


def test_invite_list_read_and_withdraw(api: Api, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    make_org(api)
    reply = api.post(MEMBERSHIPS, invite_body("Jane@Example.com"))
    assert reply.status == 201, reply.json
    member = reply.data
    assert member["type"] == "organization-memberships"
    assert member["attributes"] == {"status": "invited", "email": "jane@example.com"}
    assert member["relationships"]["organization"]["data"]["id"] == ORG
    link = reply.json["data"]["meta"]["invitation-url"]  # no SMTP: the owner sees the link
    assert "/app/invitations/" in link
    token = link.rsplit("/", 1)[1]

    # go-tfe: the creator of the organization is a member, with the invited one.
    everyone = listed(api)
    assert {m["attributes"]["status"] for m in everyone} == {"active", "invited"}
    assert len(everyone) == 2
    assert listed(api, "?filter[status]=invited") == [
        {k: v for k, v in member.items() if k != "meta"}
    ]
    assert [m["id"] for m in listed(api, "?filter[email]=jane@example.com")] == [member["id"]]
    assert [m["id"] for m in listed(api, "?q=JANE")] == [member["id"]]
    assert listed(api, "?page[number]=999&page[size]=100") == []
    read = api.get(f"/api/v2/organization-memberships/{member['id']}")
    assert read.status == 200
    assert read.data == {k: v for k, v in member.items() if k != "meta"}

    # The link is shown once: never in a list, a read, or a log.
    for body in (api.get(MEMBERSHIPS).body, read.body):
        assert token.encode() not in body and b"invitation-url" not in body
    assert token not in caplog.text

    assert api.delete(f"/api/v2/organization-memberships/{member['id']}").status == 204
    assert len(listed(api)) == 1
    assert api.get(f"/api/v2/organization-memberships/{member['id']}").status == 404


def test_invitation_errors_are_422_with_a_pointer_and_change_nothing(api: Api) -> None:
    make_org(api)
    other = make_org(api, "other")
    foreign_team = team_id_by_name(api, other, "owners")
    before = listed(api)
    cases = [
        (invite_body(None), "/data/attributes/email"),
        (invite_body("not-an-email-address"), "/data/attributes/email"),
        (invite_body("a@example.com", teams=[foreign_team]), "/data/relationships/teams/data/0/id"),
        (invite_body("a@example.com", teams=["team-nope"]), "/data/relationships/teams/data/0/id"),
        (invite_body("admin@localhost"), "/data/attributes/email"),  # already a member
    ]
    for body, pointer in cases:
        error = assert_error(api.post(MEMBERSHIPS, body), 422)
        assert error["source"]["pointer"] == pointer, (body, error)
    too_many = invite_body("a@example.com", teams=[f"team-{i}" for i in range(101)])
    assert assert_error(api.post(MEMBERSHIPS, too_many), 422)["source"]["pointer"].startswith(
        "/data/relationships/teams"
    )
    assert api.post(MEMBERSHIPS, invite_body("b@example.com")).status == 201
    again = assert_error(api.post(MEMBERSHIPS, invite_body("B@example.com")), 422)
    assert again["source"]["pointer"] == "/data/attributes/email"
    bad_filter = assert_error(api.get(MEMBERSHIPS + "?filter[email]=foobar"), 422)
    assert bad_filter["source"]["parameter"] == "filter[email]"
    assert_error(api.get(MEMBERSHIPS + "?filter[status]=gone"), 422)
    assert len(listed(api)) == len(before) + 1


def test_only_owners_and_manage_membership_teams_invite_everyone_else_404(api: Api) -> None:
    make_org(api)
    _, outsider = new_user(api, "outsider")
    _, member = new_user(api, "member")
    _, manager = new_user(api, "manager")
    readers, _ = make_team(api, ORG, "readers")
    managers, _ = make_team(api, ORG, "managers", manage_membership=True)
    assert add_member(api, readers, "member").status == 204
    assert add_member(api, managers, "manager").status == 204
    invited = api.post(MEMBERSHIPS, invite_body("x@example.com")).data["id"]

    assert_error(outsider.get(MEMBERSHIPS), 404)
    assert_error(outsider.get(f"/api/v2/organization-memberships/{invited}"), 404)
    for client in (outsider, member):
        assert_error(client.post(MEMBERSHIPS, invite_body("y@example.com")), 404)
        assert_error(client.delete(f"/api/v2/organization-memberships/{invited}"), 404)
    # A reader lists the members without their email addresses.
    seen = {m["id"]: m["attributes"]["email"] for m in listed(member)}
    assert seen[invited] == ""
    assert manager.post(MEMBERSHIPS, invite_body("y@example.com")).status == 201
    assert manager.delete(f"/api/v2/organization-memberships/{invited}").status == 204
    assert_error(api.get("/api/v2/organizations/nope/organization-memberships"), 404)


def test_own_memberships_and_removing_a_member(api: Api) -> None:
    make_org(api)
    user_id, member = new_user(api, "member")
    readers, _ = make_team(api, ORG, "readers")
    assert add_member(api, readers, "member").status == 204
    (own,) = member.get("/api/v2/organization-memberships").data
    assert own["attributes"] == {"status": "active", "email": "member@example.com"}
    assert own["relationships"]["teams"]["data"] == [{"id": readers, "type": "teams"}]
    included = api.get(f"/api/v2/organization-memberships/{own['id']}?include=user,teams")
    assert {(r["type"], r["id"]) for r in included.json["included"]} == {
        ("users", user_id),
        ("teams", readers),
    }
    assert api.delete(f"/api/v2/organization-memberships/{own['id']}").status == 204
    assert member.get("/api/v2/organization-memberships").data == []
    assert_error(member.get(f"/api/v2/organizations/{ORG}"), 404)
    # The last owner stays.
    (admin,) = listed(api)
    assert_error(api.delete(f"/api/v2/organization-memberships/{admin['id']}"), 422)


def test_inactive_memberships_and_an_invited_users_username_are_found(api: Api) -> None:
    """terrasnek's ``org_memberships_test`` (its sdist's test/org_memberships_test.py): it
    invites an existing user by email, then lists the organization's memberships with
    ``q`` = the first five letters of that user's username and ``filter[status]`` =
    ``inactive``, page 0, and expects exactly that invitation; after removing it, none.
    ``inactive`` is every membership not yet active; an invited existing user matches by
    username as well as by email."""
    from chalicelib.accounts.users.service import create_user

    make_org(api)
    create_user("snekuser", "other-address@example.com")
    invited = api.post(MEMBERSHIPS, invite_body("other-address@example.com")).data["id"]
    query = "?q=sneku&filter[status]=inactive&page[number]=0&page[size]=50"
    assert [m["id"] for m in listed(api, query)] == [invited]
    assert [m["id"] for m in listed(api, "?filter[status]=inactive")] == [invited]
    assert [m["attributes"]["status"] for m in listed(api, "?filter[status]=active")] == ["active"]
    assert api.delete(f"/api/v2/organization-memberships/{invited}").status == 204
    assert listed(api, query) == []


def test_team_members_by_organization_membership(api: Api) -> None:
    """go-tfe team_member_integration_test.go TestTeamMembersAddByOrganizationMembers: an
    invitation (createOrganizationMembership invites a new email) added to a team by its
    membership id is among the team's ``organization-memberships``, as
    ``ListOrganizationMemberships`` reads them (``GET /teams/:id?include=
    organization-memberships``); TestTeamMembersRemoveByOrganizationMemberships removes it."""
    make_org(api)
    new_user(api, "member")
    readers, _ = make_team(api, ORG, "readers")
    owners = team_id_by_name(api, ORG, "owners")
    assert add_member(api, owners, "member").status == 204
    by_email = {m["attributes"]["email"]: m["id"] for m in listed(api)}
    member_id = by_email["member@example.com"]
    invited = api.post(MEMBERSHIPS, invite_body("new@example.com")).data["id"]
    path = f"/api/v2/teams/{readers}/relationships/organization-memberships"
    body = {"data": [{"type": "organization-memberships", "id": i} for i in (member_id, invited)]}
    assert api.post(path, body).status == 204
    shown = api.get(f"/api/v2/teams/{readers}?include=organization-memberships")
    team = shown.data
    assert [m["id"] for m in team["relationships"]["organization-memberships"]["data"]] == [
        member_id,
        invited,
    ]
    assert {i["id"] for i in shown.json["included"]} == {member_id, invited}
    listed_teams = api.get(f"/api/v2/organizations/{ORG}/teams").data
    on_readers = next(t for t in listed_teams if t["id"] == readers)
    assert invited in [
        m["id"] for m in on_readers["relationships"]["organization-memberships"]["data"]
    ]
    pending = api.get(f"/api/v2/organization-memberships/{invited}").data
    assert pending["relationships"]["teams"]["data"] == [{"id": readers, "type": "teams"}]

    unknown = {"data": [{"type": "organization-memberships", "id": "ou-nope"}]}
    assert assert_error(api.post(path, unknown), 404)["source"]["pointer"] == "/data/0/id"
    assert_error(api.post(path, {"data": [{"type": "organization-memberships"}]}), 422)

    assert api.delete(path, body).status == 204
    team = api.get(f"/api/v2/teams/{readers}").data
    assert team["relationships"]["organization-memberships"]["data"] == []
    pending = api.get(f"/api/v2/organization-memberships/{invited}").data
    assert pending["relationships"]["teams"]["data"] == []


def test_the_invitation_mail_arrives_and_the_response_keeps_no_link(
    api: Api, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    make_org(api)
    with smtp_server() as (port, mailbox):
        use_smtp(api, port)
        reply = api.post(MEMBERSHIPS, invite_body("jane@example.com"))
        assert reply.status == 201, reply.json
        assert "meta" not in reply.json["data"]
        message = mailbox.messages[-1]
    assert message["To"] == "jane@example.com"
    text = message.get_payload(decode=True).decode()
    link = next(word for word in text.split() if "/app/invitations/" in word)
    token = link.rsplit("/", 1)[1]
    assert len(token) >= 43
    assert token.encode() not in reply.body
    ours = [r for r in caplog.records if not r.name.startswith("mail.log")]  # not the server's
    assert not any(token in r.getMessage() for r in ours)
    from chalicelib.accounts.invitations.store import MembershipModel

    (item,) = [i for i in MembershipModel.scan() if i.status == "invited"]
    assert token not in item.token_hash and len(item.token_hash) == 64
