"""Site administration in a real browser (Debian's headless Chromium, Playwright) against
the real local stack: a site admin searches a user, suspends and unsuspends them, edits the
customization and sees the footer change; every admin page passes axe-core and fits a
390 px phone (wide tables scroll inside their own keyboard-focusable box); a colleague who
is not a site admin gets the not-found page. Screenshots of the users and SAML pages go to
docs/screenshots/ for the README.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from playwright.sync_api import Browser, BrowserContext, Page, expect

from tests.e2e.conftest import ADMIN_TOKEN, Stack
from tests.e2e.pages import SCREENSHOTS, TIMEOUT_MS, check_accessibility

ORG = "siteadmin-e2e"
USERNAME = "carol"
PASSWORD = "a-long-enough-secret-77"
PAGES = (
    "/app/admin",
    "/app/admin/users",
    "/app/admin/organizations",
    f"/app/admin/organizations/{ORG}",
    "/app/admin/settings/general",
    "/app/admin/settings/saml",
    "/app/admin/settings/smtp",
    "/app/admin/settings/sms",
    "/app/admin/settings/cost-estimation",
    "/app/admin/settings/customization",
    "/app/admin/scim",
    "/app/admin/oidc",
    "/app/admin/audit-trail",
    f"/app/admin/audit-trail?organization={ORG}",
)


@pytest.fixture(scope="module")
def colleague(stack: Stack, browser: Browser) -> Iterator[BrowserContext]:
    """carol, invited to an organization (the link from the API's answer: no SMTP here),
    signed in with her password in a context of her own."""
    admin = stack.session()
    made = admin.post(
        stack.api("/organizations"),
        json={"data": {"type": "organizations", "attributes": {"name": ORG, "email": "o@x.io"}}},
    )
    assert made.status_code == 201, made.text
    invited = admin.post(
        stack.api(f"/organizations/{ORG}/organization-memberships"),
        json={
            "data": {
                "type": "organization-memberships",
                "attributes": {"email": "carol@example.test"},
            }
        },
    )
    assert invited.status_code == 201, invited.text
    link = invited.json()["data"]["meta"]["invitation-url"]
    context = browser.new_context(base_url=stack.url)
    page = context.new_page()
    page.set_default_timeout(TIMEOUT_MS)
    page.goto(link)
    page.get_by_label("Username").fill(USERNAME)
    page.get_by_label("Password", exact=True).fill(PASSWORD)
    page.get_by_label("Password again").fill(PASSWORD)
    page.get_by_role("button", name="Accept the invitation").click()
    page.wait_for_url(f"**/app/{ORG}/registry/modules")
    page.close()
    yield context
    context.close()


@pytest.fixture
def page(browser: Browser, stack: Stack) -> Iterator[Page]:
    """A site admin's page (signed in with the admin token)."""
    context = browser.new_context(base_url=stack.url, viewport={"width": 1280, "height": 900})
    page = context.new_page()
    page.set_default_timeout(TIMEOUT_MS)
    page.goto("/app/sign-in")
    page.get_by_label("API token").fill(ADMIN_TOKEN)
    page.get_by_role("button", name="Sign in with the token").click()
    expect(page.get_by_role("heading", name="Organizations", level=1)).to_be_visible()
    yield page
    context.close()


def fits_a_phone(page: Page, screenshot: str | None = None) -> None:
    """At 390 px nothing scrolls sideways (a wide table scrolls in its own box)."""
    desktop = page.viewport_size
    page.set_viewport_size({"width": 390, "height": 844})
    wide = page.evaluate(
        """() => [...document.querySelectorAll('body *')]
          .filter(e => e.getBoundingClientRect().right > 390 && !e.closest('.scroll-box'))
          .map(e => e.tagName + '.' + e.className + '#' + e.id).slice(0, 8)"""
    )
    assert page.evaluate("document.documentElement.scrollWidth") <= 390, (page.url, wide)
    if screenshot:
        page.screenshot(path=str(SCREENSHOTS / screenshot), full_page=False)
    assert desktop is not None
    page.set_viewport_size(desktop)


def test_a_site_admin_suspends_and_unsuspends_a_user(page: Page, colleague: BrowserContext) -> None:
    page.get_by_role("link", name="Site administration").click()
    expect(page.get_by_role("heading", name="Site administration", level=1)).to_be_visible()
    page.get_by_role("navigation", name="Site administration").get_by_role(
        "link", name="Users"
    ).click()
    page.get_by_role("searchbox", name="Username or email").fill(USERNAME)
    page.get_by_role("button", name="Search").click()
    rows = page.locator("table.admin-table tbody tr")
    expect(rows).to_have_count(1)
    expect(rows.first).to_contain_text("carol@example.test")
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / "admin-users.png"), full_page=True)
    fits_a_phone(page, "admin-users-phone.png")
    # The wide table is a keyboard stop of its own.
    box = page.get_by_role("region", name="Users (scrolls sideways)")
    box.focus()
    expect(box).to_be_focused()

    page.get_by_role("link", name=f"Suspend {USERNAME}").click()
    expect(page.get_by_role("heading", name=f"Suspend {USERNAME}?")).to_be_visible()
    check_accessibility(page)
    fits_a_phone(page)
    page.get_by_role("button", name=f"Suspend {USERNAME}").click()
    expect(page.get_by_role("status").filter(has_text="carol: suspended.")).to_be_visible()
    expect(rows.first).to_contain_text("suspended")

    carol = colleague.new_page()  # her session is refused while she is suspended
    carol.goto(f"/app/{ORG}/registry/modules")
    assert "/app/sign-in" in carol.url

    page.get_by_role("link", name=f"Unsuspend {USERNAME}").click()
    page.get_by_role("button", name=f"Unsuspend {USERNAME}").click()
    expect(page.get_by_role("status").filter(has_text="carol: unsuspended.")).to_be_visible()


