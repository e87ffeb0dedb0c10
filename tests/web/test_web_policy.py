"""The publishing policy in the pages: a quarantined version's page says why it is held back
and offers who may publish a Release form (its reason required, CSRF as every form), which
releases it through the API's service; the organization's settings show and change the
policy (owners only, the API's service and messages)."""

from __future__ import annotations

import json

import pytest

from chalicelib.modules.store import ModuleVersionModel
from chalicelib.trust.policy import Policy, policy_of
from tests.conftest import ADMIN_TOKEN, Api, make_org, make_team
from tests.modules.helpers import create_module, publish
from tests.modules.scan_data import quarantine_by_scan
from tests.support.web_browser import Browser

ORG = "acme"
VERSION = f"/app/{ORG}/registry/publish/private/{ORG}/vpc/aws/1.0.0"
API_VERSION = f"/api/v2/organizations/{ORG}/registry-modules/private/{ORG}/vpc/aws/version"
SETTINGS = f"/app/{ORG}/settings"
REASON = "2 finding(s) at or above high (AVD-AWS-0086, AVD-AWS-0107)"


def signed_in(api: Api, token: str) -> Browser:
    browser = Browser(api.client)
    assert browser.sign_in(token).status_code == 303
    return browser


def submit(browser: Browser, page: str, action: str, **fields: str):
    return browser.post(action, {**fields, "csrf_token": browser.csrf(page)})


def status_of(api: Api) -> dict:
    return api.get(f"{API_VERSION}?module_version=1.0.0").data["attributes"]


@pytest.fixture
def org(api: Api) -> Api:
    make_org(api, ORG)
    return api


@pytest.fixture
def quarantined(org: Api) -> None:
    module = create_module(org)
    publish(org, "1.0.0")
    (version,) = ModuleVersionModel.query(module["id"])
    assert quarantine_by_scan(version, [REASON])


def test_the_version_page_says_why_and_a_publisher_releases_it(org: Api, quarantined: None) -> None:
    _, token = make_team(org, ORG, "ci", manage_modules=True)
    publisher = signed_in(org, token)
    page = publisher.get(VERSION)
    assert page.status_code == 200
    assert "Quarantined" in page.text and REASON in page.text
    assert 'id="quarantine-reasons"' in page.text
    assert f'href="{VERSION}/release"' in page.text
    assert f'href="{VERSION}/deprecate"' not in page.text  # released first (TRANSITIONS)
    assert "data-upload" not in page.text  # its archive is the one held back
    status = json.loads(publisher.get(VERSION + "/status").text)
    assert status["status"] == "quarantined" and status["settled"] and REASON in status["error"]

    ask = publisher.get(VERSION + "/release")
    assert ask.status_code == 200 and 'name="reason"' in ask.text and " required " in ask.text
    # No CSRF token: refused, nothing changes; no reason: the form again, with the message.
    forged = publisher.post(VERSION + "/release", {"reason": "because"})
    assert forged.status_code == 403
    empty = submit(publisher, VERSION + "/release", VERSION + "/release", reason="  ")
    assert empty.status_code == 422 and "reason is required" in empty.text
    assert status_of(org)["status"] == "quarantined"

    done = submit(publisher, VERSION + "/release", VERSION + "/release", reason="a website bucket")
    assert done.status_code == 303 and done.headers["Location"] == VERSION
    attrs = status_of(org)
    assert attrs["status"] == "ok"
    assert attrs["quarantine"]["release-reason"] == "a website bucket"
    assert attrs["quarantine"]["released-by"]["type"] == "team"
    after = publisher.get(VERSION).text
    assert "Released from quarantine" in after and "a website bucket" in after
    assert f'href="{VERSION}/release"' not in after


def test_a_reader_gets_no_release_form_and_cannot_post_one(org: Api, quarantined: None) -> None:
    _, token = make_team(org, ORG, "readers")
    reader = signed_in(org, token)
    assert reader.get(VERSION).status_code == 404
    assert reader.get(VERSION + "/release").status_code == 404
    csrf = reader.csrf("/app/organizations")
    refused = reader.post(VERSION + "/release", {"reason": "mine", "csrf_token": csrf})
    assert refused.status_code == 404
    assert status_of(org)["status"] == "quarantined"


def test_owners_see_and_change_the_policy_in_the_settings(org: Api) -> None:
    owner = signed_in(org, ADMIN_TOKEN)
    page = owner.get(SETTINGS)
    assert page.status_code == 200 and 'id="policy-form"' in page.text
    assert "Nothing is held back" in page.text
    saved = submit(
        owner,
        SETTINGS,
        SETTINGS + "/registry-policy",
        block_severity="high",
        ignored_rules="AVD-AWS-0086\r\nCKV_AWS_20, AVD-AWS-0086",
        require_readme="on",
    )
    assert saved.status_code == 303, saved.text
    assert saved.headers["Location"] == SETTINGS + "?saved=policy#policy"
    assert policy_of(ORG) == Policy("high", frozenset({"AVD-AWS-0086", "CKV_AWS_20"}), True)
    shown = owner.get(SETTINGS + "?saved=policy").text
    assert "The publishing policy was saved." in shown
    assert '<option value="high" selected>' in shown and "wait for their security scan" in shown

    bad = submit(
        owner, SETTINGS, SETTINGS + "/registry-policy", block_severity="severe", ignored_rules=""
    )
    assert bad.status_code == 422 and "block-severity must be one of" in bad.text
    rule = submit(
        owner, SETTINGS, SETTINGS + "/registry-policy", block_severity="low", ignored_rules="a/b"
    )
    assert rule.status_code == 422 and "a rule id has at most" in rule.text
    assert "a/b" in rule.text  # what was sent, to correct
    assert policy_of(ORG) == Policy("high", frozenset({"AVD-AWS-0086", "CKV_AWS_20"}), True)


def test_only_owners_change_the_policy_from_the_pages(org: Api) -> None:
    _, token = make_team(org, ORG, "ci", manage_modules=True)
    publisher = signed_in(org, token)
    assert publisher.get(SETTINGS).status_code == 404
    csrf = publisher.csrf("/app/organizations")
    form = {"block_severity": "critical", "ignored_rules": "", "csrf_token": csrf}
    assert publisher.post(SETTINGS + "/registry-policy", form).status_code == 404
    owner = signed_in(org, ADMIN_TOKEN)
    forged = owner.post(SETTINGS + "/registry-policy", {"block_severity": "critical"})
    assert forged.status_code == 403
    assert policy_of(ORG) == Policy()
