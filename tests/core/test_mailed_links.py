"""Mailed links name only the configured public address (``core.api.links``), never the
request's ``Host`` or ``X-Forwarded-Proto`` (which whoever asks chooses): the password
reset, the email confirmation and the invitation, each asked for with
``Host: evil.example:8443`` and delivered through a real SMTP server. Without a configured
address no link is made, the caller is told why (503, not a 500) and nothing changes. The
local stack configures the address it prints."""

from __future__ import annotations

import os
import re
from typing import Any

import pytest

from tests.accounts.helpers import MEMBERSHIPS, invite_body, make_user
from tests.conftest import ADMIN_TOKEN, Api, make_org
from tests.modules.publishing import drain
from tests.support.web_browser import Browser

CONFIGURED = "http://registry.test"  # tests/conftest.py's REGISTRY_PUBLIC_URL
EVIL = {"Host": "evil.example:8443", "X-Forwarded-Proto": "https"}
RESET = "/app/password-reset"


def links_in(mailbox: Any) -> list[str]:
    """Every URL in every message delivered."""
    found: list[str] = []
    for message in mailbox.messages:
        found += re.findall(r"\w+://\S+", message.get_payload(decode=True).decode())
    return found


def ask_reset_from_evil(browser: Browser, login: str) -> Any:
    csrf = browser.csrf()  # the sign-in page's: the form has none when unavailable
    answer = browser.post(RESET, {"csrf_token": csrf, "login": login}, headers=EVIL)
    drain()  # the ingest function mails the link, as in AWS
    return answer


def change_email_from_evil(api: Api, email: str) -> Any:
    body = {"data": {"type": "users", "attributes": {"email": email}}}
    return api.patch("/api/v2/account/update", body, headers=EVIL)


def invite_from_evil(api: Api, email: str) -> Any:
    return api.post(MEMBERSHIPS, invite_body(email), headers=EVIL)


# ----- a configured address ---------------------------------------------------------------


def test_a_reset_link_names_the_configured_address_whatever_host_the_request_named(
    api: Api, smtp: Any
) -> None:
    make_user()
    answer = ask_reset_from_evil(Browser(api.client), "jane")
    assert answer.status_code == 200
    (link,) = links_in(smtp)
    assert link.startswith(f"{CONFIGURED}{RESET}/user-")


def test_a_confirmation_link_names_the_configured_address(api: Api, smtp: Any) -> None:
    reply = change_email_from_evil(api, "new@example.com")
    assert reply.status == 200, reply.json
    (link,) = links_in(smtp)
    assert link.startswith(f"{CONFIGURED}/app/account/confirm-email/")


def test_an_invitation_link_names_the_configured_address(api: Api, smtp: Any) -> None:
    make_org(api)
    reply = invite_from_evil(api, "jane@example.com")
    assert reply.status == 201, reply.json
    (link,) = links_in(smtp)
    assert link.startswith(f"{CONFIGURED}/app/invitations/")


# ----- no address configured: nothing mailed, the caller told why ---------------------------


def test_without_an_address_no_reset_link_is_made_and_the_form_says_why(
    api: Api, smtp: Any, no_public_address: None
) -> None:
    from chalicelib.accounts import resets
    from chalicelib.accounts.users.store import UserModel

    user_id = make_user()
    browser = Browser(api.client)
    page = browser.get(RESET)
    assert "no public address" in page.text and 'id="password-reset-request"' not in page.text
    answer = ask_reset_from_evil(browser, "jane")
    assert answer.status_code == 503 and "no public address" in answer.text
    # A job queued before the address went away (or with the old shape, naming a host)
    # makes no link either.
    resets.deliver({"login": "jane", "base_url": "https://evil.example:8443"})
    assert smtp.messages == []
    assert UserModel.get(user_id).reset_hash is None


