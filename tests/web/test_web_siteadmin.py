"""Site administration pages (``/app/admin``) in-process: every form saves through the
admin services (what the API then shows), refuses a bad value with the API's own message
and changes nothing, needs its CSRF token, and is 404 for anyone but a site admin; no
stored secret ever reaches a page. The SMTP test mail goes to a real local SMTP server.

The browser tests (Chromium, axe-core, a 390 px phone) are in tests/e2e/test_siteadmin_e2e.py.
"""

from __future__ import annotations

import html
import json
import re
from typing import Any

import pytest

from chalicelib.accounts.users import service as users_service
from chalicelib.admin import store
from tests.admin.helpers import admin_id, make_user
from tests.conftest import ADMIN_TOKEN, Api, doc, make_org
from tests.support.admin_servers import SMTP_PASSWORD, SMTP_USER, sms_provider, smtp_server
from tests.support.web_browser import Browser

ADMIN_API = "/api/v2/admin"
PEM = "-----BEGIN CERTIFICATE-----\nMIIBidpcert\n-----END CERTIFICATE-----"
SAML_FORM = {
    "enabled": "on",
    "sso-endpoint-url": "https://idp.example.test/sso",
    "slo-endpoint-url": "https://idp.example.test/slo",
    "idp-cert": PEM,
    "provider-type": "okta",
    "attr-username": "Username",
    "attr-groups": "MemberOf",
    "attr-site-admin": "SiteAdmin",
    "site-admin-role": "site-admins",
    "sso-api-token-session-timeout": "3600",
    "signature-signing-method": "SHA256",
    "signature-digest-method": "SHA1",
}
# Each area: a good form, what the API then shows, a bad value and the API body sending it.
SAVES: dict[str, tuple[dict[str, str], str, dict[str, Any]]] = {
    "general": (
        {"api-rate-limiting-enabled": "on", "api-rate-limit": "45", "plan-timeout": "3h"},
        "general-settings",
        {"api-rate-limit": 45, "api-rate-limiting-enabled": True, "plan-timeout": "3h"},
    ),
    "saml": (
        SAML_FORM,
        "saml-settings",
        {"enabled": True, "idp-cert": PEM, "provider-type": "okta", "debug": False},
    ),
    "sms": (
        {"enabled": "on", "account-sid": "AC123", "from-number": "+15555550100", "auth-token": "t"},
        "sms-settings",
        {"enabled": True, "account-sid": "AC123", "from-number": "+15555550100"},
    ),
    "cost-estimation": (
        {"enabled": "on", "cloud-a-access-key-id": "AKIA1", "cloud-a-secret-key": "s3cr3t"},
        "cost-estimation-settings",
        {"enabled": True, "aws-enabled": True, "aws-access-key-id": "AKIA1"},
    ),
    "customization": (
        {"support-email-address": "help@example.test", "footer": "Run by **ops**"},
        "customization-settings",
        {"support-email-address": "help@example.test", "footer": "Run by **ops**"},
    ),
}
BAD: dict[str, tuple[dict[str, str], str, dict[str, Any]]] = {
    "general": ({"api-rate-limit": "10"}, "general-settings", {"api-rate-limit": 10}),
    "general-type": ({"api-rate-limit": "lots"}, "general-settings", {"api-rate-limit": "lots"}),
    "general-duration": ({"plan-timeout": "soon"}, "general-settings", {"plan-timeout": "soon"}),
    "saml": (
        {**SAML_FORM, "sso-endpoint-url": "http://idp.example.test/sso"},
        "saml-settings",
        {"enabled": True, "sso-endpoint-url": "http://idp.example.test/sso"},
    ),
    "smtp": ({"sender": "not-an-address"}, "smtp-settings", {"sender": "not-an-address"}),
    "sms": ({"from-number": "call me"}, "sms-settings", {"from-number": "call me"}),
    "cost-estimation": ({"enabled": "on"}, "cost-estimation-settings", {"enabled": True}),
    "customization": (
        {"support-email-address": "nobody"},
        "customization-settings",
        {"support-email-address": "nobody"},
    ),
}
SECRETS = {
    "smtp-settings": {"password": "smtp-secret-Zq81"},
    "sms-settings": {"auth-token": "sms-secret-Kw27"},
    "cost-estimation-settings": {
        "cloud-a-secret-key": "aws-secret-Pm55",
        "cloud-b-credentials": json.dumps({"private_key": "gcp-secret-Rt90"}),
        "cloud-c-client-secret": "azure-secret-Lx44",
    },
    "saml-settings": {"private-key": "saml-key-Hv63"},
}
AREAS = ("general", "saml", "smtp", "sms", "cost-estimation", "customization")
PAGES = (
    "/app/admin",
    "/app/admin/users",
    "/app/admin/organizations",
    *(f"/app/admin/settings/{area}" for area in AREAS),
    "/app/admin/scim",
    "/app/admin/oidc",
    "/app/admin/audit-trail",
)


