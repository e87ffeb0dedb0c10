"""terraform login in-process (Chalice's test client and moto): discovery, the authorization
page and its sign-in detour, consent with CSRF, the code's single use and expiry, PKCE and the
token endpoint's OAuth errors. The real ``terraform login`` is tests/e2e/test_terraform_login.py.
"""

from __future__ import annotations

import base64
import hashlib
import html
import json
import re
import uuid
from datetime import timedelta
from typing import Any
from urllib.parse import parse_qs, urlencode, urljoin, urlsplit

import pytest

from chalicelib.core.data.ids import now
from chalicelib.web import oauth
from chalicelib.web.store import LoginCodeModel
from tests.conftest import ADMIN_TOKEN, Api, make_org, make_team
from tests.support.web_browser import Browser

REDIRECT = "http://localhost:10003/login"


def verifier() -> str:
    return f"{uuid.uuid4()}.{uuid.uuid4().int % 10**9:09d}"  # terraform's shape


def challenge_of(secret: str) -> str:
    digest = hashlib.sha256(secret.encode()).digest()
    return base64.urlsafe_b64encode(digest).decode().rstrip("=")


class Login:
    """One ``terraform login`` attempt: its PKCE pair, state and authorization URL."""

    def __init__(self, redirect_uri: str = REDIRECT, **changes: str) -> None:
        self.verifier = verifier()
        self.state = str(uuid.uuid4())
        self.redirect_uri = redirect_uri
        self.params = {
            "response_type": "code",
            "client_id": "terraform-cli",
            "redirect_uri": redirect_uri,
            "state": self.state,
            "code_challenge": challenge_of(self.verifier),
            "code_challenge_method": "S256",
            **changes,
        }

    @property
    def url(self) -> str:
        return f"{oauth.AUTHZ_PATH}?{urlencode(self.params)}"


def hidden_fields(html: str) -> dict[str, str]:
    return dict(re.findall(r'<input type="hidden" name="([^"]+)" value="([^"]*)">', html))


def approve(browser: Browser, login: Login, decision: str = "approve") -> Any:
    page = browser.get(login.url)
    assert page.status_code == 200, page.text
    return browser.post(oauth.AUTHZ_PATH, {**hidden_fields(page.text), "decision": decision})


def code_from(reply: Any, login: Login) -> str:
    assert reply.status_code == 303, reply.text
    location = reply.headers["Location"]
    assert location.startswith(login.redirect_uri + "?")
    query = parse_qs(urlsplit(location).query)
    assert query["state"] == [login.state]
    return query["code"][0]


def exchange(api: Api, fields: dict[str, str], *, raw: str | None = None) -> Any:
    reply = api.as_(None).call(
        "POST",
        oauth.TOKEN_PATH,
        raw=raw if raw is not None else urlencode(fields),
        content_type="application/x-www-form-urlencoded",
    )
    assert reply.headers["Content-Type"] == "application/json"
    assert reply.headers["Cache-Control"] == "no-store"
    return reply


def token_request(login: Login, code: str, **changes: str) -> dict[str, str]:
    fields = {
        "grant_type": "authorization_code",
        "code": code,
        "client_id": "terraform-cli",
        "redirect_uri": login.redirect_uri,
        "code_verifier": login.verifier,
    }
    fields.update(changes)
    return {k: v for k, v in fields.items() if v is not None}


def signed_in_code(browser: Browser, login: Login | None = None) -> tuple[Login, str]:
    login = login or Login()
    if not browser.cookies.get("tfe_registry_session"):
        browser.sign_in(ADMIN_TOKEN)
    return login, code_from(approve(browser, login), login)


# ----- discovery ----------------------------------------------------------------------------


def test_discovery_advertises_login_v1_with_paths_relative_to_the_document(api: Api):
    reply = api.as_(None).get("/.well-known/terraform.json")
    entry = reply.json["login.v1"]
    assert entry == oauth.LOGIN_V1
    assert entry["client"] == "terraform-cli" and entry["grant_types"] == ["authz_code"]
    assert entry["ports"] == [10000, 10010]
    # terraform resolves relative URLs against the discovery document's own URL.
    base = "https://registry.example.com/.well-known/terraform.json"
    assert urljoin(base, entry["authz"]) == "https://registry.example.com/app/oauth/authorize"
    assert urljoin(base, entry["token"]) == "https://registry.example.com/oauth/token"
    assert reply.json["modules.v1"] == "/api/registry/v1/modules/"


