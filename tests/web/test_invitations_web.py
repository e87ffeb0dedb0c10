"""Accepting an invitation in the browser: the link's page, the form (username, password
twice), the new user signed in and sent to the organization's modules; the link works once;
a refused form changes nothing; the password is stored only as an argon2id hash."""

from __future__ import annotations

import logging
import re
from urllib.parse import unquote

import pytest

from tests.accounts.helpers import MEMBERSHIPS, invite_body
from tests.conftest import Api, make_org
from tests.support.web_browser import Browser
from tests.web.helpers import PASSWORD, invitation_path


def test_a_new_person_accepts_once_and_is_signed_in(
    api: Api, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    make_org(api)
    link = api.post(MEMBERSHIPS, invite_body("jane@example.com")).json["data"]["meta"][
        "invitation-url"
    ]
    path = "/app/invitations/" + link.rsplit("/", 1)[1]
    browser = Browser(api.client)
    page = browser.get(path)
    assert page.status_code == 200 and "acme" in page.text
    csrf = browser.csrf(path)
    form = {"csrf_token": csrf, "username": "jane", "password": PASSWORD}
    for bad in (
        {"password_again": "something-else"},
        {"password": "password123", "password_again": "password123"},
        {"password": "short", "password_again": "short"},
    ):
        refused = browser.post(path, {**form, "password_again": PASSWORD, **bad})
        assert refused.status_code == 422, refused.text
    from chalicelib.accounts.users.service import find_user_by_name

    assert find_user_by_name("jane") is None
    accepted = browser.post(path, {**form, "password_again": PASSWORD})
    assert accepted.status_code == 303, accepted.text
    assert accepted.headers["Location"] == "/app/acme/registry/modules"
    assert browser.get("/app/acme/registry/modules").status_code == 200
    jane = find_user_by_name("jane")
    assert jane is not None and jane.password_hash.startswith("$argon2id$")
    (member,) = [
        m for m in api.get(MEMBERSHIPS).data if m["attributes"]["email"] == "jane@example.com"
    ]
    assert member["attributes"]["status"] == "active"
    assert member["relationships"]["user"]["data"]["id"] == jane.id
    again = Browser(api.client)
    used = again.get(path)
    assert used.status_code == 410 and "already been used" in used.text
    assert PASSWORD not in caplog.text and path.rsplit("/", 1)[1] not in caplog.text


def test_forged_withdrawn_expired_and_csrf_less_invitations_change_nothing(api: Api) -> None:
    from datetime import timedelta

    from chalicelib.accounts.invitations.store import MembershipModel
    from chalicelib.accounts.users.service import find_user_by_name
    from chalicelib.core.data.ids import now

    make_org(api)

    def invite(email: str) -> tuple[str, str]:
        reply = api.post(MEMBERSHIPS, invite_body(email))
        assert reply.status == 201, reply.json
        link = reply.json["data"]["meta"]["invitation-url"]
        return reply.data["id"], "/app/invitations/" + link.rsplit("/", 1)[1]

    browser = Browser(api.client)
    _, live = invite("jane@example.com")
    csrf = browser.csrf(live)
    form = {"csrf_token": csrf, "username": "jane", "password": PASSWORD}
    form["password_again"] = PASSWORD

    # Without the form's CSRF token: refused, the link still live.
    no_csrf = browser.post(live, {k: v for k, v in form.items() if k != "csrf_token"})
    assert no_csrf.status_code == 403
    assert find_user_by_name("jane") is None and browser.get(live).status_code == 200

    # A token nobody issued (same shape, one character changed), and an absurd one.
    forged = live[:-1] + ("A" if live[-1] != "A" else "B")
    for path in (forged, "/app/invitations/" + "x" * 300):
        assert browser.get(path).status_code == 410
        assert browser.post(path, form).status_code == 410

    # Withdrawn by the owner before it was used.
    withdrawn_id, withdrawn = invite("joe@example.com")
    assert api.delete(f"/api/v2/organization-memberships/{withdrawn_id}").status == 204
    assert browser.get(withdrawn).status_code == 410
    assert browser.post(withdrawn, {**form, "username": "joe"}).status_code == 410
    assert find_user_by_name("joe") is None

    # Expired: a day past its end.
    (item,) = [m for m in MembershipModel.scan() if m.email == "jane@example.com"]
    item.update(actions=[MembershipModel.expires_at.set(now() - timedelta(days=1))])
    assert browser.get(live).status_code == 410
    expired = browser.post(live, form)
    assert expired.status_code == 410
    assert find_user_by_name("jane") is None
    (member,) = [
        m for m in api.get(MEMBERSHIPS).data if m["attributes"]["email"] == "jane@example.com"
    ]
    assert member["attributes"]["status"] == "invited"


# ----- a link never authenticates: issue 33, finding 1 ------------------------------------------


def person(name: str) -> tuple[str, str]:
    """A user with a password (not a site admin) and an API token of theirs: (id, token)."""
    from chalicelib.accounts import passwords
    from chalicelib.accounts.users import service as users_service
    from chalicelib.accounts.users.store import UserModel
    from chalicelib.core.auth import mint_token

    user = users_service.create_user(name, f"{name}@example.com")
    user.update(actions=[UserModel.password_hash.set(passwords.hash_password(PASSWORD))])
    return user.id, mint_token("user", user.id, description="setup")[1]


def signed_in(api: Api, token: str) -> Browser:
    browser = Browser(api.client)
    assert browser.sign_in(token).status_code == 303
    return browser


def owned_by(api: Api, organization: str, username: str) -> str:
    """A new organization (the site admin makes it) whose only owner is ``username``."""
    from tests.accounts.helpers import add_member, team_id_by_name

    make_org(api, organization)
    owners = team_id_by_name(api, organization, "owners")
    assert add_member(api, owners, username).status == 204
    body = {"data": [{"type": "users", "id": "admin"}]}
    assert api.delete(f"/api/v2/teams/{owners}/relationships/users", body).status == 204
    return organization


def mailed_link(mailbox: object, email: str) -> str:
    (message,) = [m for m in mailbox.messages if m["To"] == email]  # type: ignore[attr-defined]
    text = message.get_payload(decode=True).decode()
    return invitation_path(next(w for w in text.split() if "/app/invitations/" in w))


def status_of(api: Api, organization: str, email: str) -> str:
    listed = api.get(f"/api/v2/organizations/{organization}/organization-memberships").data
    (found,) = [m for m in listed if m["attributes"]["email"] == email]
    return str(found["attributes"]["status"])


def sessions_of(user_id: str) -> int:
    from chalicelib.core.auth import TokenModel

    return len(list(TokenModel.by_owner.query(user_id)))


def test_an_owner_inviting_an_existing_user_gets_no_link_and_the_link_signs_nobody_in(
    api: Api,
) -> None:
    """The attack of issue 33: Olivia, owner of her own organization and no site admin,
    invites the site admin's address and another organization's member. Without SMTP she is
    told the invitation was not mailed and sees no link; and the link itself (had she got
    it: here from the mailbox once SMTP is set up) signs nobody in: in a fresh browser it
    asks to sign in and accepts nothing, her own session is refused, and only the invited
    user's own session accepts it, with no new session."""
    from chalicelib.accounts import memberships
    from chalicelib.accounts.users import service as users_service
    from tests.support.admin_servers import smtp_server, use_smtp

    admin = users_service.find_user_by_name("admin")
    assert admin is not None and admin.email == "admin@localhost" and admin.is_site_admin
    person("kim")
    make_org(api, "acme")  # Kim's organization
    assert api.post(MEMBERSHIPS, invite_body("kim@example.com")).status == 201
    olivia_id, olivia_token = person("olivia")
    olivia = api.as_(olivia_token)
    owned_by(api, "evil", "olivia")
    for email in ("admin@localhost", "kim@example.com"):
        reply = olivia.post(
            "/api/v2/organizations/evil/organization-memberships", invite_body(email)
        )
        assert reply.status == 201, reply.json
        assert reply.json["data"]["meta"] == {
            "invitation-mailed": False,
            "invitation-note": memberships.NOT_MAILED,
        }
        assert b"/app/invitations/" not in reply.body

    with smtp_server() as (port, mailbox):
        use_smtp(api, port)
        owned_by(api, "evil2", "olivia")
        reply = olivia.post(
            "/api/v2/organizations/evil2/organization-memberships", invite_body("admin@localhost")
        )
        assert reply.status == 201 and "meta" not in reply.json["data"]  # it went by mail
        link = mailed_link(mailbox, "admin@localhost")

    # A fresh browser holding the link: asked to sign in, nothing accepted, nobody signed in.
    fresh = Browser(api.client)
    page = fresh.get(link)
    assert page.status_code == 200 and 'id="invitation-sign-in"' in page.text
    assert 'href="/app/sign-in?next=%2Fapp%2Finvitations%2F' in page.text
    assert 'action="/app/invitations/' not in page.text  # no form to accept with
    refused = fresh.post(link, {"csrf_token": fresh.csrf("/app/sign-in")})
    assert refused.status_code == 401 and 'id="invitation-sign-in"' in refused.text
    assert not any("tfe_registry_session=" in c for c in fresh.last_set_cookies)
    assert fresh.get("/app/organizations").status_code == 303  # still nobody
    assert fresh.get("/app/admin/users").status_code != 200
    assert status_of(api, "evil2", "admin@localhost") == "invited"

    # Olivia's own session: refused, she stays herself.
    browser = signed_in(api, olivia_token)
    other = browser.get(link)
    assert other.status_code == 403 and 'id="invitation-other-account"' in other.text
    refused = browser.post(link, {"csrf_token": browser.csrf("/app/organizations")})
    assert refused.status_code == 403 and 'id="invitation-other-account"' in refused.text
    assert browser.get("/app/admin/users").status_code == 404
    assert status_of(api, "evil2", "admin@localhost") == "invited"
    assert not any(r.startswith("evil2/") for r in users_service.get_user(admin.id).team_refs or ())

    # The invited user follows the page's sign-in link and comes back to it, signed in as
    # themselves: accepted, no new session or token.
    own = Browser(api.client)
    found = re.search(r'href="/app/sign-in\?next=([^"]+)"', own.get(link).text)
    assert found and unquote(found.group(1)) == link
    signed = own.sign_in(str(api.token), unquote(found.group(1)))
    assert signed.status_code == 303 and signed.headers["Location"] == link
    assert "as <strong>admin</strong>" in own.get(link).text
    before = sessions_of(admin.id)
    accepted = own.post(link, {"csrf_token": own.csrf(link)})
    assert accepted.status_code == 303, accepted.text
    assert accepted.headers["Location"] == "/app/evil2/registry/modules"
    assert not any("tfe_registry_session=" in c for c in own.last_set_cookies)
    assert sessions_of(admin.id) == before
    assert status_of(api, "evil2", "admin@localhost") == "active"
    assert not users_service.get_user(olivia_id).is_site_admin
    assert status_of(api, "evil", "kim@example.com") == "invited"


def test_a_new_person_joins_confirmed_through_a_mailed_link(api: Api) -> None:
    from chalicelib.accounts.users import service as users_service
    from tests.support.admin_servers import smtp_server, use_smtp

    make_org(api)
    with smtp_server() as (port, mailbox):
        use_smtp(api, port)
        reply = api.post(MEMBERSHIPS, invite_body("jane@example.com"))
        assert reply.status == 201 and "meta" not in reply.json["data"]
        link = mailed_link(mailbox, "jane@example.com")
    browser = Browser(api.client)
    form = {"csrf_token": browser.csrf(link), "username": "jane", "password": PASSWORD}
    accepted = browser.post(link, {**form, "password_again": PASSWORD})
    assert accepted.status_code == 303 and browser.get("/app/account").status_code == 200
    jane = users_service.find_user_by_name("jane")
    assert jane is not None and not jane.email_unconfirmed
    assert 'id="email-unconfirmed"' not in browser.get("/app/account").text


def test_a_new_person_joining_through_an_unmailed_link_confirms_the_address_later(
    api: Api,
) -> None:
    """Without SMTP only the site admin sees the link (and is told it was not mailed); the
    account made through it has an unconfirmed email, which the account page says, until
    a link mailed to the address (once SMTP is set up) confirms it."""
    from chalicelib.accounts import memberships
    from chalicelib.accounts.users import service as users_service
    from tests.support.admin_servers import smtp_server, use_smtp

    make_org(api)
    reply = api.post(MEMBERSHIPS, invite_body("jane@example.com"))
    meta = reply.json["data"]["meta"]
    assert meta["invitation-mailed"] is False
    assert meta["invitation-note"] == memberships.SHOWN_TO_SITE_ADMIN
    link = invitation_path(meta["invitation-url"])
    browser = Browser(api.client)
    form = {"csrf_token": browser.csrf(link), "username": "jane", "password": PASSWORD}
    assert browser.post(link, {**form, "password_again": PASSWORD}).status_code == 303
    jane = users_service.find_user_by_name("jane")
    assert jane is not None and jane.email_unconfirmed and jane.email == "jane@example.com"
    page = browser.get("/app/account")
    assert 'id="email-unconfirmed"' in page.text and "cannot send mail yet" in page.text
    assert 'id="send-confirmation-form"' not in page.text

    with smtp_server() as (port, mailbox):
        use_smtp(api, port)
        page = browser.get("/app/account")
        assert 'id="send-confirmation-form"' in page.text
        asked = browser.post(
            "/app/account/profile",
            {
                "csrf_token": browser.csrf("/app/account"),
                "username": "jane",
                "email": "jane@example.com",
                "send_confirmation": "1",
            },
        )
        assert asked.status_code == 200 and "A confirmation link is mailed" in asked.text
        (message,) = [m for m in mailbox.messages if m["To"] == "jane@example.com"]
    text = message.get_payload(decode=True).decode()
    confirm = next(w for w in text.split() if "/confirm-email/" in w)
    confirm = confirm[confirm.index("/app/account/confirm-email/") :]
    assert users_service.get_user(jane.id).email_unconfirmed  # the mail alone confirms nothing
    stranger = Browser(api.client)
    done = stranger.post(confirm, {"csrf_token": stranger.csrf(confirm)})
    assert done.status_code == 200 and 'id="email-confirmed"' in done.text
    confirmed = users_service.get_user(jane.id)
    assert not confirmed.email_unconfirmed and confirmed.email == "jane@example.com"
    assert 'id="email-unconfirmed"' not in browser.get("/app/account").text
