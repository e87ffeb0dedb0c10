"""Site administration through the real local stack (moto server + local API server).

The stack here is this module's own: it needs a short SMTP timeout and the SMS provider's
base URL pointed at a local stand-in, both read from the environment at start.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import pytest
import requests

from infrastructure import spawn
from tests.support.admin_servers import (
    SMTP_PASSWORD,
    SMTP_USER,
    SmsProvider,
    self_signed_certificate,
    silent_server,
    sms_provider,
    smtp_server,
)

TOKEN = "e2e-admin-settings-token"
SMS_TOKEN = "e2e-sms-token-never-shown"
COST_SECRET = "e2e-aws-secret-never-shown"
SAML_KEY = "e2e-saml-key-never-shown"
SECRETS = (SMTP_PASSWORD, SMS_TOKEN, COST_SECRET, SAML_KEY)


class Site:
    def __init__(self, url: str, provider: SmsProvider) -> None:
        self.url = url
        self.provider = provider
        self.http = requests.Session()
        self.http.headers.update(
            {"Content-Type": "application/vnd.api+json", "Authorization": f"Bearer {TOKEN}"}
        )
        self.bodies: list[str] = []

    def call(self, method: str, path: str, attributes: Any = None, **kw: Any) -> Any:
        body = None if attributes is None else {"data": {"type": "", "attributes": attributes}}
        url = path if path.startswith("http") else f"{self.url}/api/v2{path}"
        response = self.http.request(method, url, json=body, timeout=30, **kw)
        self.bodies.append(response.text)
        return response


@pytest.fixture(scope="module")
def site() -> Iterator[Site]:
    with sms_provider("AC-e2e", SMS_TOKEN) as provider:
        running = spawn.start(
            TOKEN,
            REGISTRY_SMTP_TIMEOUT="0.5",
            REGISTRY_SMS_API_URL=provider.url,
            REGISTRY_RATE_LIMITING="on",
        )
        site = Site(running.url, provider)
        try:
            yield site
        finally:
            output = spawn.stop(running)
        assert "stopped" in output
        everything = output + "\n".join(site.bodies)
        for secret in SECRETS:
            assert secret not in everything  # neither in a response nor in the log


def attributes(response: Any) -> dict[str, Any]:
    assert response.status_code == 200, response.text
    return response.json()["data"]["attributes"]


def test_non_admins_get_404(site: Site) -> None:
    org = {"data": {"type": "organizations", "attributes": {"name": "adm", "email": "a@x.io"}}}
    assert site.http.post(f"{site.url}/api/v2/organizations", json=org).status_code == 201
    team = site.call("POST", "/organizations/adm/teams", {"name": "ops"}).json()["data"]["id"]
    token = site.call("POST", f"/teams/{team}/authentication-token").json()["data"]
    outsider = {"Authorization": f"Bearer {token['attributes']['token']}"}
    for path in ("general-settings", "smtp-settings", "twilio-settings", "saml-settings"):
        assert site.call("GET", f"/admin/{path}", headers=outsider).status_code == 404
    reply = site.call("POST", "/admin/oidc-settings/actions/rotate-key", headers=outsider)
    assert reply.status_code == 404
    assert reply.json()["errors"][0]["status"] == "404"


def test_smtp_test_message_credentials_and_timeout(site: Site) -> None:
    update = {
        "enabled": True,
        "host": "127.0.0.1",
        "sender": "registry@example.test",
        "auth": "login",
        "username": SMTP_USER,
        "password": SMTP_PASSWORD,
        "test-email-address": "ops@example.test",
    }
    with smtp_server() as (port, mailbox):
        saved = attributes(site.call("PATCH", "/admin/smtp-settings", {**update, "port": port}))
        assert saved["port"] == port and saved["auth"] == "login"
        assert "password" not in saved and "test-email-address" not in saved
        assert len(mailbox.messages) == 1 and mailbox.logins == ["LOGIN"]
        assert mailbox.messages[0]["To"] == "ops@example.test"

    with smtp_server(accept_credentials=False) as (port, mailbox):
        refused = site.call("PATCH", "/admin/smtp-settings", {**update, "port": port})
        assert refused.status_code == 401, refused.text
        assert mailbox.messages == []

    with silent_server() as port:
        started = time.monotonic()
        timed_out = site.call("PATCH", "/admin/smtp-settings", {**update, "port": port})
        assert timed_out.status_code == 504, timed_out.text
        assert time.monotonic() - started < 5

    # neither failure changed the saved settings
    assert attributes(site.call("GET", "/admin/smtp-settings")) == saved


def test_sms_verify_sends_through_the_provider(site: Site) -> None:
    settings = {
        "enabled": True,
        "account-sid": "AC-e2e",
        "auth-token": SMS_TOKEN,
        "from-number": "+15550199",
    }
    saved = attributes(site.call("PATCH", "/admin/twilio-settings", settings))
    assert saved == {"enabled": True, "account-sid": "AC-e2e", "from-number": "+15550199"}
    assert site.call("POST", "/admin/sms-settings/verify", {}).status_code == 400
    for method, number in (("POST", "+15550100"), ("PATCH", "+15550101")):
        reply = site.call(method, "/admin/twilio-settings/verify", {"test-number": number})
        assert reply.status_code == 200, reply.text
    assert [(m["To"], m["From"]) for m in site.provider.sent] == [
        ("+15550100", "+15550199"),
        ("+15550101", "+15550199"),
    ]
    assert attributes(site.call("PATCH", "/admin/sms-settings", {"enabled": False}))
    disabled = site.call("POST", "/admin/sms-settings/verify", {"test-number": "+15550100"})
    assert disabled.status_code == 400
    assert len(site.provider.sent) == 2


def test_settings_areas_round_trip(site: Site) -> None:
    general = attributes(site.call("PATCH", "/admin/general-settings", {"plan-timeout": "30m"}))
    assert general["plan-timeout"] == "30m" and general["apply-timeout"] == "24h"
    bad = site.call("PATCH", "/admin/general-settings", {"plan-timeout": "1h", "api-rate-limit": 5})
    assert bad.status_code == 422
    assert attributes(site.call("GET", "/admin/general-settings"))["plan-timeout"] == "30m"

    cost = {"enabled": True, "aws-access-key-id": "AKIA", "aws-secret-key": COST_SECRET}
    saved = attributes(site.call("PATCH", "/admin/cost-estimation-settings", cost))
    assert saved["aws-enabled"] is True and saved["aws-secret-key"] is None

    cert = self_signed_certificate()
    saml = attributes(
        site.call(
            "PATCH",
            "/admin/saml-settings",
            {
                "enabled": True,
                "idp-cert": cert,
                "sso-endpoint-url": "https://idp.example.test/sso",
                "slo-endpoint-url": "https://idp.example.test/slo",
            },
        )
    )
    assert saml["idp-cert"] == cert
    assert saml["acs-consumer-url"] == f"{site.url}/users/saml/auth"
    assert saml["metadata-url"] == f"{site.url}/users/saml/metadata"

    # go-tfe's and terrasnek's placeholder certificates are stored as given; the key never shows
    placeholder = {
        "idp-cert": "testCert",
        "certificate": "testCert",
        "private-key": SAML_KEY,
        "signature-signing-method": "SHA1",
        "signature-digest-method": "SHA1",
        "team-management-enabled": True,
        "provider-type": "entra",
    }
    saml = attributes(site.call("PATCH", "/admin/saml-settings", placeholder))
    assert saml["idp-cert"] == "testCert" and saml["old-idp-cert"] == cert
    assert saml["certificate"] == "testCert" and saml["private-key"] is None
    assert saml["signature-signing-method"] == "SHA1" and saml["provider-type"] == "entra"
    assert saml["team-management-enabled"] is True and saml["enabled"] is True
    bad = site.call("PATCH", "/admin/saml-settings", {"signature-digest-method": "SHA1234"})
    assert bad.status_code == 422, bad.text
    assert bad.json()["errors"][0]["source"]["pointer"] == (
        "/data/attributes/signature-digest-method"
    )
    revoked = site.call("POST", "/admin/saml-settings/actions/revoke-old-certificate")
    assert revoked.status_code == 200, revoked.text
    assert revoked.json()["data"]["attributes"]["old-idp-cert"] is None
    assert all(SAML_KEY not in text for text in site.bodies)

    custom = site.call("PATCH", "/admin/customization-settings", {"footer": "<b>Ops</b>"})
    assert "\\u003cb\\u003eOps" in custom.text and custom.json()["data"]["attributes"]["footer"]

    policy = site.call(
        "POST", "/admin/data-retention-policy-settings", {"deleteOlderThanNDays": 14}
    )
    assert policy.status_code == 201, policy.text
    assert policy.json()["data"]["attributes"] == {"delete-older-than-n-days": 14}
    assert site.call("DELETE", "/admin/data-retention-policy-settings").status_code == 204
    assert site.call("GET", "/admin/data-retention-policy-settings").status_code == 404


def jwks_kids(site: Site) -> list[str]:
    reply = requests.get(f"{site.url}/.well-known/jwks", timeout=10)
    assert reply.status_code == 200
    return [key["kid"] for key in reply.json()["keys"]]


def test_jwks_changes_on_rotate_and_trim(site: Site) -> None:
    before = jwks_kids(site)
    assert site.call("POST", "/admin/oidc-settings/actions/rotate-key").status_code == 204
    rotated = jwks_kids(site)
    assert len(rotated) == len(before) + 1 and rotated[1:] == before
    assert site.call("POST", "/admin/oidc-settings/actions/trim-key").status_code == 204
    assert jwks_kids(site) == [rotated[0]]


def test_rate_limit_429_then_recovery(site: Site) -> None:
    limit = 31
    reply = site.call("PATCH", "/admin/general-settings", {"api-rate-limit": limit})
    assert attributes(reply)["api-rate-limit"] == limit
    ping = f"{site.url}/api/v2/ping"
    assert site.http.get(ping).headers["X-RateLimit-Limit"] == str(limit)

    limited = None
    deadline = time.monotonic() + 10
    while limited is None and time.monotonic() < deadline:
        time.sleep(1 - time.time() % 1 + 0.01)  # start at the beginning of a window
        window = int(time.time())
        replies = []
        while int(time.time()) == window and len(replies) <= limit:
            replies.append(site.http.get(ping))
        statuses = [r.status_code for r in replies]
        if 429 in statuses:
            assert statuses.index(429) == limit, statuses
            limited = replies[statuses.index(429)]
    assert limited is not None, "never reached the limit within one second"
    error = limited.json()["errors"][0]
    assert error["status"] == "429" and "rate limit" in error["detail"]
    assert limited.headers["Retry-After"] == "1"
    assert limited.headers["X-RateLimit-Remaining"] == "0"
    reset = float(limited.headers["X-RateLimit-Reset"])
    assert 0 <= reset <= 1
    time.sleep(reset + 0.02)
    recovered = site.http.get(ping)
    assert recovered.status_code == 204
    assert int(recovered.headers["X-RateLimit-Remaining"]) >= limit - 2

    # switched off: no limit, no rate-limit headers
    off = site.call("PATCH", "/admin/general-settings", {"api-rate-limiting-enabled": False})
    assert off.status_code == 200
    statuses = {site.http.get(ping).status_code for _ in range(limit + 5)}
    assert statuses == {204}
    assert "X-RateLimit-Limit" not in site.http.get(ping).headers


def test_general_settings_through_go_tfe_shaped_null_body(site: Site) -> None:
    body = {"data": {"type": "", "attributes": {"plan-timeout": None, "apply-timeout": None}}}
    reply = site.http.patch(f"{site.url}/api/v2/admin/general-settings", data=json.dumps(body))
    assert reply.status_code == 200, reply.text