# ----- the authorization page ---------------------------------------------------------------


def test_without_a_session_the_browser_signs_in_and_comes_back_to_the_same_request(
    browser: Browser,
):
    login = Login()
    detour = browser.get(login.url)
    assert detour.status_code == 303
    assert detour.headers["Location"].startswith("/app/sign-in?next=")
    back = parse_qs(urlsplit(detour.headers["Location"]).query)["next"][0]
    assert urlsplit(back).path == oauth.AUTHZ_PATH
    assert parse_qs(urlsplit(back).query) == {k: [v] for k, v in login.params.items()}
    signed = browser.sign_in(ADMIN_TOKEN, next_=back)
    assert signed.status_code == 303 and signed.headers["Location"] == back
    page = browser.get(signed.headers["Location"])
    assert page.status_code == 200
    assert "Authorize terraform login" in page.text and "admin" in page.text
    assert 'value="approve"' in page.text and 'value="cancel"' in page.text
    fields = hidden_fields(page.text)
    assert fields["csrf_token"] and fields["state"] == login.state
    assert (
        fields["redirect_uri"] == REDIRECT
        and fields["code_challenge"] == login.params["code_challenge"]
    )
    policy = page.headers["Content-Security-Policy"]
    assert "form-action 'self' http://localhost:10003;" in policy
    assert "frame-ancestors 'none'" in policy and page.headers["Cache-Control"] == "no-store"


def test_the_consent_page_warns_of_tf_cli_config_file_and_gives_the_login_v1_block(
    browser: Browser,
):
    """``terraform login`` saves the token in ~/.terraform.d/credentials.tfrc.json, which
    terraform does not read while TF_CLI_CONFIG_FILE is set (init: 401): the page says so,
    and over plain HTTP gives the host block whose ``login.v1`` terraform needs."""
    browser.sign_in(ADMIN_TOKEN)
    page = browser.get(Login().url)
    assert page.status_code == 200
    note = html.unescape(page.text.split('id="tf-cli-config-file">', 1)[1].split("</p>", 1)[0])
    assert "TF_CLI_CONFIG_FILE" in note and "credentials.tfrc.json" in note and "401" in note
    assert 'credentials "registry.test" { token = "…" }' in note
    block = html.unescape(page.text.split('id="cli-config">', 1)[1].split("</code>", 1)[0])
    assert 'host "registry.test"' in block
    assert '"login.v1" = {' in block and 'client      = "terraform-cli"' in block
    assert 'authz       = "http://registry.test/app/oauth/authorize"' in block
    assert 'token       = "http://registry.test/oauth/token"' in block


@pytest.mark.parametrize(
    "changes",
    [
        {"client_id": "evil-cli"},
        {"redirect_uri": "https://evil.example/login"},
        {"redirect_uri": "http://localhost.evil.com:10003/login"},
        {"redirect_uri": "http://localhost@evil.com:10003/login"},
        {"redirect_uri": "http://localhost:10003@evil.com/login"},
        {"redirect_uri": "http://localhost:8080/login"},
        {"redirect_uri": "https://localhost:10003/login"},
        {"redirect_uri": "http://localhost:10003/login#x"},
        {"response_type": "token"},
        {"code_challenge_method": "plain"},
        {"state": ""},
    ],
)
def test_a_bad_request_is_a_400_page_that_never_redirects(
    browser: Browser, changes: dict[str, str]
):
    login = Login(**changes)
    for signed_in in (False, True):
        if signed_in:
            browser.sign_in(ADMIN_TOKEN)
        page = browser.get(login.url)
        assert page.status_code == 400, page.text
        assert "Location" not in page.headers and "not valid" in page.text
        assert "evil" not in page.headers.get("Content-Security-Policy", "")
        posted = browser.post(oauth.AUTHZ_PATH, {**login.params, "decision": "approve"})
        assert posted.status_code == 400 and "Location" not in posted.headers
    assert not list(LoginCodeModel.scan())