def test_without_an_address_an_email_change_is_refused_and_changes_nothing(
    api: Api, smtp: Any, no_public_address: None
) -> None:
    before = api.get("/api/v2/account/details").data
    reply = change_email_from_evil(api, "new@example.com")
    assert reply.status == 503
    assert "REGISTRY_PUBLIC_URL" in reply.error["detail"]
    assert api.get("/api/v2/account/details").data == before
    assert smtp.messages == []


def test_without_an_address_an_invitation_is_refused_and_nothing_is_made(
    api: Api, smtp: Any, no_public_address: None
) -> None:
    make_org(api)
    before = api.get(MEMBERSHIPS).data
    reply = invite_from_evil(api, "jane@example.com")
    assert reply.status == 503
    assert "REGISTRY_PUBLIC_URL" in reply.error["detail"]
    assert api.get(MEMBERSHIPS).data == before
    assert smtp.messages == []


def test_without_an_address_the_web_invitation_form_says_why(
    api: Api, no_public_address: None
) -> None:
    make_org(api)
    admin = Browser(api.client)
    assert admin.sign_in(ADMIN_TOKEN).status_code == 303
    members = "/app/acme/members"
    form = {"csrf_token": admin.csrf(members), "email": "jane@example.com"}
    reply = admin.post(members + "/invite", form)
    assert reply.status_code == 503 and "REGISTRY_PUBLIC_URL" in reply.text
    assert [m["attributes"]["status"] for m in api.get(MEMBERSHIPS).data] == ["active"]


# ----- the local stack ------------------------------------------------------------------------


def test_the_local_stack_configures_the_address_it_prints(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from infrastructure.local import printed_url, set_public_url, ui_origins

    monkeypatch.delenv("REGISTRY_PUBLIC_URL")
    assert set_public_url("127.0.0.1", 8123) == printed_url("127.0.0.1", 8123)
    assert printed_url("127.0.0.1", 8123) == "http://127.0.0.1:8123"
    assert os.environ["REGISTRY_PUBLIC_URL"] == "http://127.0.0.1:8123"
    assert ui_origins("127.0.0.1", 8123) == ["http://127.0.0.1:8123", "http://localhost:8123"]
    # An operator's address is kept.
    monkeypatch.setenv("REGISTRY_PUBLIC_URL", "https://registry.example.com")
    assert set_public_url("127.0.0.1", 8123) == "https://registry.example.com"


# ----- what other parties are given: a VCS host's webhook, an identity provider's endpoints ---


def test_the_webhook_a_vcs_host_is_given_names_the_configured_address(
    api: Api, monkeypatch: pytest.MonkeyPatch
) -> None:
    from chalicelib.core.settings import get_settings
    from tests.modules.publishing import NET, V2, connect, publish
    from tests.support.vcs_api_server import VcsApi
    from tests.support.vcs_git_server import serve

    make_org(api)
    for server, _ in serve():
        with VcsApi() as host:
            token_id = connect(api, server, api_url=host.url + "/api/v3")
            created = publish(api, token_id, "acme/terraform-aws-net")
            drain()
            (added,) = host.requests
            assert added.body["config"]["url"].startswith(f"{CONFIGURED}/webhooks/vcs/")
            module_id = created.data["id"]
            monkeypatch.delenv("REGISTRY_PUBLIC_URL")
            get_settings.cache_clear()
            before = api.get(NET).data
            regenerate = f"{V2}/registry-modules/{module_id}/actions/regenerate-webhook-secret"
            refused = api.post(regenerate, headers=EVIL)
            assert refused.status == 503 and "REGISTRY_PUBLIC_URL" in refused.error["detail"]
            assert api.get(NET).data == before
            again = publish(api, token_id, "acme/terraform-aws-other")
            assert again.status == 503
            drain()
            assert len(host.requests) == 1  # nothing more asked of the VCS host


def test_without_an_address_no_saml_endpoint_is_made_from_the_request(
    api: Api, no_public_address: None
) -> None:
    reply = Browser(api.client).request("GET", "/users/saml/metadata", headers=EVIL)
    assert reply.status_code == 503 and "evil.example" not in reply.text