@pytest.fixture
def admin(api: Api) -> Browser:
    browser = Browser(api.client)
    assert browser.sign_in(ADMIN_TOKEN).status_code == 303
    return browser


def text(reply: Any) -> str:
    return html.unescape(reply.text)


def form_of(browser: Browser, path: str, **fields: str) -> dict[str, str]:
    return {"csrf_token": browser.csrf(path), **fields}


def shown(api: Api, area: str) -> dict[str, Any]:
    reply = api.get(f"{ADMIN_API}/{area}")
    assert reply.status == 200, reply.json
    return reply.data["attributes"]


def settings_items() -> list[tuple[str, str]]:
    return sorted(
        (i.id, json.dumps([i.values, i.secrets], sort_keys=True))
        for i in store.SettingsModel.scan()
    )


# ----- who may see it ---------------------------------------------------------------------------


def test_a_non_admin_gets_404_on_every_page_and_post(api: Api, admin: Browser):
    make_org(api, "acme")
    user_id, token = make_user("mallory")
    browser = Browser(api.client)
    assert browser.sign_in(token).status_code == 303
    csrf = browser.csrf("/app/organizations")
    assert "Site administration" not in browser.get("/app/organizations").text
    assert "/app/admin" in admin.get("/app/organizations").text  # the admin's header links it
    before = (settings_items(), [(u.username, u.is_site_admin) for u in users_service.all_users()])
    posts = [f"/app/admin/settings/{area}" for area in AREAS] + [
        "/app/admin/settings/smtp/test-mail",
        "/app/admin/settings/sms/test-message",
        "/app/admin/settings/saml/revoke-old-certificate",
        f"/app/admin/users/{user_id}/grant_admin",
        f"/app/admin/users/{admin_id()}/suspend",
        f"/app/admin/users/{admin_id()}/delete",
        "/app/admin/organizations/acme/module-sharing",
        "/app/admin/scim",
        "/app/admin/scim/tokens",
        "/app/admin/oidc/rotate",
        "/app/admin/oidc/trim",
    ]
    gets = [*PAGES, f"/app/admin/users/{user_id}/grant_admin", "/app/admin/organizations/acme"]
    for path in gets:
        assert browser.get(path).status_code == 404, path
    for path in posts:
        reply = browser.post(path, {"csrf_token": csrf, "enabled": "on", "global": "on"})
        assert reply.status_code == 404, path
    assert (
        settings_items(),
        [(u.username, u.is_site_admin) for u in users_service.all_users()],
    ) == (before)
    # Without a session: to the sign-in page, as every page of the UI.
    assert Browser(api.client).get("/app/admin/users").status_code == 303


def test_the_hosted_edition_has_no_site_administration(admin: Browser, hosted: None):
    for path in PAGES:
        assert admin.get(path).status_code == 404, path


# ----- settings forms ---------------------------------------------------------------------------


