"""What the accounts tests, and other rooms' tests, build on: users, teams and memberships,
how a refusal reads, password sign-in attempts and their counters, two-factor codes."""

from __future__ import annotations

import json
from types import SimpleNamespace
from typing import Any

import pytest

from tests.conftest import Api, Reply
from tests.support.web_browser import Browser

JSONAPI = "application/vnd.api+json"


def new_user(api: Api, username: str) -> tuple[str, Api]:
    """A non-admin user and a client acting with a fresh token of theirs: (user id, client)."""
    from chalicelib.accounts.users.service import create_user
    from chalicelib.core.auth import mint_token

    user = create_user(username, f"{username}@example.com")
    _, secret = mint_token("user", user.id)
    return user.id, api.as_(secret)


def admin_id(api: Api) -> str:
    return api.get("/api/v2/account/details").data["id"]


def add_member(api: Api, team_id: str, *usernames: str) -> Reply:
    body = {"data": [{"type": "users", "id": name} for name in usernames]}
    return api.post(f"/api/v2/teams/{team_id}/relationships/users", body)


def team_id_by_name(api: Api, org: str, name: str) -> str:
    reply = api.get(f"/api/v2/organizations/{org}/teams?filter[names]={name}")
    assert reply.status == 200, reply.json
    (team,) = reply.data
    return team["id"]


def assert_error(reply: Reply, status: int) -> dict[str, Any]:
    """A JSON:API error document with a *string* status (go-tfe fails to decode a number)."""
    assert reply.status == status, (reply.status, reply.body)
    assert reply.headers.get("Content-Type", "").startswith(JSONAPI), reply.headers
    error = reply.error
    assert error["status"] == str(status)
    assert isinstance(error["title"], str) and error["title"]
    return error


ORG = "acme"


MEMBERSHIPS = f"/api/v2/organizations/{ORG}/organization-memberships"


def invite_body(email: Any, teams: list[str] | None = None) -> dict[str, Any]:
    data: dict[str, Any] = {"type": "organization-memberships", "attributes": {"email": email}}
    if teams is not None:
        data["relationships"] = {"teams": {"data": [{"type": "teams", "id": t} for t in teams]}}
    return {"data": data}


PASSWORD = "correct-horse-battery"


FORM = "/app/sign-in/password"


WINDOW_START = 1_800_000_000 - 1_800_000_000 % 900  # a window's first second


def make_user(
    username: str = "Jane", email: str = "Jane@Example.com", password: str | None = PASSWORD
) -> str:
    from chalicelib.accounts import passwords
    from chalicelib.accounts.users import service as users_service

    user = users_service.create_user(username, email)
    if password is not None:
        user.update(actions=[type(user).password_hash.set(passwords.hash_password(password))])
    return user.id


def attempt(browser: Browser, login: str, password: str, next_: str = "") -> Any:
    form = {"csrf_token": browser.csrf(), "login": login, "password": password, "next": next_}
    return browser.post(FORM, form)


def items() -> dict[str, list[str]]:
    """Every item of every table but the rate-limit counters and the audit trail (to see a
    refusal wrote nothing else: its event is tests/web/test_signin_audit.py's)."""
    from chalicelib.core.data.aws import client

    dynamodb = client("dynamodb")
    found = {}
    for table in dynamodb.list_tables()["TableNames"]:
        if not table.endswith(("rate-limits", "audit-events")):
            rows = dynamodb.scan(TableName=table)["Items"]
            found[table] = sorted(json.dumps(row, sort_keys=True) for row in rows)
    return found


def counters() -> dict[str, int]:
    from chalicelib.core.data.counters import RateLimitModel

    return {item.key: int(item.hits) for item in RateLimitModel.scan()}


def from_address(monkeypatch: pytest.MonkeyPatch, address: str) -> None:
    """The source address API Gateway reports for the next requests of the test client."""
    from chalice.local import LambdaEventConverter

    monkeypatch.setattr(LambdaEventConverter, "LOCAL_SOURCE_IP", address)


ATTACKER, OWNER = "203.0.113.9", "198.51.100.7"


NEW_PASSWORD = "another-long-passphrase"


STEP = "/app/sign-in/two-factor"


ACCOUNT = "/app/account/two-factor"


def fake_clock(monkeypatch: pytest.MonkeyPatch) -> SimpleNamespace:
    """One clock for the throttle and the TOTP steps, a minute into a throttle window."""
    from chalicelib.accounts import signin, twofactor

    now = SimpleNamespace(value=WINDOW_START + 60.0)
    fake = SimpleNamespace(time=lambda: now.value)
    monkeypatch.setattr(signin, "time", fake)
    monkeypatch.setattr(twofactor, "time", fake)
    return now


def code_at(secret: str, moment: float) -> str:
    import pyotp

    return pyotp.TOTP(secret).at(int(moment))


def signed_in(browser: Browser) -> bool:
    return browser.get("/app/organizations").status_code == 200


def start_sign_in(api: Api) -> Browser:
    browser = Browser(api.client)
    first = attempt(browser, "jane", PASSWORD, "/app/organizations?from=2fa")
    assert first.status_code == 303 and first.headers["Location"] == STEP
    assert "tfe_registry_session" not in browser.cookies  # not signed in yet
    assert not signed_in(browser)
    page = browser.get(STEP)
    assert page.status_code == 200 and 'autocomplete="one-time-code"' in page.text
    return browser


def send_code(browser: Browser, code: str, csrf: bool = True) -> Any:
    form = {"code": code}
    if csrf:
        form["csrf_token"] = browser.csrf()
    return browser.post(STEP, form)