def test_a_colleague_who_is_not_a_site_admin_gets_not_found(colleague: BrowserContext) -> None:
    carol = colleague.new_page()
    carol.goto("/app/sign-in")
    if "/app/sign-in" in carol.url:  # signed out by the suspension test: sign in again
        form = carol.locator("#password-sign-in")
        form.get_by_label("Username or email").fill(USERNAME)
        form.get_by_label("Password").fill(PASSWORD)
        form.get_by_role("button", name="Sign in").click()
        carol.wait_for_url("**/app/**")
    expect(carol.get_by_role("link", name="Site administration")).to_have_count(0)
    for path in ("/app/admin", "/app/admin/users", "/app/admin/settings/saml"):
        reply = carol.goto(path)
        assert reply is not None and reply.status == 404, path


def test_customization_changes_the_footer(page: Page) -> None:
    page.goto("/app/admin/settings/customization")
    page.get_by_label("Footer").fill("Operated by **the e2e team**")
    page.get_by_role("button", name="Save customization").click()
    expect(page.get_by_role("status").filter(has_text="Saved.")).to_be_visible()
    page.goto("/app/organizations")
    footer = page.locator("footer .custom-text")
    expect(footer).to_contain_text("Operated by the e2e team")
    expect(footer.locator("strong")).to_have_text("the e2e team")
    page.goto("/app/admin/settings/customization")
    page.get_by_label("Footer").fill("")
    page.get_by_role("button", name="Save customization").click()


def test_every_admin_page_is_accessible_and_fits_a_phone(
    page: Page, colleague: BrowserContext
) -> None:
    for path in PAGES:
        reply = page.goto(path)
        assert reply is not None and reply.status == 200, path
        check_accessibility(page)
        fits_a_phone(page)
    page.goto("/app/admin/settings/saml")
    expect(page.locator("#acs-url")).to_contain_text("/users/saml/auth")
    page.screenshot(path=str(SCREENSHOTS / "admin-saml.png"), full_page=True)
    fits_a_phone(page, "admin-saml-phone.png")
    # A refused value: the form again, with the API's message, still accessible.
    page.get_by_label("IdP single sign-on URL").fill("http://idp.example.test/sso")
    page.get_by_role("button", name="Save SAML settings").click()
    expect(page.get_by_role("alert")).to_contain_text("sso-endpoint-url must be an https:// URL")
    check_accessibility(page)