@pytest.mark.parametrize("area", sorted(SAVES))
def test_a_saved_form_is_what_the_api_then_shows(api: Api, admin: Browser, area: str):
    fields, api_area, expected = SAVES[area]
    path = f"/app/admin/settings/{area}"
    reply = admin.post(path, form_of(admin, path, **fields))
    assert reply.status_code == 303 and reply.headers["Location"] == path + "?saved=1"
    attributes = shown(api, api_area)
    assert {k: attributes[k] for k in expected} == expected
    page = admin.get(path + "?saved=1")
    assert "Saved." in page.text


SAVE_BUTTONS = {
    "general": "Save general settings",
    "saml": "Save SAML settings",
    "smtp": "Save outgoing mail settings",
    "sms": "Save SMS settings",
    "cost-estimation": "Save cost estimation settings",
    "customization": "Save customization",
}


@pytest.mark.parametrize("area", sorted(SAVE_BUTTONS))
def test_each_settings_area_saves_with_a_button_that_says_what_it_saves(admin: Browser, area: str):
    page = admin.get(f"/app/admin/settings/{area}")
    buttons = re.findall(r'<button type="submit" class="primary">([^<]*)</button>', page.text)
    assert buttons == [SAVE_BUTTONS[area]]


def test_an_unchecked_box_saves_false_and_an_empty_duration_keeps_its_value(
    api: Api, admin: Browser
):
    path = "/app/admin/settings/general"
    admin.post(path, form_of(admin, path, **SAVES["general"][0]))
    admin.post(path, form_of(admin, path, **{"api-rate-limit": "45", "plan-timeout": ""}))
    attributes = shown(api, "general-settings")
    assert attributes["api-rate-limiting-enabled"] is False
    assert attributes["plan-timeout"] == "3h"


@pytest.mark.parametrize("case", sorted(BAD))
def test_a_bad_value_shows_the_apis_message_and_changes_nothing(
    api: Api, admin: Browser, case: str
):
    fields, api_area, body = BAD[case]
    area = case.split("-type")[0].split("-duration")[0]
    path = f"/app/admin/settings/{area}"
    before = settings_items()
    reply = admin.post(path, form_of(admin, path, **fields))
    assert reply.status_code == 422
    assert settings_items() == before
    refused = api.patch(f"{ADMIN_API}/{api_area}", doc(api_area, **body))
    assert refused.status == 422, refused.json
    assert settings_items() == before
    message = refused.error["detail"]
    assert f"Not saved: {message}" in text(reply), (message, text(reply)[-2000:])
    assert 'name="csrf_token"' in reply.text  # the form again, to correct


@pytest.mark.parametrize(
    "path",
    [f"/app/admin/settings/{area}" for area in AREAS]
    + [
        "/app/admin/settings/smtp/test-mail",
        "/app/admin/settings/saml/revoke-old-certificate",
        "/app/admin/scim",
        "/app/admin/scim/tokens",
        "/app/admin/oidc/rotate",
        "/app/admin/organizations/acme/module-sharing",
        "/app/admin/users/{user}/suspend",
        "/app/admin/users/{user}/delete",
    ],
)
def test_a_form_without_its_csrf_token_is_refused_and_changes_nothing(
    api: Api, admin: Browser, path: str
):
    make_org(api, "acme")
    make_org(api, "beta")
    user_id, _ = make_user("victim")
    path = path.format(user=user_id)
    admin.get("/app/admin/oidc")  # the first key exists before the snapshot
    before = (settings_items(), [(u.username, u.suspended) for u in users_service.all_users()])
    fields = {"enabled": "on", "footer": "x", "global": "on", "consumers": "beta"}
    for form in (fields, {**fields, "csrf_token": "forged"}):
        reply = admin.post(path, form)
        assert reply.status_code == 403, reply.text
    assert (
        settings_items(),
        [(u.username, u.suspended) for u in users_service.all_users()],
    ) == before
    sharing = api.get(f"{ADMIN_API}/organizations/acme").data
    assert sharing["attributes"]["global-module-sharing"] is False
    assert sharing["relationships"]["module-consumers"]["data"] == []


