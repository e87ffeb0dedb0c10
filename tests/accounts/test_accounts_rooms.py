"""The shape of ``chalicelib.accounts``: "is a member of an organization" decided in one
place (``UserModel.is_member``). That each store is the only reader of its tables is the
layout test's rule (``tests/test_layout.py``), for every room."""

from __future__ import annotations

import ast
from pathlib import Path

from tests.accounts.helpers import add_member, new_user, team_id_by_name
from tests.conftest import Api, make_org

ROOT = Path(__file__).resolve().parents[2]
ACCOUNTS = ROOT / "chalicelib" / "accounts"


def test_membership_refs_are_read_only_where_is_a_member_is_decided() -> None:
    """A user's ``team_refs`` say which organizations it is a member of; only the users store
    reads them (``UserModel.is_member``, ``organizations``, ``team_ids``), so the rule is
    written once. The teams store writes them (both sides of a membership)."""
    readers = []
    for path in sorted((ROOT / "chalicelib").rglob("*.py")):
        if path == ACCOUNTS / "users" / "store.py":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not (isinstance(node, ast.Attribute) and node.attr == "team_refs"):
                continue
            if not (isinstance(node.value, ast.Name) and node.value.id == "UserModel"):
                readers.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert not readers, readers


def test_is_a_member_counts_teams_and_invitations_and_only_that_organization() -> None:
    from chalicelib.accounts.users.store import UserModel, member_ref

    user = UserModel("user-x", team_refs={"acme/team-1", "acme/team-2", member_ref("beta")})
    assert user.is_member("acme") and user.is_member("beta")
    assert not user.is_member("acm") and not user.is_member("acme-2")
    assert user.organizations() == ["acme", "beta"]
    assert user.team_ids("acme") == ["team-1", "team-2"] and user.team_ids("beta") == []
    assert not UserModel("user-y").is_member("acme") and UserModel("user-y").organizations() == []


def test_a_member_through_an_invitation_reads_and_deleting_them_leaves_no_ref(api: Api) -> None:
    """A member who joined through an invitation only (no team): reads the organization, is
    listed among its members; a site admin deletes the user and the organization's teams
    keep no trace of it."""
    from chalicelib.accounts.invitations import store as invitations_store
    from chalicelib.accounts.users import store as users_store
    from chalicelib.accounts.users.service import get_user
    from chalicelib.core.audit import events

    make_org(api)
    user_id, member = new_user(api, "joiner")
    body = {
        "data": {"type": "organization-memberships", "attributes": {"email": "joiner@example.com"}}
    }
    invited = api.post("/api/v2/organizations/acme/organization-memberships", body).data["id"]
    item = invitations_store.find_invitation(invited)
    assert item is not None and item.token_hash
    # What accepting does for an existing user (``memberships.accept``).
    joined = events.event(
        None,
        organization="acme",
        resource_type="organization-membership",
        resource_id=item.id,
        action="joined",
    )
    assert invitations_store.use_invitation(item, item.token_hash, joined)
    users_store.add_member_ref(user_id, "acme")
    assert member.get("/api/v2/organizations/acme").status == 200
    emails = [
        m["attributes"]["email"]
        for m in api.get("/api/v2/organizations/acme/organization-memberships").data
    ]
    assert "joiner@example.com" in emails
    assert get_user(user_id).is_member("acme")
    owners = team_id_by_name(api, "acme", "owners")
    assert add_member(api, owners, "joiner").status == 204
    assert api.delete(f"/api/v2/admin/users/{user_id}").status == 204
    assert users_store.read_user(user_id) is None
    team = api.get(f"/api/v2/teams/{owners}").data
    assert user_id not in [u["id"] for u in team["relationships"]["users"]["data"]]
