"""Signing in to the UI with a username (or email address) and a password: one generic
refusal for every reason, nothing written but the failure counters, the throttle (5 failures
per account and 20 per source address in a 15-minute window, a right password refused while
it holds), the pre-sign-in CSRF token and ``next`` as the token form has them."""

from __future__ import annotations

import json
import logging
from types import SimpleNamespace

import pytest

from tests.accounts.helpers import (
    ATTACKER,
    FORM,
    OWNER,
    PASSWORD,
    WINDOW_START,
    attempt,
    counters,
    from_address,
    items,
    make_user,
)
from tests.admin.helpers import events_of
from tests.conftest import ADMIN_TOKEN, Api
from tests.support.web_browser import Browser

WRONG = "wrong username or password"


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> SimpleNamespace:
    """The throttle's clock, one minute into a 15-minute window (tests never straddle one)."""
    from chalicelib.accounts import signin

    now = SimpleNamespace(value=WINDOW_START + 60.0)
    monkeypatch.setattr(signin, "time", SimpleNamespace(time=lambda: now.value))
    return now


@pytest.mark.parametrize("login", ["Jane", "jane", "JANE", "jane@example.com", "JANE@example.COM"])
def test_the_right_password_signs_in_by_username_in_any_case_or_email(
    api: Api, clock: SimpleNamespace, login: str
):
    make_user()
    browser = Browser(api.client)
    signed = attempt(browser, login, PASSWORD, "/app/organizations?x=1")
    assert signed.status_code == 303, signed.text
    assert signed.headers["Location"] == "/app/organizations?x=1"
    assert any(
        c.startswith("tfe_registry_session=") and "HttpOnly" in c for c in browser.last_set_cookies
    )
    page = browser.get("/app/organizations")
    assert page.status_code == 200 and "Signed in as Jane" in page.text
    assert all(hits == 0 for hits in counters().values())  # a success is not a failure


@pytest.mark.parametrize(
    "case", ["wrong password", "unknown user", "unknown email", "no password", "suspended"]
)
def test_every_refusal_is_the_same_page_and_writes_only_the_counters(
    api: Api, clock: SimpleNamespace, caplog: pytest.LogCaptureFixture, case: str
):
    caplog.set_level(logging.DEBUG)
    from chalicelib.accounts.users import service as users_service

    user_id = make_user(password=None if case == "no password" else PASSWORD)
    if case == "suspended":
        users_service.set_suspended(user_id, True)
    login, password = {
        "wrong password": ("jane", "not-the-password-1"),
        "unknown user": ("nobody", PASSWORD),
        "unknown email": ("nobody@example.com", PASSWORD),
        "no password": ("jane", PASSWORD),
        "suspended": ("jane", PASSWORD),
    }[case]
    browser = Browser(api.client)
    csrf = browser.csrf()
    before = items()
    refused = browser.post(FORM, {"csrf_token": csrf, "login": login, "password": password})
    assert refused.status_code == 401, refused.text
    assert WRONG in refused.text and 'value="' + login + '"' in refused.text
    assert "suspended" not in refused.text and password not in refused.text
    assert not any(c.startswith("tfe_registry_session=") for c in browser.last_set_cookies)
    assert items() == before  # no session, no token: the failure counters and its event
    [event] = events_of("sign-in-failed")
    # The user the login named; a login naming no one only as a fingerprint (never as typed).
    named = "Jane" if login == "jane" else event["resource"]["meta"]["username"]
    assert login not in json.dumps(event) or login == "jane"
    assert named == "Jane" or named.startswith("unknown login ")
    assert event["resource"]["meta"] == {
        "method": "password",
        "username": named,
        "outcome": "failed",
    }
    assert event["resource"]["id"] == ("" if "unknown" in case else user_id)
    assert password not in json.dumps(event)
    assert sorted(counters().values()) == [1, 1]  # this address, this account
    assert password not in caplog.text and f"{login}:{password}" not in caplog.text
    assert browser.get("/app/organizations").headers["Location"].startswith("/app/sign-in")


def test_the_bootstrap_admin_has_no_password_and_cannot_use_one(api: Api, clock: SimpleNamespace):
    refused = attempt(Browser(api.client), "admin", "")
    assert refused.status_code == 401 and WRONG in refused.text


def test_five_failures_lock_the_account_from_that_address_even_for_the_right_password(
    api: Api, clock: SimpleNamespace, monkeypatch: pytest.MonkeyPatch
):
    from chalicelib.accounts import passwords

    make_user()
    browser = Browser(api.client)
    for _ in range(4):
        assert attempt(browser, "jane", "not-the-password-1").status_code == 401
    assert attempt(browser, "jane", PASSWORD).status_code == 303  # taken back: still 4
    Browser.__init__(browser, api.client)  # signed out
    assert attempt(browser, "jane@example.com", "not-the-password-1").status_code == 401  # 5
    checked: list[str] = []
    real = passwords.verify
    monkeypatch.setattr(passwords, "verify", lambda h, p: checked.append(p) or real(h, p))
    throttled = attempt(browser, "JANE", PASSWORD)
    assert throttled.status_code == 429, throttled.text
    assert "too many attempts, try again in 14 minutes" in throttled.text
    assert throttled.headers["Retry-After"] == str(14 * 60)
    assert checked == []  # refused without checking the password
    assert not any(c.startswith("tfe_registry_session=") for c in browser.last_set_cookies)
    # Another account from the same address is not locked; the window's end frees Jane.
    make_user("john", "john@example.com")
    assert attempt(browser, "john", PASSWORD).status_code == 303
    clock.value += 14 * 60
    Browser.__init__(browser, api.client)
    assert attempt(browser, "jane", PASSWORD).status_code == 303