def test_secrets_are_write_only_on_every_page(api: Api, admin: Browser):
    """Secrets set through the API never appear in any admin page; an empty field keeps a
    secret, "remove" clears it."""
    make_org(api, "acme")
    for area, values in SECRETS.items():
        reply = api.patch(f"{ADMIN_API}/{area}", doc(area, **values))
        assert reply.status == 200, reply.json
    secrets = [v for values in SECRETS.values() for v in values.values()]
    secrets += ["gcp-secret-Rt90"]
    for path in (*PAGES, "/app/admin/organizations/acme"):
        page = admin.get(path)
        assert page.status_code == 200, path
        for secret in secrets:
            assert secret not in page.text and secret not in text(page), (path, secret)
    page = admin.get("/app/admin/settings/cost-estimation")
    assert page.text.count("leave empty to keep it") == 3
    assert 'name="cloud-a-secret-key-remove"' in page.text
    # Saving with the field empty keeps it; "remove" clears it.
    path = "/app/admin/settings/sms"
    admin.post(path, form_of(admin, path, **{"account-sid": "AC9"}))
    assert "auth-token" in (store.load("sms").secrets or {})
    admin.post(path, form_of(admin, path, **{"auth-token-remove": "on"}))
    assert "auth-token" not in (store.load("sms").secrets or {})
    assert "not set" in admin.get(path).text
    # A refused form shows what was sent again, but never a secret typed into it.
    path = "/app/admin/settings/smtp"
    fields = {"sender": "not-an-address", "password": "typed-secret-Gg31", "host": "mail.test"}
    refused = admin.post(path, form_of(admin, path, **fields))
    assert refused.status_code == 422 and 'value="mail.test"' in refused.text
    assert "typed-secret-Gg31" not in refused.text


# ----- SMTP and its test mail -------------------------------------------------------------------


def test_smtp_saved_enabled_sends_a_test_mail_and_the_test_button_sends_another(
    api: Api, admin: Browser
):
    path = "/app/admin/settings/smtp"
    with smtp_server() as (port, mailbox):
        fields = {
            "enabled": "on",
            "host": "127.0.0.1",
            "port": str(port),
            "sender": "registry@example.test",
            "auth": "plain",
            "username": SMTP_USER,
            "password": SMTP_PASSWORD,
            "test-email-address": "ops@example.test",
        }
        reply = admin.post(path, form_of(admin, path, **fields))
        assert reply.status_code == 303, text(reply)[-2000:]
        assert mailbox.envelopes == [("registry@example.test", ["ops@example.test"])]
        assert shown(api, "smtp-settings")["host"] == "127.0.0.1"
        page = admin.get(path)
        assert SMTP_PASSWORD not in page.text and "leave empty to keep it" in page.text
        sent = admin.post(
            path + "/test-mail", form_of(admin, path, recipient="someone@example.test")
        )
        assert sent.status_code == 200
        assert "Sent to someone@example.test." in sent.text
        assert mailbox.envelopes[-1] == ("registry@example.test", ["someone@example.test"])
        assert mailbox.messages[-1]["Subject"].startswith("Test message")
        assert mailbox.logins == ["PLAIN", "PLAIN"]  # the stored, sealed password
        bad = admin.post(path + "/test-mail", form_of(admin, path, recipient="nope"))
        assert bad.status_code == 422 and "test-email-address must be an email address" in bad.text
        mailbox.reject_data = True
        failed = admin.post(path + "/test-mail", form_of(admin, path, recipient="a@example.test"))
        assert failed.status_code == 502 and "Not sent:" in failed.text
    assert len(mailbox.messages) == 2


