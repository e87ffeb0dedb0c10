"""The audit trail's pages in headless Chromium, on the real local stack: a change the API
makes (the publishing policy's) shows on the organization's trail with a link to its page;
the filter form narrows it and a refused filter says why; the site admins' trail reads the
same organization's events. Every page passes axe-core and fits a 390 px phone; a
screenshot of the trail goes to docs/screenshots/ for the README.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from playwright.sync_api import Browser, Page, expect

from tests.conftest import doc
from tests.e2e.conftest import ADMIN_TOKEN, Stack
from tests.e2e.pages import TIMEOUT_MS, check_accessibility, check_page, screenshots

pytestmark = pytest.mark.e2e

ORG = "audited"
TRAIL = f"/app/{ORG}/audit-trail"


@pytest.fixture(scope="module")
def audited(stack: Stack) -> Stack:
    """The organization, and one recorded change: its publishing policy."""
    admin = stack.session()
    made = admin.post(
        stack.api("/organizations"), json=doc("organizations", name=ORG, email="o@x.io")
    )
    assert made.status_code == 201, made.text
    changed = admin.patch(
        stack.api(f"/organizations/{ORG}/registry-policy"),
        json=doc("registry-policies", **{"require-readme": True}),
    )
    assert changed.status_code == 200, changed.text
    return stack


@pytest.fixture
def page(browser: Browser, audited: Stack) -> Iterator[Page]:
    """The site admin (who created the organization: one of its owners), signed in."""
    context = browser.new_context(base_url=audited.url, viewport={"width": 1280, "height": 900})
    page = context.new_page()
    page.set_default_timeout(TIMEOUT_MS)
    page.goto("/app/sign-in")
    page.get_by_label("API token").fill(ADMIN_TOKEN)
    page.get_by_role("button", name="Sign in with the token").click()
    page.wait_for_url("**/app/organizations")
    yield page
    context.close()


def test_an_owner_reads_and_filters_the_organizations_trail(page: Page) -> None:
    page.goto(f"/app/{ORG}/members")
    page.get_by_role("navigation", name="Organization").get_by_role(
        "link", name="Audit trail"
    ).click()
    expect(page.get_by_role("heading", name=f"Audit trail of {ORG}", level=1)).to_be_visible()
    table = page.locator(".audit-table")
    expect(table).to_contain_text("registry-policy")
    expect(table).to_contain_text("updated")
    policy = table.locator("tr", has_text="registry-policy")  # beside its creation's events
    expect(policy.get_by_role("link", name=ORG)).to_have_attribute("href", f"/app/{ORG}/settings")
    check_page(page)
    screenshots(page, "audit-trail", "#trail-filters")

    page.get_by_label("Resource type").fill("registry-policy")
    page.get_by_label("Action").fill("updated")
    page.get_by_role("button", name="Filter").click()
    expect(page.locator(".result-count")).to_have_text("1 event")
    assert "resource-type=registry-policy" in page.url
    check_page(page)

    page.get_by_label("Action").fill("deleted")
    page.get_by_role("button", name="Filter").click()
    expect(page.locator("#no-events")).to_be_visible()

    page.get_by_label("Resource type").fill("Not A Type")
    page.get_by_role("button", name="Filter").click()
    expect(page.get_by_role("alert")).to_contain_text("resource-type: lowercase words")
    check_accessibility(page)


def test_a_site_admin_reads_the_organizations_events_on_the_admin_trail(page: Page) -> None:
    reply = page.goto(f"/app/admin/audit-trail?organization={ORG}")
    assert reply is not None and reply.status == 200
    expect(page.locator(".audit-table")).to_contain_text("registry-policy")
    check_page(page)
