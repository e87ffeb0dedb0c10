"""Accepting an invitation in the browser: the link's page, the form (username, password
twice), the new user signed in and sent to the organization's modules; the link works once;
a refused form changes nothing; the password is stored only as an argon2id hash."""

from __future__ import annotations

import logging

import pytest

from tests.conftest import Api, make_org
from tests.test_memberships import MEMBERSHIPS, invite_body
from tests.web_browser import Browser

PASSWORD = "correct-horse-battery"


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
    from chalicelib.accounts.service import find_user_by_name

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

    from chalicelib.accounts.service import find_user_by_name
    from chalicelib.accounts.store import MembershipModel
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