def test_smtp_refused_credentials_show_the_error_and_store_nothing(admin: Browser):
    path = "/app/admin/settings/smtp"
    before = settings_items()
    with smtp_server(accept_credentials=False) as (port, mailbox):
        fields = {
            "enabled": "on",
            "host": "127.0.0.1",
            "port": str(port),
            "sender": "registry@example.test",
            "auth": "login",
            "username": SMTP_USER,
            "password": "wrong-password-Qa1",
            "test-email-address": "ops@example.test",
        }
        reply = admin.post(path, form_of(admin, path, **fields))
    assert reply.status_code == 502 and "Not saved:" in reply.text
    assert "wrong-password-Qa1" not in reply.text
    assert settings_items() == before and mailbox.messages == []


def test_the_test_mail_needs_smtp_enabled(admin: Browser):
    path = "/app/admin/settings/smtp"
    reply = admin.post(path + "/test-mail", form_of(admin, path, recipient="a@example.test"))
    assert reply.status_code == 422 and "SMTP is not enabled" in reply.text


def test_the_test_sms_goes_through_the_saved_settings(
    admin: Browser, monkeypatch: pytest.MonkeyPatch
):
    from chalicelib.core.settings import get_settings

    path = "/app/admin/settings/sms"
    refused = admin.post(path + "/test-message", form_of(admin, path, **{"test-number": "+1555"}))
    assert refused.status_code == 422
    assert "invalid verification settings: SMS is disabled" in text(refused)
    with sms_provider("AC123", "sms-token-Yu12") as provider:
        monkeypatch.setenv("REGISTRY_SMS_API_URL", provider.url)
        get_settings.cache_clear()
        fields = {"enabled": "on", "account-sid": "AC123", "from-number": "+15550199"}
        saved = admin.post(path, form_of(admin, path, **fields, **{"auth-token": "sms-token-Yu12"}))
        assert saved.status_code == 303
        sent = admin.post(
            path + "/test-message", form_of(admin, path, **{"test-number": "+15550100"})
        )
        assert sent.status_code == 200 and "Sent to +15550100." in sent.text
        assert [m["To"] for m in provider.sent] == ["+15550100"]
        assert "sms-token-Yu12" not in sent.text
    monkeypatch.undo()
    get_settings.cache_clear()


def test_saml_page_shows_the_sp_urls_the_api_shows(api: Api, admin: Browser):
    page = admin.get("/app/admin/settings/saml")
    same_host = api.call("GET", f"{ADMIN_API}/saml-settings", headers={"Host": "registry.test"})
    attributes = same_host.data["attributes"]
    assert attributes["acs-consumer-url"] == "http://registry.test/users/saml/auth"
    assert f'<code id="acs-url">{attributes["acs-consumer-url"]}</code>' in page.text
    assert f'<code id="metadata-url">{attributes["metadata-url"]}</code>' in page.text
    # A replaced IdP certificate can be revoked from the page.
    path = "/app/admin/settings/saml"
    admin.post(path, form_of(admin, path, **SAML_FORM))
    admin.post(path, form_of(admin, path, **{**SAML_FORM, "idp-cert": PEM + "\nnew"}))
    assert shown(api, "saml-settings")["old-idp-cert"] == PEM
    assert "Revoke the old certificate" in admin.get(path).text
    reply = admin.post(path + "/revoke-old-certificate", form_of(admin, path))
    assert reply.status_code == 303
    assert shown(api, "saml-settings")["old-idp-cert"] is None


def test_customization_saved_shows_in_the_footer(admin: Browser):
    path = "/app/admin/settings/customization"
    admin.post(path, form_of(admin, path, footer="Operated by **the platform team**"))
    page = admin.get("/app/organizations")  # this instance's save forgot the cached texts
    assert "Operated by <strong>the platform team</strong>" in page.text


# ----- users --------------------------------------------------------------------------------------


