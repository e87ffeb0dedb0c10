"""What other rooms' tests borrow from the web tests: an invitation accepted in the in-process
browser."""

from __future__ import annotations

from tests.accounts.helpers import MEMBERSHIPS, invite_body
from tests.conftest import Api
from tests.support.web_browser import Browser

PASSWORD = "correct-horse-battery"


def invitation_path(link: str) -> str:
    return link[link.index("/app/invitations/") :]


def join_unmailed(api: Api, username: str, email: str, organization: str = "acme") -> str:
    """The site admin invites ``email`` with no SMTP set up and whoever holds the link makes
    the account ``username``: its id (the account's email is unconfirmed)."""
    reply = api.post(
        f"/api/v2/organizations/{organization}/organization-memberships", invite_body(email)
    )
    assert reply.status == 201, reply.json
    link = invitation_path(reply.json["data"]["meta"]["invitation-url"])
    browser = Browser(api.client)
    form = {"csrf_token": browser.csrf(link), "username": username, "password": PASSWORD}
    assert browser.post(link, {**form, "password_again": PASSWORD}).status_code == 303
    found = [m for m in api.get(MEMBERSHIPS).data if m["attributes"]["email"] == email]
    return str(found[0]["relationships"]["user"]["data"]["id"])