def test_a_team_token_cannot_log_a_user_in(api: Api, browser: Browser):
    make_org(api)
    _, team_token = make_team(api, "acme", "ci", manage_modules=True)
    browser.sign_in(team_token)
    login = Login()
    page = browser.get(login.url)
    assert page.status_code == 403 and "team token cannot log in" in page.text
    assert 'value="approve"' not in page.text
    csrf = re.search(r'name="csrf_token" value="([^"]+)"', page.text).group(1)
    posted = browser.post(
        oauth.AUTHZ_PATH, {**login.params, "csrf_token": csrf, "decision": "approve"}
    )
    assert posted.status_code == 403 and "Location" not in posted.headers
    assert not list(LoginCodeModel.scan())


def test_approving_needs_the_sessions_csrf_token(browser: Browser):
    browser.sign_in(ADMIN_TOKEN)
    login = Login()
    for forged in ({}, {"csrf_token": "forged-" + "x" * 40}):
        reply = browser.post(oauth.AUTHZ_PATH, {**login.params, **forged, "decision": "approve"})
        assert reply.status_code == 403 and "Location" not in reply.headers
    assert not list(LoginCodeModel.scan())


def test_a_session_that_ended_before_approving_signs_in_again(browser: Browser):
    login = Login()
    reply = browser.post(oauth.AUTHZ_PATH, {**login.params, "decision": "approve"})
    assert reply.status_code == 303
    next_ = parse_qs(urlsplit(reply.headers["Location"]).query)["next"][0]
    assert reply.headers["Location"].startswith("/app/sign-in?next=")
    assert dict(parse_qs(urlsplit(next_).query, keep_blank_values=True)) == {
        k: [v] for k, v in login.params.items()
    }


def test_the_largest_valid_request_survives_the_sign_in_detour(browser: Browser):
    """``next`` is capped (``view.MAX_NEXT_LENGTH``); the longest request terraform login may
    send, every character of its state percent-encoded, still comes back after signing in."""
    prefix = "http://localhost:10000/"
    path = ("a/" * 256)[: 256 - len(prefix) - 1] + "a"
    login = Login(prefix + path, state="%" * oauth.MAX_STATE_LENGTH)
    assert oauth.authorization_request(login.params)  # valid, at every limit
    detours = (
        browser.get(login.url),  # the page, no session
        browser.post(oauth.AUTHZ_PATH, {**login.params, "decision": "approve"}),  # the form
    )
    for detour in detours:
        back = parse_qs(urlsplit(detour.headers["Location"]).query)["next"][0]
        signed = Browser(browser.client).sign_in(ADMIN_TOKEN, next_=back)
        assert signed.status_code == 303 and signed.headers["Location"] == back


def test_cancel_tells_terraform_access_denied(browser: Browser):
    browser.sign_in(ADMIN_TOKEN)
    login = Login()
    reply = approve(browser, login, "cancel")
    assert reply.status_code == 303
    assert reply.headers["Location"] == (
        f"{REDIRECT}?{urlencode({'error': 'access_denied', 'state': login.state})}"
    )
    assert not list(LoginCodeModel.scan())


# ----- the code and the token endpoint ------------------------------------------------------


def test_the_whole_flow_gives_a_new_user_token_that_works(api: Api, browser: Browser):
    login, code = signed_in_code(browser)
    assert len(code) >= 43  # 256 random bits
    (stored,) = list(LoginCodeModel.scan())
    assert code not in json.dumps(stored.attribute_values, default=str)  # only its hash
    assert stored.code_hash == hashlib.sha256(code.encode()).hexdigest()
    lifetime = stored.expires - stored.created_at
    assert timedelta(seconds=55) <= lifetime <= timedelta(seconds=65)
    assert stored.redirect_uri == REDIRECT and stored.client_id == "terraform-cli"

    reply = exchange(api, token_request(login, code))
    assert reply.status == 200, reply.json
    assert set(reply.json) == {"access_token", "token_type"}
    assert reply.json["token_type"] == "bearer"
    token = reply.json["access_token"]
    assert token != ADMIN_TOKEN and ".atlasv1." in token

    me = api.as_(token).get("/api/v2/account/details")
    assert me.status == 200 and me.data["attributes"]["username"] == "admin"
    tokens = api.get(f"/api/v2/users/{me.data['id']}/authentication-tokens")
    descriptions = [t["attributes"]["description"] for t in tokens.data]
    assert any((d or "").startswith("terraform login (") for d in descriptions)
    assert api.as_(token).get("/api/v2/organizations").status == 200