def test_users_search_filters_and_pages(admin: Browser):
    for n in range(23):
        make_user(f"user{n:02d}")
    make_user("zed", admin=True)
    page = admin.get("/app/admin/users?q=user")
    assert "23 users" in page.text and "user00" in page.text and "user20" not in page.text
    assert "Page 1 of 2" in page.text
    second = admin.get("/app/admin/users?q=user&page=2")
    assert "user22" in second.text and "user00" not in second.text
    admins = admin.get("/app/admin/users?admin=true")
    assert "2 users" in admins.text and ">zed<" in admins.text
    assert admin.get("/app/admin/users?admin=maybe").status_code == 400
    assert admin.get("/app/admin/users?page=9").status_code == 404
    # A wide table scrolls in its own keyboard stop.
    assert re.search(r'class="scroll-box" tabindex="0" role="region" aria-label="Users', page.text)


def test_suspend_confirm_then_unsuspend(api: Api, admin: Browser):
    user_id, token = make_user("alice")
    confirm = admin.get(f"/app/admin/users/{user_id}/suspend")
    assert confirm.status_code == 200 and "Suspend alice?" in confirm.text
    assert not users_service.get_user(user_id).suspended  # the GET changed nothing
    path = f"/app/admin/users/{user_id}/suspend"
    reply = admin.post(path, form_of(admin, path))
    assert reply.status_code == 303
    assert users_service.get_user(user_id).suspended
    assert api.as_(token).get("/api/v2/account/details").status == 401
    listed = admin.get(reply.headers["Location"])
    assert "alice: suspended." in listed.text
    shown_user = api.get(f"{ADMIN_API}/users?q=alice").data[0]["attributes"]
    assert shown_user["is-suspended"] is True
    path = f"/app/admin/users/{user_id}/unsuspend"
    admin.post(path, form_of(admin, path))
    assert api.get(f"{ADMIN_API}/users?q=alice").data[0]["attributes"]["is-suspended"] is False


def test_the_last_admin_refusal_is_shown_and_changes_nothing(api: Api, admin: Browser):
    me = admin_id()
    for action in ("suspend", "revoke_admin", "delete"):
        path = f"/app/admin/users/{me}/{action}"
        reply = admin.post(path, form_of(admin, path))
        assert reply.status_code == 422
        refused = api.post(f"{ADMIN_API}/users/{me}/actions/{action}")
        if action == "delete":
            refused = api.delete(f"{ADMIN_API}/users/{me}")
        assert f"Refused: {refused.error['detail']}" in text(reply)
    user = users_service.get_user(me)
    assert user.is_site_admin and not user.suspended


def test_grant_revoke_admin_disable_two_factor_and_delete(api: Api, admin: Browser):
    user_id, _ = make_user("bob")
    for action in ("grant_admin", "revoke_admin", "disable_two_factor", "delete"):
        path = f"/app/admin/users/{user_id}/{action}"
        assert admin.get(path).status_code == 200
        assert admin.post(path, form_of(admin, path)).status_code == 303, action
        if action == "grant_admin":
            assert users_service.get_user(user_id).is_site_admin
        if action == "revoke_admin":
            assert not users_service.get_user(user_id).is_site_admin
    assert api.get(f"{ADMIN_API}/users?q=bob").data == []
    assert admin.get(f"/app/admin/users/{user_id}/delete").status_code == 404
    assert admin.get(f"/app/admin/users/{admin_id()}/explode").status_code == 404


# ----- organizations ----------------------------------------------------------------------------


