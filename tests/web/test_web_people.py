"""The people pages in-process (tests/support/web_browser.py over Chalice's test client and moto):
the account (profile, password, API tokens) and an organization's members, teams and
tokens. Each action, and its refusals: a form without its CSRF token is 403 and changes
nothing; who may not do a thing sees no form for it and its POST answers 404; bad input
shows the form again with the message and changes nothing; a token's secret is on the page
that answers its create form only, and in no log.

The browser tests (Chromium, axe-core, a 390 px phone) are in tests/e2e/test_people_web_e2e.py.
"""

from __future__ import annotations

import logging
import re
from datetime import timedelta
from typing import Any

import pytest

from chalicelib.accounts import passwords, signin
from chalicelib.accounts.tokens import service as tokens_service
from chalicelib.accounts.tokens import store as tokens_store
from chalicelib.accounts.users import service as users_service
from chalicelib.accounts.users import store as users_store
from chalicelib.accounts.users.store import UserModel
from chalicelib.core.auth import mint_token
from chalicelib.core.data.ids import now
from chalicelib.web import session
from chalicelib.web.oauth import token_description
from tests.conftest import Api, make_org, make_team
from tests.support.web_browser import Browser

ORG = "acme"
PASSWORD = "a-long-enough-secret-42"


def person(api: Api, name: str, team: str | None = None) -> tuple[str, str]:
    """A user (with a password), on ``team`` of ``ORG`` if named: (user id, an API token)."""
    user = users_service.create_user(name, f"{name}@example.com")
    user.update(actions=[UserModel.password_hash.set(passwords.hash_password(PASSWORD))])
    _, secret = mint_token("user", user.id, description="setup")
    if team:
        team_id = team_named(api, team)
        body = {"data": [{"type": "users", "id": name}]}
        assert api.post(f"/api/v2/teams/{team_id}/relationships/users", body).status == 204
    return user.id, secret


def team_named(api: Api, name: str) -> str:
    reply = api.get(f"/api/v2/organizations/{ORG}/teams?filter[names]={name}")
    (team,) = reply.data
    return str(team["id"])


def signed_in(api: Api, token: str) -> Browser:
    browser = Browser(api.client)
    assert browser.sign_in(token).status_code == 303
    return browser


def csrf(browser: Browser, path: str) -> str:
    return browser.csrf(path)


def secret_on(page: Any) -> str:
    found = re.search(r'<code id="token-secret">([^<]+)</code>', page.text)
    assert found, page.text
    return found.group(1)


def works(api: Api, token: str) -> bool:
    return api.as_(token).get("/api/v2/account/details").status == 200


def works_for_org(api: Api, token: str) -> bool:
    return api.as_(token).get(f"/api/v2/organizations/{ORG}").status == 200


@pytest.fixture
def org(api: Api) -> Api:
    make_org(api, ORG)
    make_team(api, ORG, "readers")
    return api


@pytest.fixture
def olivia(org: Api) -> Browser:
    """An owner of ORG (not a site admin), signed in."""
    _, token = person(org, "olivia", "owners")
    return signed_in(org, token)


# ----- the account ---------------------------------------------------------------------------


