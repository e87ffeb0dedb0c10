"""An invitation link never signs anyone in (issue 33, finding 1), over plain HTTP against the
shared local stack (no SMTP there).

Olga, an owner of her own organization and no site admin, invites the site admin's address
from the Members page: she is told the invitation was not mailed and sees no link. A link to
the site admin's invitation (a site admin is shown it) then signs nobody in: a fresh browser
is asked to sign in and accepts nothing, Olga's session is refused, and the site admin's own
session accepts it without a new session."""

from __future__ import annotations

import re
from typing import Any
from uuid import uuid4

import pytest
import requests

from tests.conftest import doc
from tests.e2e.conftest import ADMIN_TOKEN, Stack

pytestmark = pytest.mark.e2e

PASSWORD = "a-long-enough-secret-42"
SESSION = "tfe_registry_session"


class Visitor:
    """A browser over HTTP: its cookies (``Secure`` ones too, which requests keeps for https
    only) sent back by hand, no redirect followed."""

    def __init__(self, stack: Stack) -> None:
        self.stack = stack
        self.cookies: dict[str, str] = {}
        self.set_now: set[str] = set()

    def request(self, method: str, path: str, form: dict[str, str] | None = None) -> Any:
        headers = {"Cookie": "; ".join(f"{k}={v}" for k, v in self.cookies.items())}
        answer = requests.request(
            method,
            path if path.startswith("http") else self.stack.url + path,
            data=form,
            headers=headers if self.cookies else {},
            allow_redirects=False,
            timeout=30,
        )
        self.set_now = {c.name for c in answer.cookies}
        self.cookies.update({c.name: c.value for c in answer.cookies if c.value})
        return answer

    def get(self, path: str) -> Any:
        return self.request("GET", path)

    def post(self, path: str, form: dict[str, str]) -> Any:
        return self.request("POST", path, form)

    def csrf(self, path: str = "/app/sign-in") -> str:
        found = re.search(r'name="csrf_token" value="([^"]+)"', self.get(path).text)
        assert found
        return found.group(1)


def invite(stack: Stack, organization: str, email: str) -> dict[str, Any]:
    reply = stack.session().post(
        stack.api(f"/organizations/{organization}/organization-memberships"),
        json={"data": {"type": "organization-memberships", "attributes": {"email": email}}},
    )
    assert reply.status_code == 201, reply.text
    return dict(reply.json()["data"])


def status(stack: Stack, organization: str, email: str) -> str:
    listed = stack.session().get(
        stack.api(f"/organizations/{organization}/organization-memberships")
    )
    (found,) = [m for m in listed.json()["data"] if m["attributes"]["email"] == email]
    return str(found["attributes"]["status"])


def owned_by(stack: Stack, organization: str, username: str) -> None:
    """A new organization (the site admin makes it) whose only owner is ``username``."""
    admin = stack.session()
    made = admin.post(
        stack.api("/organizations"), json=doc("organizations", name=organization, email="o@x.io")
    )
    assert made.status_code == 201, made.text
    teams = admin.get(stack.api(f"/organizations/{organization}/teams?filter[names]=owners"))
    owners = teams.json()["data"][0]["id"]
    members = stack.api(f"/teams/{owners}/relationships/users")
    me = admin.get(stack.api("/account/details")).json()["data"]["attributes"]["username"]
    assert (
        admin.post(members, json={"data": [{"type": "users", "id": username}]}).status_code == 204
    )
    assert admin.delete(members, json={"data": [{"type": "users", "id": me}]}).status_code == 204


def test_an_invitation_link_signs_nobody_in_over_http(stack: Stack) -> None:
    suffix = uuid4().hex[:8]
    home, target = f"inv-{suffix}", f"inv2-{suffix}"
    olga_name, olga_email = f"olga-{suffix}", f"olga-{suffix}@example.com"
    admin_email = (
        stack.session().get(stack.api("/account/details")).json()["data"]["attributes"]["email"]
    )

    # Olga joins as a new person (the site admin is shown her link), then owns two organizations.
    made = stack.session().post(
        stack.api("/organizations"), json=doc("organizations", name=home, email="o@x.io")
    )
    assert made.status_code == 201, made.text
    link = invite(stack, home, olga_email)["meta"]["invitation-url"]
    olga = Visitor(stack)
    form = {"csrf_token": olga.csrf(link), "username": olga_name, "password": PASSWORD}
    joined = olga.post(link, {**form, "password_again": PASSWORD})
    assert joined.status_code == 303 and SESSION in olga.set_now, joined.text
    owned_by(stack, target, olga_name)

    # From the Members page, without SMTP: not mailed, and no link for her.
    members = f"/app/{target}/members"
    invited = olga.post(
        members + "/invite", {"email": admin_email, "csrf_token": olga.csrf(members)}
    )
    assert invited.status_code == 200, invited.text
    assert (
        'id="invitation-not-mailed"' in invited.text
        and "only a site admin can see its link" in invited.text
    )
    assert "/app/invitations/" not in invited.text
    assert status(stack, target, admin_email) == "invited"
    listed = stack.session().get(
        stack.api(f"/organizations/{target}/organization-memberships?filter[status]=invited")
    )
    (pending,) = listed.json()["data"]  # withdrawn: the site admin invites again below
    assert (
        stack.session().delete(stack.api(f"/organization-memberships/{pending['id']}")).status_code
        == 204
    )

    # The link of the site admin's invitation (a site admin is shown it).
    link = invite(stack, target, admin_email)["meta"]["invitation-url"]
    path = link[link.index("/app/invitations/") :]

    fresh = Visitor(stack)
    page = fresh.get(path)
    assert page.status_code == 200 and 'id="invitation-sign-in"' in page.text
    assert 'href="/app/sign-in?next=%2Fapp%2Finvitations%2F' in page.text
    refused = fresh.post(path, {"csrf_token": fresh.csrf()})
    assert refused.status_code == 401 and SESSION not in fresh.set_now
    assert fresh.get("/app/admin/users").status_code != 200
    assert fresh.get("/app/organizations").status_code == 303  # to the sign-in page
    assert status(stack, target, admin_email) == "invited"

    other = olga.post(path, {"csrf_token": olga.csrf("/app/organizations")})
    assert other.status_code == 403 and 'id="invitation-other-account"' in other.text
    assert SESSION not in other.cookies
    assert olga.get("/app/admin/users").status_code == 404
    assert status(stack, target, admin_email) == "invited"

    own = Visitor(stack)
    signed = own.post("/app/sign-in", {"token": ADMIN_TOKEN, "csrf_token": own.csrf()})
    assert signed.status_code == 303 and SESSION in own.set_now
    accepted = own.post(path, {"csrf_token": own.csrf(path)})
    assert accepted.status_code == 303, accepted.text
    assert accepted.headers["Location"] == f"/app/{target}/registry/modules"
    assert SESSION not in own.set_now  # no new session
    assert status(stack, target, admin_email) == "active"
    assert PASSWORD not in stack.log()