def test_module_sharing_saved_is_what_the_api_shows(api: Api, admin: Browser):
    for name in ("producer", "one", "two"):
        make_org(api, name)
    listing = admin.get("/app/admin/organizations?q=prod")
    assert "1 organization" in listing.text and "/app/admin/organizations/producer" in listing.text
    path = "/app/admin/organizations/producer/module-sharing"
    reply = admin.post(
        path, form_of(admin, "/app/admin/organizations/producer", consumers="one\ntwo")
    )
    assert reply.status_code == 303
    consumers = api.get(f"{ADMIN_API}/organizations/producer/relationships/module-consumers")
    assert sorted(o["id"] for o in consumers.data) == ["one", "two"]
    reply = admin.post(
        path, form_of(admin, "/app/admin/organizations/producer", consumers="", **{"global": "on"})
    )
    org = api.get(f"{ADMIN_API}/organizations/producer").data
    assert org["attributes"]["global-module-sharing"] is True
    assert org["relationships"]["module-consumers"]["data"] == []
    # An unknown organization: the API's message, nothing changed.
    bad = admin.post(
        path, form_of(admin, "/app/admin/organizations/producer", consumers="one ghost")
    )
    assert bad.status_code == 422
    refused = api.patch(
        f"{ADMIN_API}/organizations/producer/relationships/module-consumers",
        {
            "data": [
                {"type": "organizations", "id": "one"},
                {"type": "organizations", "id": "ghost"},
            ]
        },
    )
    assert f"Not saved: {refused.error['detail']}" in text(bad)
    org = api.get(f"{ADMIN_API}/organizations/producer").data
    assert org["attributes"]["global-module-sharing"] is True
    assert org["relationships"]["module-consumers"]["data"] == []
    assert admin.get("/app/admin/organizations/ghost").status_code == 404


# ----- SCIM and OIDC ----------------------------------------------------------------------------


def test_scim_needs_saml_then_a_token_is_shown_once_and_revoked(api: Api, admin: Browser):
    path = "/app/admin/scim"
    refused = admin.post(path, form_of(admin, path, enabled="on"))
    api_refused = api.patch(f"{ADMIN_API}/scim-settings", doc("scim-settings", enabled=True))
    assert refused.status_code == 422
    assert f"Not saved: {api_refused.error['detail']}" in text(refused)
    saml = "/app/admin/settings/saml"
    admin.post(saml, form_of(admin, saml, **SAML_FORM))
    assert admin.post(path, form_of(admin, path, enabled="on")).status_code == 303
    assert shown(api, "scim-settings")["enabled"] is True
    created = admin.post(path + "/tokens", form_of(admin, path, description="okta", days="90"))
    assert created.status_code == 201
    secret = re.search(
        r'<code id="new-scim-token" class="secret-once">([^<]+)</code>', created.text
    )
    assert secret
    scim = api.as_(None).call(
        "GET",
        "/scim/v2/Users",
        content_type="application/scim+json",
        headers={"Authorization": f"Bearer {secret.group(1)}"},
    )
    assert scim.status == 200
    page = admin.get(path)
    assert "okta" in page.text and secret.group(1) not in page.text
    listed = api.get(f"{ADMIN_API}/scim-tokens").data
    assert [t["attributes"]["description"] for t in listed] == ["okta"]
    too_short = admin.post(path + "/tokens", form_of(admin, path, days="3"))
    assert too_short.status_code == 422
    assert "expired-at must be between 29 and 365 days from now" in text(too_short)
    revoke = f"{path}/tokens/{listed[0]['id']}/revoke"
    assert admin.post(revoke, form_of(admin, path)).status_code == 303
    assert api.get(f"{ADMIN_API}/scim-tokens").data == []


def test_oidc_keys_rotate_and_trim(api: Api, admin: Browser):
    page = admin.get("/app/admin/oidc")
    keys = api.as_(None).get("/.well-known/jwks").json["keys"]
    assert keys and keys[0]["kid"] in page.text
    path = "/app/admin/oidc"
    assert admin.post(path + "/rotate", form_of(admin, path)).status_code == 303
    assert len(api.as_(None).get("/.well-known/jwks").json["keys"]) == 2
    assert admin.post(path + "/trim", form_of(admin, path)).status_code == 303
    assert len(api.as_(None).get("/.well-known/jwks").json["keys"]) == 1