def test_a_code_works_once_and_a_replay_revokes_the_token_it_gave(api: Api, browser: Browser):
    login, code = signed_in_code(browser)
    first = exchange(api, token_request(login, code))
    assert first.status == 200
    token = first.json["access_token"]
    replay = exchange(api, token_request(login, code))
    assert replay.status == 400 and replay.json["error"] == "invalid_grant"
    assert token not in replay.body.decode()
    from chalicelib.core.auth import verified

    verified.clear()  # as another instance would see it
    assert api.as_(token).get("/api/v2/organizations").status == 401


def test_a_wrong_verifier_is_refused_and_burns_the_code(api: Api, browser: Browser):
    login, code = signed_in_code(browser)
    wrong = exchange(api, token_request(login, code, code_verifier=verifier()))
    assert wrong.status == 400 and wrong.json["error"] == "invalid_grant"
    assert "code_verifier" in wrong.json["error_description"]
    again = exchange(api, token_request(login, code))
    assert again.status == 400 and again.json["error"] == "invalid_grant"


def test_a_wrong_redirect_uri_or_an_expired_code_is_refused(
    api: Api, browser: Browser, monkeypatch: pytest.MonkeyPatch
):
    login, code = signed_in_code(browser)
    other = exchange(api, token_request(login, code, redirect_uri="http://localhost:10004/login"))
    assert other.status == 400 and other.json["error"] == "invalid_grant"

    login, code = signed_in_code(browser)
    later = now() + timedelta(seconds=oauth.CODE_SECONDS + 1)
    monkeypatch.setattr(oauth, "now", lambda: later)
    expired = exchange(api, token_request(login, code))
    assert expired.status == 400 and expired.json["error"] == "invalid_grant"
    assert "expired" in expired.json["error_description"]


def test_the_client_must_be_terraform_cli_and_that_does_not_burn_the_code(
    api: Api, browser: Browser
):
    login, code = signed_in_code(browser)
    for client in ("evil-cli", None):
        refused = exchange(api, token_request(login, code, client_id=client))
        assert refused.status == 401 and refused.json["error"] == "invalid_client"
    # A client may name itself in a Basic header instead (RFC 6749 section 2.3.1).
    basic = base64.b64encode(b"terraform-cli:").decode()
    reply = api.as_(None).call(
        "POST",
        oauth.TOKEN_PATH,
        raw=urlencode(token_request(login, code, client_id=None)),
        content_type="application/x-www-form-urlencoded",
        headers={"Authorization": f"Basic {basic}"},
    )
    assert reply.status == 200 and reply.json["token_type"] == "bearer"


@pytest.mark.parametrize(
    ("fields", "error"),
    [
        ({"grant_type": None}, "invalid_request"),
        ({"grant_type": "password"}, "unsupported_grant_type"),
        ({"grant_type": "client_credentials"}, "unsupported_grant_type"),
        ({"code": None}, "invalid_request"),
        ({"redirect_uri": None}, "invalid_request"),
        ({"code_verifier": None}, "invalid_request"),
        ({"code_verifier": "short"}, "invalid_request"),
        ({"code": "not-a-code"}, "invalid_grant"),
        ({"code": "x" * 5000}, "invalid_grant"),
    ],
)
def test_token_endpoint_errors_are_oauth_json(api: Api, fields: dict[str, str | None], error: str):
    login = Login()
    request = {**token_request(login, "unknown-code"), **fields}
    reply = exchange(api, {k: v for k, v in request.items() if v is not None})
    assert reply.status == 400 and reply.json["error"] == error, reply.json
    assert reply.json["error_description"]


@pytest.mark.parametrize(
    "raw",
    [
        "",
        "%%%",
        "grant_type=authorization_code&grant_type=authorization_code",
        "\x00\xff",
        "code=" + "%E9" * 10,
    ],
)
def test_garbage_bodies_are_a_400_never_a_500(api: Api, raw: str):
    reply = exchange(api, {}, raw=raw)
    assert reply.status == 400 and reply.json["error"] in ("invalid_request", "invalid_grant")


def test_the_token_never_reaches_a_log(
    api: Api, browser: Browser, caplog: pytest.LogCaptureFixture
):
    caplog.set_level("DEBUG")
    login, code = signed_in_code(browser)
    token = exchange(api, token_request(login, code)).json["access_token"]
    assert token not in caplog.text and code not in caplog.text