def test_the_account_creates_a_token_shown_once_and_never_logged(
    org: Api, caplog: pytest.LogCaptureFixture
) -> None:
    _, token = person(org, "jane")
    browser = signed_in(org, token)
    caplog.set_level(logging.DEBUG)
    page = browser.get("/app/account")
    assert page.status_code == 200 and 'value="jane"' in page.text
    assert 'href="/app/account/two-factor"' in page.text
    assert "you signed in with it" in page.text  # revoking that one ends this session
    form = {
        "description": "CI pipeline",
        "expires_on": "2999-01-31",
        "csrf_token": csrf(browser, "/app/account"),
    }
    created = browser.post("/app/account/tokens", form)
    assert created.status_code == 200
    secret = secret_on(created)
    assert 'data-copy="token-secret"' in created.text and "2999-01-31" in created.text
    assert works(org, secret)
    listed = browser.get("/app/account")
    assert "CI pipeline" in listed.text and secret not in listed.text
    assert secret not in caplog.text and token not in caplog.text
    (made,) = [
        t
        for t in tokens_store.owned_tokens("user", listed_user(org, secret))
        if t.description == "CI pipeline"
    ]
    assert made.expired_at is not None and made.expired_at.year == 2999

    # No date: the token expires two years on, as every user token made without one (the
    # page says so).
    assert "expires two years from now" in listed.text
    from datetime import UTC, datetime, timedelta

    before = datetime.now(UTC) - timedelta(seconds=1)
    form = {"description": "no date", "expires_on": "", "csrf_token": csrf(browser, "/app/account")}
    assert browser.post("/app/account/tokens", form).status_code == 200
    after = datetime.now(UTC) + timedelta(seconds=1)
    (undated,) = [
        t
        for t in tokens_store.owned_tokens("user", listed_user(org, secret))
        if t.description == "no date"
    ]
    assert undated.expired_at is not None
    assert (
        tokens_service.years_later(before, 2)
        <= undated.expired_at
        <= tokens_service.years_later(after, 2)
    )


def listed_user(api: Api, token: str) -> str:
    return str(api.as_(token).get("/api/v2/account/details").data["id"])


@pytest.mark.parametrize(
    ("description", "expires_on", "message"),
    [
        ("", "", "a description is required"),
        ("x" * 256, "", "at most 255 characters"),
        ("old", "2001-01-01", "must be in the future"),
        ("odd", "31/01/2030", "must be a date"),
    ],
)
def test_a_bad_token_form_comes_back_with_its_message_and_makes_nothing(
    org: Api, description: str, expires_on: str, message: str
) -> None:
    user_id, token = person(org, "jane")
    browser = signed_in(org, token)
    before = {t.id for t in tokens_store.owned_tokens("user", user_id)}
    form = {
        "description": description,
        "expires_on": expires_on,
        "csrf_token": csrf(browser, "/app/account"),
    }
    page = browser.post("/app/account/tokens", form)
    assert page.status_code == 422 and message in page.text
    assert 'id="token-secret"' not in page.text
    assert {t.id for t in tokens_store.owned_tokens("user", user_id)} == before


def test_a_token_form_without_csrf_is_refused_and_makes_nothing(org: Api) -> None:
    user_id, token = person(org, "jane")
    browser = signed_in(org, token)
    before = {t.id for t in tokens_store.owned_tokens("user", user_id)}
    page = browser.post("/app/account/tokens", {"description": "sneaky"})
    assert page.status_code == 403 and 'id="token-secret"' not in page.text
    assert {t.id for t in tokens_store.owned_tokens("user", user_id)} == before


def test_revoking_asks_first_needs_csrf_and_ends_the_token(org: Api) -> None:
    user_id, token = person(org, "jane")
    _, spare = mint_token("user", user_id, description="laptop")
    (spare_item,) = [
        t for t in tokens_store.owned_tokens("user", user_id) if t.description == "laptop"
    ]
    browser = signed_in(org, token)
    assert f'href="/app/account/tokens/{spare_item.id}"' in browser.get("/app/account").text
    confirm = browser.get(f"/app/account/tokens/{spare_item.id}")
    assert confirm.status_code == 200 and "Revoke the token" in confirm.text
    action = f"/app/account/tokens/{spare_item.id}/revoke"
    assert browser.post(action, {}).status_code == 403
    assert works(org, spare)
    done = browser.post(action, {"csrf_token": csrf(browser, "/app/account")})
    assert done.status_code == 303 and done.headers["Location"].startswith("/app/account")
    assert not works(org, spare) and works(org, token)
    assert "The token is revoked." in browser.get(done.headers["Location"]).text