def test_twenty_failures_lock_the_address(api: Api, clock: SimpleNamespace):
    from chalicelib.accounts import signin

    make_user()
    browser = Browser(api.client)
    for n in range(20):
        assert attempt(browser, f"guess{n // 4}", "not-the-password-1").status_code == 401
    throttled = attempt(browser, "jane", PASSWORD)
    assert throttled.status_code == 429 and "too many attempts" in throttled.text
    # Counted per address: another source still signs Jane in, and 21 stays the count.
    assert signin.check("jane", PASSWORD, "198.51.100.7") is not None
    assert max(counters().values()) == 20


def test_five_wrong_passwords_from_one_address_do_not_keep_the_owner_out(
    api: Api, clock: SimpleNamespace, monkeypatch: pytest.MonkeyPatch
):
    """Someone who knows the username guesses five wrong passwords from address A: the
    owner, from address B, still signs in with the right password. A sixth try from A
    is refused unchecked, the right password too (it used to lock the account from
    everywhere for the rest of the window)."""
    from chalicelib.accounts import passwords

    make_user()
    attacker, owner = Browser(api.client), Browser(api.client)
    from_address(monkeypatch, ATTACKER)
    for _ in range(5):
        assert attempt(attacker, "jane", "not-the-password-1").status_code == 401
    from_address(monkeypatch, OWNER)
    signed = attempt(owner, "Jane", PASSWORD)
    assert signed.status_code == 303, signed.text
    assert any(c.startswith("tfe_registry_session=") for c in owner.last_set_cookies)

    from_address(monkeypatch, ATTACKER)
    checked: list[str] = []
    real = passwords.verify
    monkeypatch.setattr(passwords, "verify", lambda h, p: checked.append(p) or real(h, p))
    for password in ("not-the-password-1", PASSWORD):
        throttled = attempt(attacker, "jane@example.com", password)
        assert throttled.status_code == 429 and "too many attempts" in throttled.text
    assert checked == []
    assert not any(c.startswith("tfe_registry_session=") for c in attacker.last_set_cookies)


def test_the_address_bound_counts_an_ipv6_slash_64_as_one_address(
    api: Api, clock: SimpleNamespace, monkeypatch: pytest.MonkeyPatch
):
    """One host holds a whole IPv6 /64: twenty failures from twenty of its addresses hit
    the address bound (and five at one account its bound); another /64 is not held."""
    make_user()
    browser = Browser(api.client)
    for n in range(20):
        from_address(monkeypatch, f"2001:db8:1:2::{n + 1:x}")
        assert attempt(browser, f"guess{n // 4}", "not-the-password-1").status_code == 401
    from_address(monkeypatch, "2001:db8:1:2:ffff::1")
    assert attempt(browser, "jane", PASSWORD).status_code == 429
    for n in range(5):
        from_address(monkeypatch, f"2001:db8:1:3::{n + 1:x}")
        assert attempt(browser, "jane", "not-the-password-1").status_code == 401
    assert attempt(browser, "jane", PASSWORD).status_code == 429
    from_address(monkeypatch, "::ffff:192.0.2.1")  # IPv4-mapped: the IPv4 address
    assert attempt(Browser(api.client), "jane", PASSWORD).status_code == 303


def test_csrf_is_required(api: Api, clock: SimpleNamespace):
    make_user()
    browser = Browser(api.client)
    browser.csrf()  # the cookie, but no field
    for form in (
        {"login": "jane", "password": PASSWORD},
        {"login": "jane", "password": PASSWORD, "csrf_token": "1.2.3"},
    ):
        refused = browser.post(FORM, form)
        assert refused.status_code == 403
        assert not any(c.startswith("tfe_registry_session=") for c in browser.last_set_cookies)
    cross = browser.post(
        FORM,
        {"login": "jane", "password": PASSWORD, "csrf_token": browser.csrf()},
        headers={"Sec-Fetch-Site": "cross-site"},
    )
    assert cross.status_code == 403
    assert counters() == {}  # refused before any attempt was counted


@pytest.mark.parametrize(
    ("next_", "location"),
    [
        ("/app/acme/registry/modules?q=dns", "/app/acme/registry/modules?q=dns"),
        ("https://evil.example/", "/app/organizations"),
        ("//evil.example/app/", "/app/organizations"),
        ("/app/../api/v2/organizations", "/app/organizations"),
        ("", "/app/organizations"),
    ],
)
def test_next_is_honoured_only_when_safe(
    api: Api, clock: SimpleNamespace, next_: str, location: str
):
    make_user()
    signed = attempt(Browser(api.client), "jane", PASSWORD, next_)
    assert signed.status_code == 303 and signed.headers["Location"] == location


def test_the_sign_in_page_offers_both_forms(api: Api):
    browser = Browser(api.client)
    page = browser.get("/app/sign-in?next=/app/organizations")
    assert 'action="/app/sign-in/password"' in page.text and 'action="/app/sign-in"' in page.text
    assert 'autocomplete="current-password"' in page.text
    assert browser.sign_in(ADMIN_TOKEN).status_code == 303  # the token form still works
