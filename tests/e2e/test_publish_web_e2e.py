"""Publishing from the browser, in headless Chromium on the real local stack.

A publisher (a team token with manage-modules) creates a module and a version on the pages,
chooses a .tar.gz, and the page PUTs it straight to the presigned S3 link (moto, with the
bucket's CORS rule for the UI's origin only, and moto's allow-everything CORS switched off:
the upload working proves the rule), with a progress bar; the status turns ok live. Then
they deprecate and revoke the version on the confirmation pages, and the API shows it.
Without JavaScript the page gives the curl command instead. Every page passes axe-core and
fits a 390 px phone; the upload page's screenshots (desktop and phone) go to docs/screenshots/.
"""

from __future__ import annotations

import io
import tarfile
from collections.abc import Iterator
from urllib.parse import urlsplit

import pytest
import requests
from playwright.sync_api import Browser, Page, expect

from tests.conftest import doc
from tests.e2e.conftest import ADMIN_TOKEN, Stack
from tests.e2e.pages import TIMEOUT_MS, check_page, screenshots

pytestmark = pytest.mark.e2e

ORG = "publishui"
MAIN_TF = 'variable "name" {\n  description = "A name"\n}\noutput "name" { value = var.name }\n'


def archive() -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        for name, text in {"main.tf": MAIN_TF, "README.md": "# network\n\nA network."}.items():
            data = text.encode()
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


@pytest.fixture(scope="module")
def publisher_token(stack: Stack) -> Iterator[str]:
    """A team token with manage-modules in a fresh organization."""
    admin = stack.session(ADMIN_TOKEN)
    made = admin.post(
        stack.api("/organizations"), json=doc("organizations", name=ORG, email="p@x.io")
    )
    assert made.status_code == 201, made.text
    team = admin.post(
        stack.api(f"/organizations/{ORG}/teams"),
        json=doc("teams", name="ci", **{"organization-access": {"manage-modules": True}}),
    )
    assert team.status_code == 201, team.text
    token = admin.post(stack.api(f"/teams/{team.json()['data']['id']}/authentication-token"))
    assert token.status_code == 201, token.text
    yield token.json()["data"]["attributes"]["token"]


def signed_in(chromium: Browser, stack: Stack, token: str, javascript: bool = True) -> Page:
    context = chromium.new_context(
        base_url=stack.url, viewport={"width": 1280, "height": 900}, java_script_enabled=javascript
    )
    page = context.new_page()
    page.set_default_timeout(TIMEOUT_MS)
    page.goto("/app/sign-in")
    page.get_by_label("API token").fill(token)
    page.get_by_role("button", name="Sign in with the token").click()
    expect(page.get_by_role("heading", name="Organizations", level=1)).to_be_visible()
    return page


def version_attributes(stack: Stack, version: str) -> dict:
    reply = stack.session().get(
        stack.api(
            f"/organizations/{ORG}/registry-modules/private/{ORG}/network/aws/version"
            f"?module_version={version}"
        )
    )
    assert reply.status_code == 200, reply.text
    return reply.json()["data"]["attributes"]


