"""The people pages in headless Chromium, on the real local stack (the shared one: no SMTP,
so the Members page shows the invitation link to the owner, as the API's answer does).

An owner invites a colleague from the Members page; the colleague accepts the link and
chooses a password; the owner creates a team on the Teams page and adds the colleague by
username; the colleague creates a token on the Account page (the secret shown once, working
against the API), then revokes it after the confirmation page. Every page passes axe-core
and fits a 390 px phone; desktop and phone screenshots of the account's tokens and the
members page go to docs/screenshots/ for the README.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest
from playwright.sync_api import Browser, Page, expect

from tests.conftest import doc
from tests.e2e.conftest import ADMIN_TOKEN, Stack
from tests.e2e.pages import TIMEOUT_MS, check_page, screenshots

pytestmark = pytest.mark.e2e

TOKEN = ADMIN_TOKEN
ORG = "crew"
EMAIL = "sam@example.com"
PASSWORD = "a-long-enough-secret-42"


@pytest.fixture(scope="module")
def crew(stack: Stack) -> Iterator[Stack]:
    """The shared stack with this module's organization; no password reaches its log."""
    made = stack.session(TOKEN).post(
        stack.api("/organizations"), json=doc("organizations", name=ORG, email="o@x.io")
    )
    assert made.status_code == 201, made.text
    yield stack
    assert PASSWORD not in stack.log()


def new_page(browser: Browser, stack: Stack) -> Page:
    context = browser.new_context(
        base_url=stack.url,
        viewport={"width": 1280, "height": 900},
        permissions=["clipboard-read", "clipboard-write"],
    )
    page = context.new_page()
    page.set_default_timeout(TIMEOUT_MS)
    return page


def test_an_owner_invites_and_teams_up_a_colleague_who_manages_her_tokens(
    crew: Stack, browser: Browser
) -> None:
    stack = crew
    owner = new_page(browser, stack)
    owner.goto("/app/sign-in")
    owner.get_by_label("API token").fill(TOKEN)
    owner.get_by_role("button", name="Sign in with the token").click()
    expect(owner.get_by_role("heading", name="Organizations", level=1)).to_be_visible()
    owner.get_by_role("link", name=f"Members of {ORG}").click()
    expect(owner.get_by_role("heading", name=f"Members of {ORG}", level=1)).to_be_visible()
    check_page(owner)
    owner.get_by_label("Email address").fill(EMAIL)
    owner.get_by_role("button", name="Send the invitation").click()
    expect(owner.locator("#invited")).to_contain_text(f"{EMAIL} is invited")
    link = owner.locator("#invitation-link").inner_text()
    assert re.fullmatch(r"http\S+/app/invitations/\S+", link), link
    check_page(owner)

    colleague = new_page(browser, stack)
    colleague.goto(link)
    colleague.get_by_label("Username").fill("sam")
    colleague.get_by_label("Password", exact=True).fill(PASSWORD)
    colleague.get_by_label("Password again").fill(PASSWORD)
    colleague.get_by_role("button", name="Accept the invitation").click()
    colleague.wait_for_url(f"**/app/{ORG}/registry/modules")

    owner.goto(f"/app/{ORG}/members")
    expect(owner.locator("#members-table")).to_contain_text("sam")
    expect(owner.locator("#members-table")).to_contain_text("active")
    screenshots(owner, "members")
    owner.get_by_role("navigation", name="Organization").get_by_role("link", name="Teams").click()
    check_page(owner)
    owner.get_by_label("Name").fill("platform")
    owner.get_by_label("Manage modules").check()
    owner.get_by_role("button", name="Create the team").click()
    expect(owner.get_by_role("heading", name="Team platform", level=1)).to_be_visible()
    owner.get_by_label("Add a member by username").fill("sam")
    owner.get_by_role("button", name="Add to the team").click()
    expect(owner.locator("#team-members")).to_contain_text("sam")
    expect(owner.get_by_label("Manage modules")).to_be_checked()
    check_page(owner)
    owner.get_by_role("link", name="Settings").click()
    owner.get_by_role("button", name="Create an organization token").click()
    org_token = owner.locator("#token-secret").inner_text()
    check_page(owner)
    teams = stack.session(org_token).get(stack.api(f"/organizations/{ORG}/teams"))
    assert teams.status_code == 200, teams.text
    owner.get_by_role("link", name="Back").click()
    owner.get_by_role("button", name="Revoke the organization token").click()
    expect(owner.locator("#token-state")).to_contain_text("has no token")
    check_page(owner)
    assert stack.session(org_token).get(stack.api(f"/organizations/{ORG}")).status_code == 401

    colleague.get_by_role("link", name="Account").click()
    expect(colleague.get_by_role("heading", name="Your account", level=1)).to_be_visible()
    check_page(colleague)
    colleague.get_by_label("Description").fill("CI pipeline")
    colleague.get_by_role("button", name="Create the token").click()
    secret = colleague.locator("#token-secret").inner_text()
    assert len(secret) > 20
    colleague.get_by_role("button", name="Copy the token").click()
    expect(colleague.locator(".copy-status")).to_contain_text("Copied")
    assert colleague.evaluate("navigator.clipboard.readText()") == secret
    check_page(colleague)
    me = stack.session(secret).get(stack.api("/account/details"))
    assert me.status_code == 200 and me.json()["data"]["attributes"]["username"] == "sam"
    colleague.get_by_role("link", name="Back to your account").click()
    expect(colleague.locator("#tokens-table")).to_contain_text("CI pipeline")
    assert secret not in colleague.content()
    screenshots(colleague, "account-tokens", "#tokens")
    colleague.get_by_role("link", name="Revoke CI pipeline").click()
    check_page(colleague)
    colleague.get_by_role("button", name="Revoke the token").click()
    expect(colleague.locator("#token-revoked")).to_contain_text("revoked")
    assert stack.session(secret).get(stack.api("/account/details")).status_code == 401
    colleague.goto(f"/app/{ORG}/teams")
    expect(colleague.locator("#teams-table")).to_contain_text("platform")
    assert colleague.locator("#team-form").count() == 0  # not an owner: no form
    check_page(colleague)

    # Removing a member asks first, on a page of its own that passes the same checks.
    owner.goto(f"/app/{ORG}/members")
    owner.get_by_role("link", name="Remove sam").click()
    expect(owner.get_by_role("button", name="Remove sam")).to_be_visible()
    check_page(owner)
    owner.get_by_role("button", name="Remove sam").click()
    expect(owner.locator("#member-removed")).to_be_visible()
    expect(owner.get_by_role("link", name="Remove sam")).to_have_count(0)
