"""The publishing policy through the real local stack: an owner sets it on the organization's
settings page in Chromium (axe-core, a 390 px phone), a member reads it over HTTP and may
not change it, another organization's owner does not see it."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from playwright.sync_api import Browser, expect

from tests.conftest import doc
from tests.e2e.conftest import ADMIN_TOKEN, Stack
from tests.e2e.pages import TIMEOUT_MS, check_page

pytestmark = pytest.mark.e2e

ORG = "policyorg"
POLICY = f"/organizations/{ORG}/registry-policy"


@pytest.fixture(scope="module")
def org(stack: Stack) -> Iterator[Stack]:
    made = stack.session().post(
        stack.api("/organizations"), json=doc("organizations", name=ORG, email="o@x.io")
    )
    assert made.status_code == 201, made.text
    yield stack


def _team_token(stack: Stack, org: str, name: str) -> str:
    admin = stack.session()
    team = admin.post(stack.api(f"/organizations/{org}/teams"), json=doc("teams", name=name))
    assert team.status_code == 201, team.text
    token = admin.post(stack.api(f"/teams/{team.json()['data']['id']}/authentication-token"))
    assert token.status_code == 201, token.text
    return str(token.json()["data"]["attributes"]["token"])


def test_an_owner_sets_the_policy_a_member_reads_it_nobody_else_changes_it(
    org: Stack, browser: Browser
) -> None:
    stack = org
    context = browser.new_context(base_url=stack.url, viewport={"width": 1280, "height": 900})
    page = context.new_page()
    page.set_default_timeout(TIMEOUT_MS)
    page.goto("/app/sign-in")
    page.get_by_label("API token").fill(ADMIN_TOKEN)
    page.get_by_role("button", name="Sign in with the token").click()
    expect(page.get_by_role("heading", name="Organizations", level=1)).to_be_visible()
    page.goto(f"/app/{ORG}/settings")
    expect(page.get_by_role("heading", name="Publishing policy")).to_be_visible()
    expect(page.locator("#policy-state")).to_contain_text("Nothing is held back")
    check_page(page)
    page.get_by_label("Block findings of severity").select_option("high")
    page.get_by_label("Ignored rules").fill("AVD-AWS-0086\nAVD-AWS-0107")
    page.get_by_label("Require a README").check()
    page.get_by_role("button", name="Save the publishing policy").click()
    expect(page.locator("#policy-saved")).to_contain_text("was saved")
    expect(page.locator("#policy-state")).to_contain_text("wait for their security scan")
    check_page(page)
    page.get_by_label("Ignored rules").fill("AVD-AWS-0086 s3/public-acl")
    page.get_by_role("button", name="Save the publishing policy").click()
    expect(page.locator("#policy-error")).to_contain_text("a rule id has at most")
    check_page(page)
    context.close()

    member = stack.session(_team_token(stack, ORG, "readers"))
    shown = member.get(stack.api(POLICY))
    assert shown.status_code == 200, shown.text
    assert shown.json()["data"]["attributes"] == {
        **shown.json()["data"]["attributes"],
        "block-severity": "high",
        "ignored-rules": ["AVD-AWS-0086", "AVD-AWS-0107"],
        "require-readme": True,
        "holds-versions": True,
    }
    change = doc("registry-policies", **{"block-severity": "none"})
    assert member.patch(stack.api(POLICY), json=change).status_code == 404
    other = "policyother"
    made = stack.session().post(
        stack.api("/organizations"), json=doc("organizations", name=other, email="o@x.io")
    )
    assert made.status_code == 201, made.text
    outsider = stack.session(_team_token(stack, other, "their-readers"))
    assert outsider.get(stack.api(POLICY)).status_code == 404
    assert outsider.patch(stack.api(POLICY), json=change).status_code == 404
    assert stack.session(None).get(stack.api(POLICY)).status_code == 401
    after = stack.session().get(stack.api(POLICY)).json()["data"]["attributes"]
    assert after["block-severity"] == "high"
