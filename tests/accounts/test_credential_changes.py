"""A credential change ends the user's other browser sessions; the session that made it
stays signed in (``accounts.tokens.service.end_sessions``, the one function a password reset,
a password change and two-factor turned on or off all call). The user's API tokens stay:
they are not sessions. A refused change ends nothing."""

from __future__ import annotations

import re
from types import SimpleNamespace

import pytest

from tests.accounts.helpers import (
    ACCOUNT,
    NEW_PASSWORD,
    PASSWORD,
    attempt,
    code_at,
    fake_clock,
    make_user,
    send_code,
    signed_in,
    start_sign_in,
)
from tests.conftest import Api
from tests.support.web_browser import Browser

PASSWORD_FORM = "/app/account/password"


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> SimpleNamespace:
    return fake_clock(monkeypatch)


def jane_in_two_browsers(api: Api) -> tuple[str, Browser, Browser]:
    """Jane, signed in with her password on two computers: (user id, here, elsewhere)."""
    user_id = make_user()
    here, elsewhere = Browser(api.client), Browser(api.client)
    assert attempt(here, "jane", PASSWORD).status_code == 303
    assert attempt(elsewhere, "jane", PASSWORD).status_code == 303
    assert signed_in(here) and signed_in(elsewhere)
    return user_id, here, elsewhere


def jane_token(user_id: str) -> str:
    from chalicelib.accounts.tokens import service as tokens_service
    from chalicelib.core.auth import Principal

    principal = Principal("user", user_id, "none")
    return tokens_service.create_user_token(principal, user_id, "laptop", None)[1]


def change_on_page(browser: Browser, current: str, new: str) -> int:
    form = {
        "csrf_token": browser.csrf("/app/account"),
        "current_password": current,
        "password": new,
        "password_again": new,
    }
    return browser.post(PASSWORD_FORM, form).status_code


def api_change(current: str, new: str) -> dict:
    attributes = {"current_password": current, "password": new, "password_confirmation": new}
    return {"data": {"type": "users", "attributes": attributes}}


def test_a_password_changed_on_the_account_page_signs_out_the_other_sessions(
    api: Api,
) -> None:
    user_id, here, elsewhere = jane_in_two_browsers(api)
    token = jane_token(user_id)
    # Refused (a wrong current password): nothing ends.
    assert change_on_page(here, "not-her-password-1", NEW_PASSWORD) == 422
    assert signed_in(here) and signed_in(elsewhere)
    assert change_on_page(here, PASSWORD, NEW_PASSWORD) == 200
    assert signed_in(here)  # the session that changed it
    assert not signed_in(elsewhere)
    assert api.as_(token).get("/api/v2/account/details").status == 200  # an API token stays
    assert attempt(Browser(api.client), "jane", NEW_PASSWORD).status_code == 303


def test_a_password_changed_through_the_api_signs_out_every_browser_session(
    api: Api,
) -> None:
    user_id, here, elsewhere = jane_in_two_browsers(api)
    token = jane_token(user_id)
    jane = api.as_(token)
    refused = jane.patch("/api/v2/account/password", api_change("wrong-password-1", NEW_PASSWORD))
    assert refused.status == 422
    assert signed_in(here) and signed_in(elsewhere)
    changed = jane.patch("/api/v2/account/password", api_change(PASSWORD, NEW_PASSWORD))
    assert changed.status == 200, changed.json
    assert not signed_in(here) and not signed_in(elsewhere)
    assert jane.get("/api/v2/account/details").status == 200  # the changer stays


def turn_on(browser: Browser, clock: SimpleNamespace) -> str:
    """Two-factor on through ``browser``'s account page: the secret."""
    assert (
        browser.post(ACCOUNT + "/setup", {"csrf_token": browser.csrf(ACCOUNT)}).status_code == 303
    )
    secret = re.search(r'id="totp-secret">([A-Z2-7]+)<', browser.get(ACCOUNT).text).group(1)
    csrf = browser.csrf(ACCOUNT)
    wrong = browser.post(ACCOUNT + "/confirm", {"csrf_token": csrf, "code": "000000"})
    assert wrong.status_code == 422
    confirm = {"csrf_token": csrf, "code": code_at(secret, clock.value)}
    assert browser.post(ACCOUNT + "/confirm", confirm).status_code == 200
    return secret


def test_turning_two_factor_on_or_off_signs_out_the_other_sessions(
    api: Api, clock: SimpleNamespace
) -> None:
    user_id, here, elsewhere = jane_in_two_browsers(api)
    secret = turn_on(here, clock)
    assert signed_in(here) and not signed_in(elsewhere)

    clock.value += 30
    again = start_sign_in(api)  # jane on the other computer, with a code now
    assert send_code(again, code_at(secret, clock.value)).status_code == 303
    disable = ACCOUNT + "/disable"
    csrf = here.csrf(ACCOUNT)
    assert (
        here.post(disable, {"csrf_token": csrf, "password": "wrong-password-1"}).status_code == 401
    )
    assert signed_in(here) and signed_in(again)  # refused: nothing ended
    assert here.post(disable, {"csrf_token": csrf, "password": PASSWORD}).status_code == 303
    assert signed_in(here) and not signed_in(again)


def test_a_site_admin_turning_two_factor_off_signs_out_every_session_of_the_user(
    api: Api, clock: SimpleNamespace
) -> None:
    user_id, here, elsewhere = jane_in_two_browsers(api)
    turn_on(here, clock)
    reply = api.post(f"/api/v2/admin/users/{user_id}/actions/disable_two_factor")
    assert reply.status == 200
    assert not signed_in(here) and not signed_in(elsewhere)
    # Off already: nothing more ends.
    back = Browser(api.client)
    assert attempt(back, "jane", PASSWORD).status_code == 303
    assert api.post(f"/api/v2/admin/users/{user_id}/actions/disable_two_factor").status == 200
    assert signed_in(back)
