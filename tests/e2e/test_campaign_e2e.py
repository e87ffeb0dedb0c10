"""An upgrade campaign through the real local stack: a consumer team downloads a version, a
new one is published and the old one deprecated; Renovate, unchanged, finds the new version
with the team's token; the module's owners read who is behind (the consumers API) and the
organization's campaigns; the consumer itself reads neither."""

from __future__ import annotations

from typing import Any

import pytest
import requests
from playwright.sync_api import Browser, expect

from tests.conftest import doc, tar_gz
from tests.e2e.conftest import Stack, wait_for
from tests.e2e.pages import TIMEOUT_MS, check_page, screenshots
from tests.support.renovate import Renovate

pytestmark = pytest.mark.e2e

ORG = "campaignz"
MAIN_TF = 'variable "cidr" { type = string }\noutput "cidr" { value = var.cidr }\n'


def http_get(url: str, token: str | None) -> tuple[int, Any]:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    reply = requests.get(url, headers=headers, timeout=30)
    return reply.status_code, reply.json() if reply.content else None


def test_who_is_behind_through_the_local_stack(stack: Stack, browser: Browser):
    admin = stack.session()
    created = admin.post(
        stack.api("/organizations"), json=doc("organizations", name=ORG, email="o@x.io")
    )
    assert created.status_code == 201, created.text

    def team_token(name: str, **access: bool) -> str:
        team = admin.post(
            stack.api(f"/organizations/{ORG}/teams"),
            json=doc("teams", name=name, **{"organization-access": access}),
        )
        assert team.status_code == 201, team.text
        token = admin.post(stack.api(f"/teams/{team.json()['data']['id']}/authentication-token"))
        return str(token.json()["data"]["attributes"]["token"])

    publisher = stack.session(team_token("platform", **{"manage-modules": True}))
    app_token = team_token("app")
    app = stack.session(app_token)
    modules = stack.api(f"/organizations/{ORG}/registry-modules")
    module = f"{modules}/private/{ORG}/net/aws"
    reply = publisher.post(modules, json=doc("registry-modules", name="net", provider="aws"))
    assert reply.status_code == 201, reply.text

    def publish(version: str) -> None:
        reply = publisher.post(
            f"{module}/versions", json=doc("registry-module-versions", version=version)
        )
        assert reply.status_code == 201, reply.text
        put = requests.put(
            reply.json()["data"]["links"]["upload"], data=tar_gz({"main.tf": MAIN_TF})
        )
        assert put.status_code == 200, put.text

        def status() -> str:
            found = publisher.get(f"{module}/version", params={"module_version": version})
            return str(found.json()["data"]["attributes"]["status"])

        assert wait_for(status, lambda s: s == "ok", timeout=60) == "ok"

    publish("1.0.0")
    renovate = Renovate(http_get, stack.url, app_token)
    assert renovate.module_releases(f"{ORG}/net/aws") == ["1.0.0"]
    download = app.get(f"{stack.url}/api/registry/v1/modules/{ORG}/net/aws/1.0.0/download")
    assert download.status_code == 204, download.text

    publish("1.1.0")
    deprecation = {"deprecated-status": "Deprecated", "reason": "IPv6", "link": "https://x.io/n"}
    changed = publisher.patch(
        f"{module}/1.0.0", json=doc("module-versions", deprecation=deprecation)
    )
    assert changed.status_code == 200, changed.text
    assert sorted(renovate.module_releases(f"{ORG}/net/aws") or []) == ["1.0.0", "1.1.0"]

    consumers = publisher.get(f"{module}/consumers", params={"filter[status]": "behind"})
    assert consumers.status_code == 200, consumers.text
    (entry,) = consumers.json()["data"]
    assert entry["attributes"]["name"] == f"{ORG}/app"
    assert entry["attributes"]["version"] == "1.0.0"
    assert entry["attributes"]["status"] == "deprecated"
    assert entry["attributes"]["behind"] and entry["attributes"]["latest-version"] == "1.1.0"
    assert (
        publisher.get(f"{module}/consumers", params={"filter[status]": "current"}).json()["data"]
        == []
    )
    campaigns = publisher.get(stack.api(f"/organizations/{ORG}/registry-module-campaigns"))
    assert campaigns.status_code == 200, campaigns.text
    (listed,) = campaigns.json()["data"]
    assert listed["attributes"]["name"] == "net"
    assert [
        (v["version"], v["consumers"]) for v in listed["attributes"]["deprecated-versions"]
    ] == [("1.0.0", 1)]
    # The consumer reads neither: who consumes what is the module managers' to see.
    assert app.get(f"{module}/consumers").status_code == 404
    assert app.get(stack.api(f"/organizations/{ORG}/registry-module-campaigns")).status_code == 404
    assert app_token not in stack.log()

    # The module's Downloads tab and the organization's page, in a browser, as the publisher.
    context = browser.new_context(base_url=stack.url, viewport={"width": 1280, "height": 900})
    context.set_default_timeout(TIMEOUT_MS)
    page = context.new_page()
    try:
        page.goto("/app/sign-in")
        page.get_by_label("API token").fill(publisher.headers["Authorization"].split()[1])
        page.get_by_role("button", name="Sign in with the token").click()
        expect(page.get_by_role("heading", name="Organizations", level=1)).to_be_visible()
        page.goto(f"/app/{ORG}/registry/modules/private/{ORG}/net/aws")
        page.get_by_role("tab", name="Downloads (1)").click()
        panel = page.get_by_role("tabpanel")
        expect(panel).to_contain_text("1 consumer: 0 on a revoked version, 1 on a deprecated one")
        row = panel.locator("table.consumers tbody tr")
        expect(row).to_contain_text(f"{ORG}/app")
        expect(row).to_contain_text("deprecated")
        check_page(page)
        screenshots(page, "campaign-tab", "#consumers-h")
        page.goto(f"/app/{ORG}/registry/modules")
        page.get_by_role("link", name="Upgrade campaigns").click()
        expect(page.get_by_role("heading", level=1)).to_have_text(f"Upgrade campaigns in {ORG}")
        expect(page.locator("table.campaigns tbody tr")).to_contain_text("net/aws")
        check_page(page)
        screenshots(page, "campaigns")
    finally:
        context.close()