def test_someone_elses_token_cannot_be_seen_or_revoked(org: Api) -> None:
    _, jane = person(org, "jane")
    kim_id, kim = person(org, "kim")
    (kims,) = list(tokens_store.owned_tokens("user", kim_id))
    browser = signed_in(org, jane)
    assert browser.get(f"/app/account/tokens/{kims.id}").status_code == 404
    form = {"csrf_token": csrf(browser, "/app/account")}
    assert browser.post(f"/app/account/tokens/{kims.id}/revoke", form).status_code == 404
    assert works(org, kim)


def test_terraform_login_tokens_are_marked_and_browser_sessions_not_listed(org: Api) -> None:
    user_id, token = person(org, "jane")
    mint_token("user", user_id, description=token_description())
    _, cookie = session.start_for_user(user_id, method="password")  # a password sign-in
    browser = Browser(org.client)
    browser.cookies[session.COOKIE_NAME] = cookie
    page = browser.get("/app/account")
    assert page.status_code == 200
    assert '<span class="badge">terraform login</span>' in page.text
    assert session.SESSION_TOKEN not in page.text.replace("1 browser session ", "")
    assert "Not listed: 1 browser session " in page.text


def test_a_team_token_session_has_no_account_page(org: Api) -> None:
    _, team_token = make_team(org, ORG, "ci")
    browser = signed_in(org, team_token)
    assert browser.get("/app/account").status_code == 404
    page = browser.get("/app/organizations").text
    assert 'href="/app/account"' not in page
    assert '<li class="who" id="signed-in-as">Signed in with a team token</li>' in page


def test_the_profile_changes_through_the_account_service(org: Api) -> None:
    person(org, "kim")
    _, token = person(org, "jane")
    browser = signed_in(org, token)
    taken = {
        "username": "kim",
        "email": "jane@example.com",
        "csrf_token": csrf(browser, "/app/account"),
    }
    refused = browser.post("/app/account/profile", taken)
    assert refused.status_code == 422 and "has already been taken" in refused.text
    assert 'value="kim"' in refused.text  # the form again, as sent
    assert org.as_(token).get("/api/v2/account/details").data["attributes"]["username"] == "jane"
    renamed = {"username": "janet", "email": "janet@example.com", "csrf_token": taken["csrf_token"]}
    saved = browser.post("/app/account/profile", renamed)
    assert saved.status_code == 200 and "Your profile is saved." in saved.text
    attributes = org.as_(token).get("/api/v2/account/details").data["attributes"]
    assert attributes["username"] == "janet"
    assert attributes["email"] == "jane@example.com"  # until the mailed link is followed
    assert "Waiting for confirmation: janet@example.com" in saved.text


def test_the_password_changes_with_the_current_one_only(org: Api) -> None:
    _, token = person(org, "jane")
    browser = signed_in(org, token)
    new = PASSWORD + "-new"
    wrong = {
        "current_password": "nope",
        "password": new,
        "password_again": new,
        "csrf_token": csrf(browser, "/app/account"),
    }
    refused = browser.post("/app/account/password", wrong)
    assert refused.status_code == 422 and "current password is not correct" in refused.text
    assert signin.check("jane", PASSWORD, "198.51.100.1") is not None
    short = dict(wrong, current_password=PASSWORD, password="short", password_again="short")
    assert browser.post("/app/account/password", short).status_code == 422
    right = dict(wrong, current_password=PASSWORD)
    changed = browser.post("/app/account/password", right)
    assert changed.status_code == 200 and "Your password is changed." in changed.text
    assert signin.check("jane", new, "198.51.100.1") is not None
    assert new not in changed.text and PASSWORD not in changed.text