def test_a_publisher_creates_uploads_deprecates_and_revokes_in_the_browser(
    stack: Stack,
    browser: Browser,
    publisher_token: str,
) -> None:
    page = signed_in(browser, stack, publisher_token)
    page.goto(f"/app/{ORG}/registry/modules")
    page.get_by_role("link", name="Publish a module").click()
    expect(page.get_by_role("heading", name=f"Publish a module in {ORG}")).to_be_visible()
    check_page(page)
    page.get_by_label("Name").fill("network")
    page.get_by_label("Provider").fill("aws")
    page.get_by_role("button", name="Create the module").click()
    expect(page.get_by_role("heading", name="Publish network/aws", level=1)).to_be_visible()
    expect(page.locator("#publish-notice")).to_contain_text("The module is created")
    check_page(page)

    page.get_by_label("Version", exact=True).fill("1.0.0")
    page.get_by_role("button", name="Create the version").click()
    expect(page.get_by_role("heading", name="network/aws 1.0.0", level=1)).to_be_visible()
    expect(page.locator("#upload-form")).to_be_visible()  # the script showed it
    expect(page.locator("#status-label")).to_have_text("Pending")
    check_page(page)
    upload = page.locator("#upload-form").get_attribute("data-upload")
    assert upload
    bucket_origin = "{0.scheme}://{0.netloc}".format(urlsplit(upload))
    assert bucket_origin != stack.url  # a cross-origin PUT: CORS decides

    page.locator("#archive").set_input_files(
        {"name": "network.tar.gz", "mimeType": "application/gzip", "buffer": archive()}
    )
    screenshots(page, "publish-upload", "#upload-h")
    page.get_by_role("button", name="Upload the archive").click()
    expect(page.locator("#status-label")).to_have_text("OK", timeout=TIMEOUT_MS)
    expect(page.locator("#upload-progress")).to_have_attribute("value", "100")
    expect(page.locator("#upload-message")).to_contain_text("Uploaded network.tar.gz")
    expect(page.locator("#status-detail")).to_have_text("Published: terraform can install it now.")
    expect(page.locator("#upload-section")).to_be_hidden()  # the link takes nothing more
    check_page(page)
    assert version_attributes(stack, "1.0.0")["status"] == "ok"
    # The script showed the links to the module (no reload): the version's page opens.
    page.get_by_role("link", name="network/aws 1.0.0 on its module page").click()
    expect(page.get_by_role("heading", name="network", level=1)).to_be_visible()
    assert page.url.endswith("/registry/modules/private/" + ORG + "/network/aws/1.0.0")
    page.go_back()

    page.reload()
    page.get_by_role("link", name="Deprecate the version").click()
    expect(page.get_by_role("heading", name="Deprecate version 1.0.0?")).to_be_visible()
    check_page(page)
    page.get_by_label("Reason").fill("Use 2.x: 1.x leaks NAT gateways.")
    page.get_by_label("Link").fill("https://example.com/network-2")
    page.get_by_role("button", name="Deprecate the version").click()
    expect(page.get_by_role("link", name="Revoke the version")).to_be_visible()
    deprecation = version_attributes(stack, "1.0.0")["deprecation"]
    assert deprecation["deprecated-status"] == "Deprecated"
    assert deprecation["reason"] == "Use 2.x: 1.x leaks NAT gateways."

    page.get_by_role("link", name="Revoke the version").click()
    expect(page.get_by_role("heading", name="Revoke version 1.0.0?")).to_be_visible()
    check_page(page)
    page.get_by_label("Message").fill("CVE-2026-0001: upgrade to 2.0.0")
    page.get_by_role("button", name="Revoke the version").click()
    expect(page.get_by_role("link", name="Un-revoke the version")).to_be_visible()
    revocation = version_attributes(stack, "1.0.0")["revocation"]
    assert revocation["status"] == "Revoked"
    assert revocation["message"] == "CVE-2026-0001: upgrade to 2.0.0"
    # The version's history (its audit trail): who deprecated and revoked it, and when.
    history = page.locator("#history")
    expect(history).to_contain_text("deprecated")
    expect(history).to_contain_text("revoked")
    expect(history).to_contain_text("CVE-2026-0001: upgrade to 2.0.0")
    check_page(page)

    page.get_by_role("link", name="All versions of network/aws").click()
    expect(page.locator("#versions-table")).to_contain_text("revoked")
    check_page(page)
    page.context.close()


def test_the_bucket_takes_uploads_from_the_ui_origin_only(stack: Stack) -> None:
    """The preflight Chromium sends before the PUT: answered for the UI's origin, refused
    for any other (moto's answer-everyone CORS is off in the local stack)."""
    http = stack.session(ADMIN_TOKEN)
    http.post(
        stack.api("/organizations"), json=doc("organizations", name="corscheck", email="c@x.io")
    )
    base = stack.api("/organizations/corscheck/registry-modules")
    made = http.post(base, json=doc("registry-modules", name="cors", provider="aws"))
    assert made.status_code == 201, made.text
    version = http.post(
        f"{base}/private/corscheck/cors/aws/versions",
        json=doc("registry-module-versions", version="0.1.0"),
    )
    upload = version.json()["data"]["links"]["upload"]

    def preflight(origin: str) -> requests.Response:
        return requests.options(
            upload,
            headers={
                "Origin": origin,
                "Access-Control-Request-Method": "PUT",
                "Access-Control-Request-Headers": "content-type",
            },
            timeout=30,
        )

    allowed = preflight(stack.url)
    assert allowed.status_code == 200
    assert allowed.headers.get("Access-Control-Allow-Origin") == stack.url
    assert "PUT" in allowed.headers.get("Access-Control-Allow-Methods", "")
    refused = preflight("https://evil.example")
    assert refused.headers.get("Access-Control-Allow-Origin") in (None, "")
    assert refused.status_code == 403


def test_without_javascript_the_page_gives_the_curl_command(
    stack: Stack,
    browser: Browser,
    publisher_token: str,
) -> None:
    page = signed_in(browser, stack, publisher_token, javascript=False)
    module = f"/app/{ORG}/registry/publish/private/{ORG}/network/aws"
    page.goto(module)
    page.get_by_label("Version", exact=True).fill("1.1.0")
    page.get_by_role("button", name="Create the version").click()
    expect(page.get_by_role("heading", name="network/aws 1.1.0", level=1)).to_be_visible()
    expect(page.locator("#upload-form")).to_be_hidden()
    command = page.locator("#curl-command").inner_text()
    assert command.startswith("curl -X PUT") and "X-Amz-Signature=" in command
    link = command.rsplit("'", 2)[1]
    put = requests.put(
        link, data=archive(), headers={"Content-Type": "application/octet-stream"}, timeout=30
    )
    assert put.status_code == 200, put.text
    page.get_by_role("link", name="reload this page").click()
    for _ in range(60):
        if page.locator("#status-label").inner_text() == "OK":
            break
        page.wait_for_timeout(500)
        page.reload()
    expect(page.locator("#status-label")).to_have_text("OK")
    page.context.close()
