"""Sign-ins and sign-outs in the audit trail (issue #37): each writes one event in the site's
partition, saying who, how (``password``, ``token``, ``sso``), and the outcome; a refused
attempt (``failed``) and a throttled one (``throttled``) write one each, with the login text
as typed, bounded, and never the password."""

from __future__ import annotations

import json
from types import SimpleNamespace
from typing import Any

import pytest

from chalicelib.accounts import signin
from tests.accounts.helpers import PASSWORD, WINDOW_START, attempt, make_user
from tests.admin.helpers import admin_id, events_of, trail_events
from tests.conftest import ADMIN_TOKEN, Api
from tests.support.web_browser import Browser
from tests.web.test_login import exchange, signed_in_code, token_request


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> SimpleNamespace:
    """The throttle's clock, one minute into a 15-minute window."""
    now = SimpleNamespace(value=WINDOW_START + 60.0)
    monkeypatch.setattr(signin, "time", SimpleNamespace(time=lambda: now.value))
    return now


def only(action: str) -> dict[str, Any]:
    found = events_of(action)
    assert len(found) == 1, found
    return found[0]


def test_a_password_sign_in_and_its_sign_out_record_one_event_each(
    api: Api, clock: SimpleNamespace
) -> None:
    user_id = make_user()
    browser = Browser(api.client)
    before = len(trail_events())
    assert attempt(browser, "jane@example.com", PASSWORD).status_code == 303
    assert len(trail_events()) == before + 1
    event = only("signed-in")
    assert event["resource"] == {
        "id": user_id,
        "type": "user",
        "action": "signed-in",
        "meta": {"method": "password", "outcome": "succeeded"},
    }
    assert event["auth"]["accessor_id"] == user_id
    assert event["auth"]["description"] == "Jane"
    assert event["auth"]["organization_id"] == ""  # the site's partition
    assert PASSWORD not in json.dumps(trail_events())

    out = browser.post("/app/sign-out", {"csrf_token": browser.csrf("/app/organizations")})
    assert out.status_code == 303
    assert len(trail_events()) == before + 2
    signed_out = only("signed-out")
    assert signed_out["auth"]["accessor_id"] == user_id
    assert signed_out["resource"]["id"] == user_id


def test_a_refused_and_a_throttled_attempt_write_one_event_each_with_the_login_bounded(
    api: Api, clock: SimpleNamespace
) -> None:
    user_id = make_user()
    browser = Browser(api.client)
    long_login = "j" * 5000
    assert attempt(browser, long_login, "not-the-password-1").status_code == 401
    [failed] = events_of("sign-in-failed")
    # A login naming no one is kept as a fingerprint, never as typed (it may be a password).
    assert failed["resource"]["meta"]["username"].startswith("unknown login ")
    assert len(failed["resource"]["meta"]["username"]) == len("unknown login ") + 16
    assert "jjjj" not in json.dumps(trail_events())
    assert failed["resource"]["id"] == ""  # no such user
    assert failed["resource"]["meta"]["outcome"] == "failed"
    for _ in range(signin.ACCOUNT_LIMIT):
        assert attempt(browser, "jane", "not-the-password-1").status_code == 401
    assert len(events_of("sign-in-failed")) == 1 + signin.ACCOUNT_LIMIT
    before = len(trail_events())
    assert attempt(browser, "jane", PASSWORD).status_code == 429
    assert len(trail_events()) == before + 1
    throttled = only("sign-in-throttled")
    assert throttled["resource"]["id"] == user_id
    assert throttled["resource"]["meta"] == {
        "method": "password",
        "username": "Jane",
        "outcome": "throttled",
    }
    assert throttled["auth"]["description"] == "Jane"
    assert PASSWORD not in json.dumps(trail_events())
    assert events_of("signed-in") == []


def test_a_pasted_token_signs_in_as_a_token_sign_in_and_a_wrong_one_is_recorded(
    api: Api,
) -> None:
    browser = Browser(api.client)
    browser.sign_in(ADMIN_TOKEN)
    event = only("signed-in")
    assert event["resource"]["meta"] == {"method": "token", "client": "web", "outcome": "succeeded"}
    assert event["auth"]["accessor_id"] == admin_id()
    refused = Browser(api.client)
    reply = refused.post("/app/sign-in", {"csrf_token": refused.csrf(), "token": "nope"})
    assert reply.status_code == 401
    failed = only("sign-in-failed")
    assert failed["resource"]["meta"]["method"] == "token"
    assert "nope" not in json.dumps(failed)


def test_terraform_logins_token_is_a_token_sign_in(api: Api) -> None:
    browser = Browser(api.client)
    login, code = signed_in_code(browser)
    before = len(trail_events())
    reply = exchange(api, token_request(login, code))
    assert reply.status == 200
    token = reply.json["access_token"]
    new = trail_events()[before:]
    # One event: the sign-in, naming the token it made (not also the token's "created").
    [signed_in_event] = new
    signed_in = [signed_in_event]
    assert signed_in_event["resource"]["action"] == "signed-in"
    assert signed_in_event["resource"]["meta"] == {
        "method": "token",
        "client": "terraform-login",
        "token-id": signed_in_event["resource"]["meta"]["token-id"],
        "outcome": "succeeded",
    }
    assert signed_in_event["resource"]["meta"]["token-id"].startswith("at-")
    assert signed_in[0]["auth"]["accessor_id"] == admin_id()
    assert token not in json.dumps(trail_events()) and code not in json.dumps(trail_events())
    replayed = exchange(api, token_request(login, code))  # a used code: refused, recorded
    assert replayed.status == 400
    assert events_of("sign-in-failed")[-1]["resource"]["meta"]["error"] == "invalid_grant"