def test_wrong_current_passwords_on_the_form_are_throttled_with_the_api_ones(
    org: Api, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The form and ``PATCH /account/password`` count in one place: a stolen session gets
    ``signin.ACCOUNT_LIMIT`` guesses a window in all; then a 429 page that changes nothing."""
    from types import SimpleNamespace

    from tests.accounts.helpers import WINDOW_START

    monkeypatch.setattr(signin, "time", SimpleNamespace(time=lambda: WINDOW_START + 60.0))
    user_id, token = person(org, "jane")
    browser = signed_in(org, token)
    new = PASSWORD + "-new"
    guess = {"current_password": "nope", "password": new, "password_again": new}
    api_guess = {"current-password": "nope", "password": new, "password-confirmation": new}
    body = {"data": {"type": "users", "attributes": api_guess}}
    assert org.as_(token).patch("/api/v2/account/password", body).status == 422
    form = dict(guess, csrf_token=csrf(browser, "/app/account"))
    for _ in range(signin.ACCOUNT_LIMIT - 1):
        assert browser.post("/app/account/password", form).status_code == 422
    before = UserModel.get(user_id).password_hash
    throttled = browser.post("/app/account/password", dict(form, current_password=PASSWORD))
    assert throttled.status_code == 429 and "Retry-After" in throttled.headers
    assert "too many attempts" in throttled.text and 'id="password-form"' in throttled.text
    assert UserModel.get(user_id).password_hash == before


# ----- members ----------------------------------------------------------------------------------


def test_an_owner_invites_onto_a_team_and_withdraws(org: Api, olivia: Browser) -> None:
    page = olivia.get(f"/app/{ORG}/members")
    assert page.status_code == 200 and 'id="invite-form"' in page.text
    readers = team_named(org, "readers")
    form = {
        "email": "kim@example.com",
        "teams": readers,
        "csrf_token": csrf(olivia, f"/app/{ORG}/members"),
    }
    invited = olivia.post(f"/app/{ORG}/members/invite", form)
    assert invited.status_code == 200 and "kim@example.com is invited." in invited.text
    # No mail set up here, and Olivia is no site admin: she is told so, and sees no link.
    assert "/app/invitations/" not in invited.text and 'id="invitation-link"' not in invited.text
    assert "the invitation was not mailed; only a site admin can see its link" in invited.text
    listed = org.get(f"/api/v2/organizations/{ORG}/organization-memberships?filter[status]=invited")
    (membership,) = listed.data
    assert membership["attributes"]["email"] == "kim@example.com"
    assert [t["id"] for t in membership["relationships"]["teams"]["data"]] == [readers]
    page = olivia.get(f"/app/{ORG}/members")
    assert "Withdraw the invitation" in page.text and "/app/invitations/" not in page.text
    action = f"/app/{ORG}/members/{membership['id']}/remove"
    assert olivia.post(action, {}).status_code == 403
    withdrawn = olivia.post(action, {"csrf_token": csrf(olivia, f"/app/{ORG}/members")})
    assert withdrawn.status_code == 303
    assert (
        org.get(f"/api/v2/organizations/{ORG}/organization-memberships?filter[status]=invited").data
        == []
    )


def invitations(api: Api) -> list[Any]:
    return api.get(
        f"/api/v2/organizations/{ORG}/organization-memberships?filter[status]=invited"
    ).data


def test_a_bad_or_unverified_invitation_changes_nothing(org: Api, olivia: Browser) -> None:
    token = csrf(olivia, f"/app/{ORG}/members")
    assert (
        olivia.post(f"/app/{ORG}/members/invite", {"email": "kim@example.com"}).status_code == 403
    )
    bad = olivia.post(
        f"/app/{ORG}/members/invite", {"email": "not-an-address", "csrf_token": token}
    )
    assert (
        bad.status_code == 422
        and 'id="invite-error"' in bad.text
        and 'value="not-an-address"' in bad.text
    )
    assert invitations(org) == []


def test_a_member_without_rights_sees_no_forms_and_a_post_is_404(org: Api) -> None:
    _, token = person(org, "jane", "readers")
    browser = signed_in(org, token)
    page = browser.get(f"/app/{ORG}/members")
    assert page.status_code == 200 and "olivia" not in page.text
    assert 'id="invite-form"' not in page.text and "/remove" not in page.text
    assert "jane@example.com" in page.text  # her own address
    admin_row = org.get(f"/api/v2/organizations/{ORG}/organization-memberships").data[0]
    token_ = csrf(browser, f"/app/{ORG}/members")
    invite = {"email": "kim@example.com", "csrf_token": token_}
    assert browser.post(f"/app/{ORG}/members/invite", invite).status_code == 404
    assert invitations(org) == []
    remove = f"/app/{ORG}/members/{admin_row['id']}/remove"
    assert browser.post(remove, {"csrf_token": token_}).status_code == 404
    assert "Settings</a>" not in browser.get(f"/app/{ORG}/teams").text
    assert browser.get(f"/app/{ORG}/settings").status_code == 404


def test_a_manage_membership_team_may_invite(org: Api) -> None:
    make_team(org, ORG, "hr", manage_membership=True)
    _, token = person(org, "hana", "hr")
    browser = signed_in(org, token)
    assert 'id="invite-form"' in browser.get(f"/app/{ORG}/members").text
    form = {"email": "kim@example.com", "csrf_token": csrf(browser, f"/app/{ORG}/members")}
    assert browser.post(f"/app/{ORG}/members/invite", form).status_code == 200
    assert len(invitations(org)) == 1


def test_outsiders_get_404_everywhere(org: Api) -> None:
    _, token = person(org, "eve")
    browser = signed_in(org, token)
    owners = team_named(org, "owners")
    for path in ("members", "teams", f"teams/{owners}", "settings"):
        assert browser.get(f"/app/{ORG}/{path}").status_code == 404, path
    token_ = csrf(browser, "/app/account")
    form = {"email": "x@example.com", "csrf_token": token_}
    assert browser.post(f"/app/{ORG}/members/invite", form).status_code == 404
    assert (
        browser.post(
            f"/app/{ORG}/teams", {"name": "x", "visibility": "secret", "csrf_token": token_}
        ).status_code
        == 404
    )
    assert browser.get("/app/nowhere/members").status_code == 404


def test_removing_a_member_and_the_last_owner_refused(org: Api, olivia: Browser) -> None:
    person(org, "jane", "readers")
    rows = org.get(f"/api/v2/organizations/{ORG}/organization-memberships?include=user").data
    by_email = {r["attributes"]["email"]: r["id"] for r in rows}
    jane_action = f"/app/{ORG}/members/{by_email['jane@example.com']}/remove"
    # No one-click removal: the row links to a page that asks first (no script needed).
    page = olivia.get(f"/app/{ORG}/members").text
    assert (
        f'<a href="{jane_action}">Remove' in page
        and 'method="post" action="' + jane_action not in page
    )
    asked = olivia.get(jane_action)
    assert asked.status_code == 200 and "Remove jane from acme?" in asked.text
    assert (
        f'<form method="post" action="{jane_action}"' in asked.text
        and "Remove jane</button>" in asked.text
    )
    assert (
        len(org.get(f"/api/v2/organizations/{ORG}/organization-memberships").data) == 3
    )  # asking changed nothing
    token = csrf(olivia, f"/app/{ORG}/members")
    removed = olivia.post(jane_action, {"csrf_token": token})
    assert removed.status_code == 303
    assert "jane" not in olivia.get(f"/app/{ORG}/members").text
    # The owners team is olivia and the site admin who made the organization: drop the admin,
    # then olivia may not remove herself.
    owners = team_named(org, "owners")
    body = {"data": [{"type": "users", "id": "admin"}]}
    assert org.delete(f"/api/v2/teams/{owners}/relationships/users", body).status == 204
    # Now the last owner: her row offers no removal, and the page that would ask refuses.
    own_action = f"/app/{ORG}/members/{by_email['olivia@example.com']}/remove"
    page = olivia.get(f"/app/{ORG}/members").text
    assert own_action not in page and "the last owner" in page
    asked = olivia.get(own_action)
    assert asked.status_code == 422 and "must keep at least one member" in asked.text
    assert 'id="confirm-question"' not in asked.text
    refused = olivia.post(own_action, {"csrf_token": token})
    assert refused.status_code == 422 and "must keep at least one member" in refused.text


def test_the_removal_page_is_for_who_manages_membership_only(org: Api, olivia: Browser) -> None:
    _, token = person(org, "jane", "readers")
    rows = org.get(f"/api/v2/organizations/{ORG}/organization-memberships?include=user").data
    olivias = next(r["id"] for r in rows if r["attributes"]["email"] == "olivia@example.com")
    jane = signed_in(org, token)
    assert jane.get(f"/app/{ORG}/members/{olivias}/remove").status_code == 404
    assert olivia.get(f"/app/{ORG}/members/no-such-membership/remove").status_code == 404
    make_org(org, "other")
    assert olivia.get(f"/app/other/members/{olivias}/remove").status_code == 404


# ----- teams and tokens ---------------------------------------------------------------------------


def test_an_owner_creates_a_team_adds_a_member_and_sets_its_access(
    org: Api, olivia: Browser
) -> None:
    person(org, "jane", "readers")
    token = csrf(olivia, f"/app/{ORG}/teams")
    form: dict[str, str | list[str]] = {
        "name": "platform",
        "visibility": "organization",
        "access": ["manage_modules", "read_projects"],
        "csrf_token": token,
    }
    made = olivia.post(f"/app/{ORG}/teams", form)
    assert made.status_code == 303
    team_path = made.headers["Location"]
    team_id = team_path.rsplit("/", 1)[1]
    access = org.get(f"/api/v2/teams/{team_id}").data["attributes"]["organization-access"]
    assert access["manage-modules"] and access["read-projects"] and not access["manage-membership"]
    unknown = olivia.post(team_path + "/members", {"username": "nobody", "csrf_token": token})
    assert unknown.status_code == 422 and "no user is named" in unknown.text
    added = olivia.post(team_path + "/members", {"username": "jane", "csrf_token": token})
    assert added.status_code == 303
    members = org.get(f"/api/v2/teams/{team_id}?include=users").data["relationships"]["users"][
        "data"
    ]
    assert len(members) == 1
    assert (
        olivia.post(
            team_path + "/access", {"visibility": "secret", "access": "manage_membership"}
        ).status_code
        == 403
    )
    saved = olivia.post(
        team_path + "/access",
        {"visibility": "secret", "access": "manage_membership", "csrf_token": token},
    )
    assert saved.status_code == 303
    access = org.get(f"/api/v2/teams/{team_id}").data["attributes"]["organization-access"]
    assert access["manage-membership"] and not access["manage-modules"]
    removed = olivia.post(team_path + "/members", {"remove": "jane", "csrf_token": token})
    assert removed.status_code == 303
    assert org.get(f"/api/v2/teams/{team_id}").data["relationships"]["users"]["data"] == []


def test_a_bad_team_name_comes_back_with_its_message(org: Api, olivia: Browser) -> None:
    before = len(org.get(f"/api/v2/organizations/{ORG}/teams").data)
    form = {
        "name": "no spaces",
        "visibility": "secret",
        "csrf_token": csrf(olivia, f"/app/{ORG}/teams"),
    }
    page = olivia.post(f"/app/{ORG}/teams", form)
    assert page.status_code == 422 and 'id="create-error"' in page.text
    taken = olivia.post(f"/app/{ORG}/teams", dict(form, name="readers"))
    assert taken.status_code == 422 and "has already been taken" in taken.text
    assert len(org.get(f"/api/v2/organizations/{ORG}/teams").data) == before


def test_a_member_reads_a_team_without_forms_and_cannot_change_it(org: Api) -> None:
    _, token = person(org, "jane", "readers")
    browser = signed_in(org, token)
    readers = team_named(org, "readers")
    page = browser.get(f"/app/{ORG}/teams/{readers}")
    assert page.status_code == 200 and "jane" in page.text
    assert (
        "<form" not in page.text.split("<main", 1)[1].split("sign-out")[0]
        or 'id="add-member-form"' not in page.text
    )
    assert 'id="add-member-form"' not in page.text and 'id="access-form"' not in page.text
    assert "Create a team token" not in page.text
    token_ = csrf(browser, f"/app/{ORG}/teams")
    for action, form in (
        ("members", {"username": "jane"}),
        ("access", {"visibility": "organization"}),
        ("token", {}),
        ("delete", {}),
    ):
        reply = browser.post(f"/app/{ORG}/teams/{readers}/{action}", dict(form, csrf_token=token_))
        assert reply.status_code == 404, action
    assert team_named(org, "readers") == readers
    assert 'id="team-form"' not in browser.get(f"/app/{ORG}/teams").text


def test_team_tokens_are_shown_once_regenerated_and_revoked(
    org: Api, olivia: Browser, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    readers = team_named(org, "readers")
    path = f"/app/{ORG}/teams/{readers}"
    token = csrf(olivia, path)
    first = olivia.post(path + "/token", {"csrf_token": token})
    assert first.status_code == 200
    first_secret = secret_on(first)
    assert works_for_org(org, first_secret)
    page = olivia.get(path)
    assert first_secret not in page.text and "Regenerate the team token" in page.text
    second_secret = secret_on(olivia.post(path + "/token", {"csrf_token": token}))
    assert works_for_org(org, second_secret) and not works_for_org(org, first_secret)
    assert olivia.post(path + "/token/revoke", {}).status_code == 403
    assert olivia.post(path + "/token/revoke", {"csrf_token": token}).status_code == 303
    assert not works_for_org(org, second_secret)
    assert "Create a team token" in olivia.get(path).text
    assert first_secret not in caplog.text and second_secret not in caplog.text


def test_a_team_is_deleted_after_asking_and_the_owners_team_never(
    org: Api, olivia: Browser
) -> None:
    readers = team_named(org, "readers")
    owners = team_named(org, "owners")
    path = f"/app/{ORG}/teams/{readers}/delete"
    assert "Delete the team" in olivia.get(path).text
    token = csrf(olivia, path)
    assert olivia.post(path, {}).status_code == 403
    assert olivia.post(path, {"csrf_token": token}).status_code == 303
    assert org.get(f"/api/v2/teams/{readers}").status == 404
    assert "Delete the team" not in olivia.get(f"/app/{ORG}/teams/{owners}").text
    refused = olivia.post(f"/app/{ORG}/teams/{owners}/delete", {"csrf_token": token})
    assert refused.status_code == 422 and "cannot be deleted" in refused.text


def test_a_team_of_another_organization_is_not_found_under_this_one(
    org: Api, olivia: Browser
) -> None:
    make_org(org, "other")
    (other_owners,) = org.get("/api/v2/organizations/other/teams").data
    assert olivia.get(f"/app/{ORG}/teams/{other_owners['id']}").status_code == 404


def test_the_organization_token_for_owners(org: Api, olivia: Browser) -> None:
    page = olivia.get(f"/app/{ORG}/settings")
    assert page.status_code == 200 and "has no token" in page.text
    assert 'href="/app/acme/settings"' in olivia.get(f"/app/{ORG}/members").text
    token = csrf(olivia, f"/app/{ORG}/settings")
    assert olivia.post(f"/app/{ORG}/settings/token", {}).status_code == 403
    secret = secret_on(olivia.post(f"/app/{ORG}/settings/token", {"csrf_token": token}))
    assert works_for_org(org, secret)
    assert secret not in olivia.get(f"/app/{ORG}/settings").text
    assert (
        olivia.post(f"/app/{ORG}/settings/token/revoke", {"csrf_token": token}).status_code == 303
    )
    assert not works_for_org(org, secret)


def test_the_nav_links_to_the_account_and_the_organizations_people(
    org: Api, olivia: Browser
) -> None:
    page = olivia.get("/app/organizations")
    assert 'href="/app/account"' in page.text
    assert f'href="/app/{ORG}/members"' in page.text and f'href="/app/{ORG}/teams"' in page.text
    modules = olivia.get(f"/app/{ORG}/registry/modules")
    assert f'href="/app/{ORG}/members"' in modules.text


def test_an_expired_token_is_marked(org: Api) -> None:
    user_id, token = person(org, "jane")
    mint_token("user", user_id, description="old one", expired_at=now() - timedelta(days=1))
    page = signed_in(org, token).get("/app/account")
    assert re.search(r"old one <span class=\"badge bad\">expired</span>", page.text)


def test_every_people_form_without_its_csrf_token_is_403_and_changes_nothing(
    org: Api, olivia: Browser
) -> None:
    """Walks the route table: every POST of the people pages, as an owner who could make it."""
    from app import app

    readers = team_named(org, "readers")
    olivia_user = users_service.find_user_by_name("olivia")
    assert olivia_user is not None
    user_id = olivia_user.id
    (token,) = [t for t in tokens_store.owned_tokens("user", user_id) if t.description == "setup"]
    membership = org.get(f"/api/v2/organizations/{ORG}/organization-memberships").data[0]["id"]
    values = {
        "organization": ORG,
        "team_id": readers,
        "token_id": token.id,
        "membership_id": membership,
        "user_id": user_id,
        "secret": "s" * 43,  # a live email confirmation link of olivia's
    }
    from chalicelib.core.auth import hash_token

    link_expires = now() + timedelta(hours=1)
    users_store.start_email_change(
        olivia_user, "new@example.com", hash_token("s" * 43), link_expires
    )
    state = (
        org.get(f"/api/v2/organizations/{ORG}/organization-memberships").body,
        org.get(f"/api/v2/organizations/{ORG}/teams").body,
        sorted(t.id for t in tokens_store.owned_tokens("user", user_id)),
    )
    posts = [p for p, methods in app.routes.items() if "POST" in methods and is_people(p)]
    assert len(posts) >= 12, posts
    form = {
        "username": "olivia2",
        "email": "x@example.com",
        "description": "x",
        "name": "x",
        "visibility": "organization",
        "password": PASSWORD + "x",
        "password_again": PASSWORD + "x",
        "current_password": PASSWORD,
    }
    for template in posts:
        path = re.sub(r"\{(\w+)\}", lambda m: values[m.group(1)], template)
        assert olivia.post(path, form).status_code == 403, path
    assert state == (
        org.get(f"/api/v2/organizations/{ORG}/organization-memberships").body,
        org.get(f"/api/v2/organizations/{ORG}/teams").body,
        sorted(t.id for t in tokens_store.owned_tokens("user", user_id)),
    )
    assert signin.check("olivia", PASSWORD, "198.51.100.1") is not None
    assert UserModel.get(user_id).unconfirmed_email == "new@example.com"  # still waiting


def is_people(path: str) -> bool:
    """A path of the people pages (``chalicelib/web/people``)."""
    if path.startswith("/app/account"):
        return "two-factor" not in path
    return path.startswith("/app/{organization}/") and "/registry/" not in path


def test_the_account_page_shows_when_each_token_was_last_used(org: Api) -> None:
    _, token = person(org, "jane")
    browser = signed_in(org, token)
    form = {"description": "CI pipeline", "csrf_token": csrf(browser, "/app/account")}
    secret = secret_on(browser.post("/app/account/tokens", form))
    row = re.compile(r"CI pipeline.*?</tr>", re.S)
    before = row.search(browser.get("/app/account").text)
    assert before is not None and "no use recorded" in before.group(0)
    assert works(org, secret)
    after = row.search(browser.get("/app/account").text)
    assert after is not None and "no use recorded" not in after.group(0)
    assert "not recorded" not in browser.get("/app/account").text
