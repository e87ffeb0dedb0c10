"""The module cache's settings against the real local stack (its HTTP server, moto server,
headless Chromium): a site admin allows namespaces over HTTP and on the page; an organization
name and an allowed namespace refuse each other, in any case; the page passes axe-core, fits
a 390 px phone and shows a refusal with its reason. The settings are put back at the end
(the stack is shared by the session's other e2e modules).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import requests
from playwright.sync_api import Browser, Page, expect

from tests.e2e.conftest import ADMIN_TOKEN, Stack
from tests.e2e.pages import TIMEOUT_MS, check_accessibility
from tests.e2e.test_siteadmin_e2e import fits_a_phone

ORG = "CacheSettings-E2E"
NS, HOSTS = "allowed-namespaces", "allowed-source-hosts"


def settings_body(**attributes: Any) -> dict[str, Any]:
    return {"data": {"type": "module-cache-settings", "attributes": attributes}}


def organization(name: str) -> dict[str, Any]:
    return {"data": {"type": "organizations", "attributes": {"name": name, "email": "o@x.io"}}}


@pytest.fixture
def page(browser: Browser, stack: Stack) -> Iterator[Page]:
    context = browser.new_context(base_url=stack.url, viewport={"width": 1280, "height": 900})
    page = context.new_page()
    page.set_default_timeout(TIMEOUT_MS)
    page.goto("/app/sign-in")
    page.get_by_label("API token").fill(ADMIN_TOKEN)
    page.get_by_role("button", name="Sign in with the token").click()
    expect(page.get_by_role("heading", name="Organizations", level=1)).to_be_visible()
    yield page
    context.close()


def test_settings_and_names_over_http_and_on_the_page(stack: Stack, page: Page) -> None:
    admin = stack.session()
    url = stack.api("/admin/module-cache-settings")
    assert requests.get(url, timeout=10).status_code == 401
    assert admin.get(url).json()["data"]["attributes"] == {NS: [], HOSTS: ["github.com"]}
    assert admin.post(stack.api("/organizations"), json=organization(ORG)).status_code == 201
    try:
        # An organization's name, in another case: refused, naming it.
        taken = admin.patch(url, json=settings_body(**{NS: ["e2e-upstream", ORG.lower()]}))
        assert taken.status_code == 422 and ORG in taken.json()["errors"][0]["detail"]
        allowed = admin.patch(
            url,
            json=settings_body(**{NS: ["E2E-Upstream"], HOSTS: ["GitHub.com", "localhost:8080"]}),
        )
        assert allowed.status_code == 200, allowed.text
        assert allowed.json()["data"]["attributes"][HOSTS] == ["github.com", "localhost:8080"]
        # An allowed namespace, in another case: no organization may take it.
        refused = admin.post(stack.api("/organizations"), json=organization("e2e-upstream"))
        assert refused.status_code == 422 and "reserved" in refused.text

        page.goto("/app/admin/module-cache")
        namespaces = page.get_by_label("Allowed upstream namespaces")
        expect(namespaces).to_have_value("E2E-Upstream")
        check_accessibility(page)
        fits_a_phone(page)
        namespaces.fill("E2E-Upstream\nnot/a-namespace")
        page.get_by_role("button", name="Save module cache settings").click()
        expect(page.get_by_role("alert")).to_contain_text("is not a registry namespace")
        check_accessibility(page)
        namespaces.fill("E2E-Upstream\nterraform-aws-modules")
        page.get_by_role("button", name="Save module cache settings").click()
        expect(page.get_by_role("status").filter(has_text="Saved.")).to_be_visible()
        shown = admin.get(url).json()["data"]["attributes"]
        assert shown[NS] == ["E2E-Upstream", "terraform-aws-modules"]
    finally:
        back = admin.patch(url, json=settings_body(**{NS: [], HOSTS: ["github.com"]}))
        assert back.status_code == 200, back.text
