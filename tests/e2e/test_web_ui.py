"""The web UI in a real browser: Debian's headless Chromium driven by Playwright, against the
real local stack (``stack``), with axe-core checking every page.

Chromium is Debian's package (``make test`` installs it when missing); Playwright's own
browser downloads are never used. A missing browser fails these tests, it never skips them.
The module list, a module page and a provider page are saved to docs/screenshots/ for the
README.
"""

from __future__ import annotations

import hashlib
import http.client
import io
import os
import re
import shutil
import subprocess
import tarfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlencode

import boto3
import pytest
import requests
from playwright.sync_api import Browser, BrowserContext, Page, expect

from tests.conftest import doc
from tests.e2e.conftest import ADMIN_TOKEN, Stack, wait_for
from tests.e2e.pages import SCREENSHOTS, check_accessibility
from tests.e2e.test_terraform_providers import machine, put
from tests.support.provider_files import SigningKey, new_signing_key, provider_zip, sha256, shasums

ORG = "webui"
README = """# network

A VPC with public and private subnets, NAT gateways and flow logs.

## Usage

```hcl
module "network" {
  source = "../"
}
```

| Feature | Supported |
|---------|-----------|
| IPv6    | yes       |
"""
MAIN_TF = """
variable "name" { description = "Name prefix for every resource" }
variable "cidr" {
  type        = string
  default     = "10.0.0.0/16"
  description = "The VPC's address range"
}
variable "az_count" {
  type        = number
  description = "How many availability zones to use"
}
resource "aws_vpc" "this" { cidr_block = var.cidr }
resource "aws_subnet" "private" { vpc_id = aws_vpc.this.id }
output "vpc_id" {
  value       = aws_vpc.this.id
  description = "The VPC's id"
}
"""
HOSTILE = """# hostile

<script>window.pwned = "script"</script>

<img src="x" onerror="window.pwned = 'onerror'">

<a href="javascript:window.pwned = 'link'">a javascript: link</a>

<iframe src="javascript:parent.pwned = 'iframe'"></iframe>

<div onmouseover="window.pwned = 'hover'">hover me</div>
"""


def _archive(files: dict[str, str]) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
        for name, text in files.items():
            data = text.encode()
            info = tarfile.TarInfo(name)
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


def _publish(stack: Stack, name: str, provider: str, versions: dict[str, bytes]) -> None:
    http = stack.session()
    base = stack.api(f"/organizations/{ORG}/registry-modules")
    created = http.post(
        base,
        json={
            "data": {"type": "registry-modules", "attributes": {"name": name, "provider": provider}}
        },
    )
    assert created.status_code == 201, created.text
    for version, archive in versions.items():
        reply = http.post(
            f"{base}/private/{ORG}/{name}/{provider}/versions",
            json={"data": {"type": "registry-module-versions", "attributes": {"version": version}}},
        )
        assert reply.status_code == 201, reply.text
        upload = reply.json()["data"]["links"]["upload"]
        put = requests.put(
            upload, data=archive, headers={"Content-Type": "application/octet-stream"}, timeout=30
        )
        assert put.status_code == 200, put.text
    url = f"{base}/private/{ORG}/{name}/{provider}"
    last = list(versions)[-1]

    def settled(document: dict[str, Any]) -> bool:
        statuses = document["data"]["attributes"]["version-statuses"]
        return any(
            s["version"] == last and s["status"] not in ("pending", "reg_ingressing")
            for s in statuses
        )

    assert settled(wait_for(lambda: http.get(url).json(), settled)), f"{name} was not ingested"


PROVIDER = "cloudkit"  # webui's private provider


def _publish_provider(stack: Stack, signer: SigningKey) -> None:
    """webui/cloudkit: 1.0.0 signed by ``signer`` for this machine's platform (terraform can
    install it), and 1.1.0 whose signature is not one (refused with its reason)."""
    http = stack.session()
    key = http.post(
        f"{stack.url}/api/registry/private/v2/gpg-keys",
        json=doc("gpg-keys", namespace=ORG, **{"ascii-armor": signer.armor}),
    )
    assert key.status_code == 201, key.text
    providers = stack.api(f"/organizations/{ORG}/registry-providers")
    created = http.post(
        providers,
        json=doc(
            "registry-providers", name=PROVIDER, namespace=ORG, **{"registry-name": "private"}
        ),
    )
    assert created.status_code == 201, created.text
    base = f"{providers}/private/{ORG}/{PROVIDER}/versions"
    os_, arch = machine()
    for version, good in (("1.0.0", True), ("1.1.0", False)):
        reply = http.post(
            base,
            json=doc(
                "registry-provider-versions",
                version=version,
                **{"key-id": signer.key_id, "protocols": ["5.0"]},
            ),
        )
        assert reply.status_code == 201, reply.text
        links = reply.json()["data"]["links"]
        archive = provider_zip(PROVIDER, version)
        filename = f"terraform-provider-{PROVIDER}_{version}_{os_}_{arch}.zip"
        sums = shasums({filename: archive})
        platform = http.post(
            f"{base}/{version}/platforms",
            json=doc(
                "registry-provider-version-platforms",
                os=os_,
                arch=arch,
                shasum=sha256(archive),
                filename=filename,
            ),
        )
        assert platform.status_code == 201, platform.text
        put(links["shasums-upload"], sums)
        put(links["shasums-sig-upload"], signer.sign(sums) if good else b"not a signature")
        if good:
            put(platform.json()["data"]["links"]["provider-binary-upload"], archive)
    platform_url = f"{base}/1.0.0/platforms/{os_}/{arch}"
    checked = wait_for(
        lambda: http.get(platform_url).json()["data"]["attributes"],
        lambda a: a["status"] != "pending",
    )
    assert checked["status"] == "verified", checked
    refused = wait_for(
        lambda: http.get(f"{base}/1.1.0").json()["data"]["attributes"],
        lambda a: a["status"] != "pending",
    )
    assert refused["status"] == "failed", refused


@pytest.fixture(scope="module")
def signer() -> SigningKey:
    return new_signing_key()


@pytest.fixture(scope="module")
def published(stack: Stack, signer: SigningKey) -> Stack:
    """webui/network/aws 1.0.0, 1.1.0 and a refused 1.2.0; webui/dns/google; webui/hostile/aws;
    the private provider webui/cloudkit (``_publish_provider``)."""
    http = stack.session()
    reply = http.post(
        stack.api("/organizations"),
        json={"data": {"type": "organizations", "attributes": {"name": ORG, "email": "w@x.io"}}},
    )
    assert reply.status_code == 201, reply.text
    good = {"main.tf": MAIN_TF, "README.md": README}
    _publish(
        stack,
        "network",
        "aws",
        {
            "1.0.0": _archive({"main.tf": MAIN_TF, "README.md": "# network\n\nThe first cut."}),
            "1.1.0": _archive(good),
            "1.2.0": b"this is not a gzip archive",
        },
    )
    _publish(stack, "dns", "google", {"0.1.0": _archive({"main.tf": MAIN_TF})})
    _publish(
        stack, "hostile", "aws", {"1.0.0": _archive({"main.tf": MAIN_TF, "README.md": HOSTILE})}
    )
    _publish_provider(stack, signer)
    # Five downloads of network, counted and carried by the stream into its list row.
    for version in ("1.0.0", "1.0.0", "1.1.0", "1.1.0", "1.1.0"):
        got = http.get(f"{stack.url}/api/registry/v1/modules/{ORG}/network/aws/{version}/download")
        assert got.status_code == 204, got.text

    def network_downloads() -> int:
        listed = http.get(f"{stack.url}/api/registry/v1/modules/{ORG}").json()["modules"]
        return next(m["downloads"] for m in listed if m["name"] == "network")

    assert wait_for(network_downloads, lambda n: n == 5, timeout=10) == 5
    return stack


@pytest.fixture(scope="module")
def context(browser: Browser, published: Stack) -> Iterator[BrowserContext]:
    context = browser.new_context(
        base_url=published.url,
        permissions=["clipboard-read", "clipboard-write"],
        viewport={"width": 1280, "height": 900},
    )
    yield context
    context.close()


@pytest.fixture
def page(context: BrowserContext) -> Iterator[Page]:
    page = context.new_page()
    dialogs: list[str] = []
    page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
    yield page
    assert dialogs == [], f"a page opened dialogs: {dialogs}"
    page.close()


def sign_in(page: Page, token: str = ADMIN_TOKEN) -> None:
    """Sign in through the form (the module's browser context keeps the session)."""
    page.goto("/")
    if "/app/sign-in" not in page.url:
        return
    page.get_by_label("API token").fill(token)
    page.get_by_role("button", name="Sign in with the token").click()
    expect(page.get_by_role("heading", name="Organizations", level=1)).to_be_visible()


def test_sign_in_and_out(browser: Browser, published: Stack):
    fresh = browser.new_context(base_url=published.url)
    page = fresh.new_page()
    page.goto("/app/organizations")
    assert "/app/sign-in" in page.url
    check_accessibility(page)
    page.get_by_label("API token").fill("wrong-token")
    page.get_by_role("button", name="Sign in with the token").click()
    expect(page.get_by_role("alert")).to_contain_text("invalid or revoked token")
    check_accessibility(page)
    sign_in(page)
    cookies = {c["name"]: c for c in fresh.cookies()}
    session = cookies["tfe_registry_session"]
    assert session["httpOnly"] and session["secure"] and session["sameSite"] == "Lax"
    assert ADMIN_TOKEN not in session["value"]
    assert page.evaluate("document.cookie").find("tfe_registry_session") == -1
    assert page.evaluate("JSON.stringify(localStorage)") == "{}"
    page.get_by_role("button", name="Sign out").click()
    expect(page.get_by_role("heading", name="Sign in", level=1)).to_be_visible()
    page.goto("/app/organizations")
    assert "/app/sign-in" in page.url
    fresh.close()


def test_organizations_and_search(page: Page):
    sign_in(page)
    check_accessibility(page)
    page.get_by_role("link", name=ORG, exact=True).click()
    expect(page.get_by_role("heading", name=f"Modules in {ORG}")).to_be_visible()
    rows = page.locator("table.modules tbody tr")
    expect(rows).to_have_count(3)
    network = rows.filter(has_text="network")
    expect(network).to_contain_text("1.1.0")
    expect(network).to_contain_text("A VPC with public and private subnets")
    expect(network).to_contain_text("Ingest failed: 1.2.0")
    expect(network.locator("td.number")).to_have_text("5")  # downloads, every version
    check_accessibility(page)
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / "module-list.png"), full_page=True)

    page.get_by_role("searchbox", name="Search").fill("dns")
    page.get_by_role("button", name="Search").click()
    expect(rows).to_have_count(1)
    expect(rows.first).to_contain_text("dns")
    page.get_by_role("searchbox", name="Search").fill("")
    page.get_by_label("Provider").select_option("aws")
    page.get_by_role("button", name="Search").click()
    expect(rows).to_have_count(2)
    expect(page.locator("table.modules")).not_to_contain_text("google")


# A README table wider than any phone (and a long unbreakable cell).
WIDE_README = (
    "# wide\n\n| Input | Type | Default | Description |\n|---|---|---|---|\n"
    '| `cidr_block_for_the_primary_virtual_private_cloud` | `string` | `"10.0.0.0/16"` '
    "| The primary CIDR block of the VPC, used for every subnet the module creates |\n"
)


def _box(page: Page, selector: str) -> dict[str, Any]:
    """Where ``selector``'s first element is and whether its content fits it."""
    return page.locator(selector).first.evaluate(
        """e => { const r = e.getBoundingClientRect(), s = getComputedStyle(e);
                  return {left: r.left, right: r.right, width: r.width, sw: e.scrollWidth,
                          cw: e.clientWidth, overflowX: s.overflowX, whiteSpace: s.whiteSpace,
                          lines: new Set(Array.from((e.querySelector("code") || e).getClientRects())
                                             .filter(q => q.width > 0)
                                             .map(q => Math.round(q.top))).size}; }"""
    )


def test_the_module_page_gives_code_and_wide_readme_tables_room(page: Page, published: Stack):
    """The usage column has room for the snippet on its lines; code blocks and a README's
    wide table scroll in their own box; on a phone nothing widens the page."""
    wide = {"main.tf": MAIN_TF, "README.md": WIDE_README}
    _publish(published, "wide", "aws", {"1.0.0": _archive(wide)})
    sign_in(page)
    page.set_viewport_size({"width": 1280, "height": 900})
    page.goto(f"/app/{ORG}/registry/modules/private/{ORG}/wide/aws")
    side = _box(page, ".module-side")
    assert side["width"] >= 420, side  # was 352 px (22rem), 327 px of it for content
    usage = _box(page, "pre:has(#usage-snippet)")
    # module "wide" { / source = "…" / version = "…" / }: four lines, none wrapped, all seen.
    assert usage["whiteSpace"] == "pre" and usage["lines"] == 4, usage
    assert usage["sw"] <= usage["cw"], usage
    cli = _box(page, "pre:has(#cli-config)")
    assert cli["overflowX"] == "auto" and cli["right"] <= side["right"] + 1, cli
    assert cli["whiteSpace"] == "pre"
    table = _box(page, ".markdown .table-scroll")
    assert table["overflowX"] == "auto" and table["right"] <= side["left"], table
    check_accessibility(page)

    page.set_viewport_size({"width": 390, "height": 844})
    page.reload()
    assert page.evaluate("document.documentElement.scrollWidth") <= 390  # was 1,934 px
    table = _box(page, ".markdown .table-scroll")
    assert table["sw"] > table["cw"] and table["right"] <= 390, table  # scrolls in its box
    expect(page.locator(".markdown .scroll-hint")).to_be_visible()
    expect(page.locator(".markdown .scroll-hint")).to_have_text("Scroll sideways for more →")
    usage = _box(page, "pre:has(#usage-snippet)")
    assert usage["right"] <= 390 and usage["lines"] == 4, usage
    check_accessibility(page)
    page.set_viewport_size({"width": 1280, "height": 900})


def test_phone_tables_stack_or_say_they_scroll(page: Page, published: Stack):
    """On a phone the module list stacks each row (every column seen, labelled); a table that
    still scrolls says so above it; at desktop width neither."""
    sign_in(page)
    page.set_viewport_size({"width": 390, "height": 844})
    page.goto(f"/app/{ORG}/registry/modules")
    network = page.locator("table.modules tbody tr").filter(has_text="network")
    for label in ("Status", "Description", "Updated", "Downloads"):
        cell = network.locator(f'td[data-label="{label}"]')
        expect(cell).to_be_visible()
        box = cell.bounding_box()
        assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= 390, label
    expect(network.locator('td[data-label="Description"]')).to_contain_text("A VPC with")
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
    expect(page.locator(".scroll-hint:visible")).to_have_count(0)  # nothing left to scroll
    page.screenshot(path=str(SCREENSHOTS / "module-list-phone.png"), full_page=False)
    check_accessibility(page)

    page.goto(f"/app/{ORG}/members")
    members = _box(page, ".scroll-box")
    assert members["sw"] > members["cw"]  # wider than the phone: it scrolls in its box
    expect(page.locator(".scroll-hint")).to_be_visible()
    check_accessibility(page)
    page.set_viewport_size({"width": 1280, "height": 900})
    page.goto(f"/app/{ORG}/members")
    expect(page.locator(".scroll-hint")).to_be_hidden()


def test_open_a_module_read_its_readme_and_tabs(page: Page, published: Stack):
    sign_in(page)
    page.goto(f"/app/{ORG}/registry/modules")
    page.get_by_role("link", name="network", exact=True).click()
    expect(page.get_by_role("heading", name="network", level=1)).to_be_visible()
    readme = page.get_by_role("tabpanel")
    expect(readme.get_by_role("heading", name="network", level=3)).to_be_visible()
    expect(readme).to_contain_text("A VPC with public and private subnets")
    expect(readme.locator("table")).to_contain_text("IPv6")
    check_accessibility(page)
    page.screenshot(path=str(SCREENSHOTS / "module-page.png"), full_page=True)
    # On a phone: the page fits its width (no sideways scrolling), and the README shows it.
    desktop = page.viewport_size
    page.set_viewport_size({"width": 390, "height": 844})
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
    page.screenshot(path=str(SCREENSHOTS / "module-page-phone.png"), full_page=False)
    assert desktop is not None
    page.set_viewport_size(desktop)

    # Tabs by keyboard: arrow keys move between them.
    page.get_by_role("tab", name="Readme").focus()
    page.keyboard.press("ArrowRight")
    inputs_tab = page.get_by_role("tab", name="Inputs (3)")
    expect(inputs_tab).to_be_focused()
    expect(inputs_tab).to_have_attribute("aria-selected", "true")
    names = page.get_by_role("tabpanel").locator("tbody th").all_inner_texts()
    assert names == ["az_count", "name", "cidr"]  # required first
    check_accessibility(page)
    for tab in ("Outputs (1)", "Resources (2)", "Dependencies (1)", "Versions (3)"):
        page.get_by_role("tab", name=tab).click()
        expect(page.get_by_role("tabpanel")).to_be_visible()
    expect(page.get_by_role("tabpanel")).to_contain_text("not gzip-compressed")
    check_accessibility(page)


def test_switch_versions_and_copy_the_snippet(page: Page, published: Stack):
    sign_in(page)
    page.goto(f"/app/{ORG}/registry/modules/private/{ORG}/network/aws")
    snippet = page.locator("#usage-snippet")
    host = published.url.split("://", 1)[1]
    expect(snippet).to_contain_text(f'source  = "{host}/{ORG}/network/aws"')
    expect(snippet).to_contain_text('version = "~> 1.1"')
    page.get_by_role("button", name="Copy usage snippet").click()
    expect(page.locator(".copy-status")).to_have_text("Copied to the clipboard.")
    assert page.evaluate("navigator.clipboard.readText()") == snippet.inner_text()

    page.get_by_label("Version", exact=True).select_option("1.0.0")
    page.get_by_role("button", name="Show version").click()
    page.wait_for_url("**/network/aws/1.0.0")
    expect(snippet).to_contain_text('version = "~> 1.0"')
    expect(page.get_by_role("tabpanel")).to_contain_text("The first cut.")
    check_accessibility(page)


@pytest.mark.skipif(shutil.which("terraform") is None, reason="terraform is not on PATH")
def test_the_pages_cli_configuration_lets_terraform_install_the_snippet(
    page: Page, published: Stack, tmp_path: Path
):
    """The stack speaks plain HTTP: the module page shows the CLI configuration that makes
    terraform reach it. That configuration (plus a credentials block for the token) and the
    usage snippet, as the page shows them, are all terraform needs to install the module."""
    sign_in(page)
    page.goto(f"/app/{ORG}/registry/modules/private/{ORG}/network/aws")
    config = page.locator("#cli-config").inner_text()
    snippet = page.locator("#usage-snippet").inner_text()
    host = published.url.split("://", 1)[1]
    assert f'host "{host}"' in config and f'source  = "{host}/{ORG}/network/aws"' in snippet
    expect(page.get_by_role("button", name="Copy CLI configuration")).to_be_visible()
    rc = tmp_path / "terraformrc"
    rc.write_text(config + f'credentials "{host}" {{\n  token = "{ADMIN_TOKEN}"\n}}\n')
    (tmp_path / "main.tf").write_text(snippet)
    env = {**os.environ, "TF_CLI_CONFIG_FILE": str(rc), "CHECKPOINT_DISABLE": "1"}
    got = subprocess.run(
        ["terraform", "get", "-no-color"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert got.returncode == 0, got.stdout + got.stderr
    assert "1.1.0" in got.stdout


def test_a_failed_ingest_shows_its_reason(page: Page):
    sign_in(page)
    page.goto(f"/app/{ORG}/registry/modules/private/{ORG}/network/aws")
    expect(
        page.get_by_label("Version", exact=True).locator("option", has_text="1.2.0")
    ).to_have_text("1.2.0 (ingest failed)")
    page.get_by_label("Version", exact=True).select_option("1.2.0")
    page.get_by_role("button", name="Show version").click()
    status = page.locator("#version-status")
    expect(status).to_contain_text("Version 1.2.0: Ingest failed.")
    expect(status.locator(".failure-reason")).to_contain_text("gzip")
    check_accessibility(page)


def test_a_provider_page_passes_axe_and_fits_a_phone(page: Page, signer: SigningKey):
    """From the organization's nav to the provider list and the provider's page: the
    verified version's platform, the refused version's reason, the signing key (folded)."""
    sign_in(page)
    page.goto(f"/app/{ORG}/registry/modules")
    page.get_by_role("navigation", name="Organization").get_by_role(
        "link", name="Providers"
    ).click()
    expect(page.get_by_role("heading", name=f"Providers in {ORG}", level=1)).to_be_visible()
    row = page.locator("table.providers tbody tr").filter(has_text=PROVIDER)
    expect(row).to_contain_text("1.0.0")
    expect(row).to_contain_text("Failed: 1.1.0: SHA256SUMS.sig is not")
    check_accessibility(page)
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / "provider-list.png"), full_page=True)

    row.get_by_role("link", name=PROVIDER).click()
    expect(page.get_by_role("heading", name=PROVIDER, level=1)).to_be_visible()
    os_, arch = machine()
    platforms = page.locator("table.platforms")
    expect(platforms).to_contain_text(f"{os_}/{arch}")
    expect(platforms).to_contain_text("Verified")
    expect(page.locator("table.versions")).to_contain_text("SHA256SUMS.sig is not")
    expect(page.locator("#usage-snippet")).to_contain_text('version = "~> 1.0"')
    armor = page.get_by_label(f"Public key {signer.key_id}")
    expect(armor).to_be_hidden()
    page.get_by_text("Public key (ASCII armor)").click()
    expect(armor).to_contain_text("BEGIN PGP PUBLIC KEY BLOCK")
    check_accessibility(page)
    page.screenshot(path=str(SCREENSHOTS / "provider-page.png"), full_page=True)
    desktop = page.viewport_size
    page.set_viewport_size({"width": 390, "height": 844})
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
    check_accessibility(page)
    page.screenshot(path=str(SCREENSHOTS / "provider-page-phone.png"), full_page=False)
    assert desktop is not None
    page.set_viewport_size(desktop)

    page.get_by_role("link", name="1.1.0").click()
    page.wait_for_url(f"**/{PROVIDER}/1.1.0")
    expect(page.locator("#version-status")).to_contain_text("Version 1.1.0: Failed.")
    check_accessibility(page)


@pytest.mark.skipif(shutil.which("terraform") is None, reason="terraform is not on PATH")
def test_the_provider_pages_snippet_and_cli_configuration_let_terraform_install_it(
    page: Page, published: Stack, tmp_path: Path, signer: SigningKey
):
    """What the provider page shows (the CLI configuration naming providers.v1, the
    required_providers snippet) and a credentials block are all terraform init needs."""
    sign_in(page)
    page.goto(f"/app/{ORG}/registry/providers/private/{ORG}/{PROVIDER}")
    config = page.locator("#cli-config").inner_text()
    snippet = page.locator("#usage-snippet").inner_text()
    host = published.url.split("://", 1)[1]
    rc = tmp_path / "terraformrc"
    rc.write_text(config + f'credentials "{host}" {{\n  token = "{ADMIN_TOKEN}"\n}}\n')
    (tmp_path / "main.tf").write_text(snippet)
    env = {**os.environ, "TF_CLI_CONFIG_FILE": str(rc), "CHECKPOINT_DISABLE": "1"}
    env.pop("TF_PLUGIN_CACHE_DIR", None)
    got = subprocess.run(
        ["terraform", "init", "-no-color", "-input=false"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert got.returncode == 0, got.stdout + got.stderr
    installed = f"Installed {host}/{ORG}/{PROVIDER} v1.0.0 (self-signed, key ID {signer.key_id})"
    assert installed in got.stdout, got.stdout


def test_a_hostile_readme_runs_nothing(page: Page):
    messages: list[str] = []
    page.on("console", lambda message: messages.append(message.text))
    sign_in(page)
    page.goto(f"/app/{ORG}/registry/modules/private/{ORG}/hostile/aws")
    readme = page.locator(".markdown")
    expect(readme).to_contain_text("hover me")
    readme.get_by_text("hover me").hover()
    readme.get_by_text("a javascript: link").click()
    page.wait_for_timeout(200)
    assert page.evaluate("typeof window.pwned") == "undefined"
    assert readme.locator("script, iframe, [onerror], [onmouseover]").count() == 0
    assert page.url.endswith("/hostile/aws")
    check_accessibility(page)


def test_not_found_and_error_pages(page: Page):
    sign_in(page)
    for path in (
        f"/app/{ORG}/registry/modules/private/{ORG}/nothing/aws",
        "/app/no-such-org/registry/modules",
        "/app/no/such/page",
    ):
        response = page.goto(path)
        assert response is not None and response.status == 404
        expect(page.get_by_role("heading", name="Page not found", level=1)).to_be_visible()
        check_accessibility(page)
    response = page.goto(f"/app/{ORG}/registry/modules?page=zero")
    assert response is not None and response.status == 400
    expect(page.get_by_role("heading", name="Bad request", level=1)).to_be_visible()
    check_accessibility(page)


def test_an_unknown_page_has_every_pages_layout_and_the_sites_error_text(
    page: Page, published: Stack
):
    """A path no route serves (the local server's fallback) shows the header of the session,
    the customized error text and the footer, as every other error page."""
    admin = published.session()
    url = published.api("/admin/customization-settings")

    def customize(error: str, footer: str) -> None:
        attributes = {"error": error, "footer": footer}
        body = {"data": {"type": "customization-settings", "attributes": attributes}}
        assert admin.patch(url, json=body).status_code == 200

    customize("Ask **the platform team**.", "Run by the e2e team")
    try:
        sign_in(page)
        response = page.goto("/app/no-such-org/anything")
        assert response is not None and response.status == 404
        expect(page.get_by_role("heading", name="Page not found", level=1)).to_be_visible()
        expect(page.locator("main .custom-text")).to_have_text("Ask the platform team.")
        expect(page.locator("footer .custom-text")).to_have_text("Run by the e2e team")
        expect(page.locator("#signed-in-as")).to_contain_text("Signed in as ")
        check_accessibility(page)
    finally:
        customize("", "")


# Pages a crawl must not follow: they act (sign-out is a form, but links that change things
# would be a bug of their own), or repeat a page already seen with other data.
CRAWL_SKIP = ("/app/sign-out", "/app/oauth/", "/users/saml/", "/app/sign-in/sso")
CRAWL_LIMIT = 60


# The first path segments under /app/ that are pages, not an organization's name.
SITE_PAGES = {"organizations", "admin", "account", "sign-in", "password-reset", "invitations"}


def _other_organization(path: str) -> bool:
    first = path.removeprefix("/app/").split("/", 1)[0].split("?", 1)[0]
    return first not in SITE_PAGES and first != ORG


def _page_kind(path: str) -> str:
    """One crawl per kind of page: module versions and teams differ only by their data."""
    path = path.split("?", 1)[0].split("#", 1)[0]
    path = re.sub(r"/\d+\.\d+\.\d+[^/]*$", "/:version", path)
    # Ids (user-…, team-…, at-…): the shared stack holds other tests' users and teams.
    path = re.sub(r"/[a-z]{2,5}-[A-Za-z0-9]{12,}(?=/|$)", "/:id", path)
    return re.sub(r"^/app/admin/organizations/[^/]+", "/app/admin/organizations/:name", path)


def test_every_page_a_site_admin_can_reach_fits_a_phone_and_passes_axe(page: Page):
    """Crawl the UI from the organizations page, as the site admin, following every same-site
    link (one page of each kind): each fits a 390 px phone without sideways scrolling (wide
    tables and READMEs scroll in their own box) and axe-core finds nothing serious. New pages
    are covered as soon as a link reaches them."""
    sign_in(page)
    page.set_viewport_size({"width": 390, "height": 844})
    queue, seen, checked = ["/app/organizations"], set(), []
    while queue and len(checked) < CRAWL_LIMIT:
        path = queue.pop(0)
        kind = _page_kind(path)
        if kind in seen or any(path.startswith(skip) for skip in CRAWL_SKIP):
            continue
        if _other_organization(path):
            continue  # the shared stack holds other tests' organizations: this one's suffice
        seen.add(kind)
        response = page.goto(path)
        assert response is not None and response.status < 500, path
        if "/app/sign-in" in page.url:
            continue  # a page for another kind of caller
        width = page.evaluate("document.documentElement.scrollWidth")
        assert width <= 390, f"{path} is {width} px wide on a 390 px phone"
        check_accessibility(page)
        checked.append(path)
        links = page.eval_on_selector_all(
            "a[href^='/app/']", "links => links.map(a => a.getAttribute('href'))"
        )
        queue.extend(link for link in links if _page_kind(link) not in seen)
    print(f"crawled {len(checked)} pages: {checked}")  # noqa: T201
    assert len(checked) >= 10, checked  # the crawl reached the module, people and admin pages
    assert any("/registry/modules/private/" in p for p in checked), checked
    assert any("/registry/providers/private/" in p for p in checked), checked


# ----- over the wire, without a browser: what the real HTTP server answers ----------------


class WireClient:
    """Raw HTTP/1.1 to the local stack (http.client: nothing is re-encoded or retried), with
    the cookies a browser keeps for localhost (Secure ones included; requests drops them)."""

    def __init__(self, url: str) -> None:
        self.host, self.port = url.removeprefix("http://").split(":")
        self.cookies: dict[str, str] = {}

    def send(self, method: str, path: str, form: dict[str, str] | None = None) -> Any:
        headers = {"Cookie": "; ".join(f"{k}={v}" for k, v in self.cookies.items())}
        body = None
        if form is not None:
            headers["Content-Type"] = "application/x-www-form-urlencoded"
            body = urlencode(form)
        connection = http.client.HTTPConnection(self.host, int(self.port), timeout=10)
        try:
            connection.request(method, path, body=body, headers=headers)
            reply = connection.getresponse()  # RemoteDisconnected: no answer at all
            reply.text = reply.read().decode()
        finally:
            connection.close()
        for value in reply.headers.get_all("Set-Cookie") or []:
            name, _, rest = value.partition("=")
            cookie = rest.split(";", 1)[0]
            if "Max-Age=0" in value:
                self.cookies.pop(name, None)
            else:
                self.cookies[name] = cookie
        return reply

    def csrf(self, path: str = "/app/sign-in") -> str:
        page = self.send("GET", path)
        return re.search(r'name="csrf_token" value="([^"]+)"', page.text).group(1)


def _session_rows(stack: Stack) -> set[str]:
    """The web-sessions table of the stack's moto server (the spawned stack's default names)."""
    dynamodb = boto3.client(
        "dynamodb",
        endpoint_url=stack.moto_url,
        region_name="us-east-1",
        aws_access_key_id="local",
        aws_secret_access_key="local",
    )
    items = dynamodb.scan(TableName="registry-dev-web-sessions")["Items"]
    return {item["session_hash"]["S"] for item in items}


@pytest.mark.parametrize(
    "encoded", ["%0aX", "%0dX", "%00X", "%C2%85X", "%E2%80%A8X", "%E2%80%A9X", "%5C..%5Cevil"]
)
def test_a_hostile_next_over_the_wire_is_a_redirect_home(stack: Stack, encoded: str):
    """The real server answered nothing for U+2028 in Location, and 500 for LF."""
    client = WireClient(stack.url)
    before = _session_rows(stack)
    form = {"token": ADMIN_TOKEN, "csrf_token": client.csrf(), "next": unquote("/app/" + encoded)}
    signed = client.send("POST", "/app/sign-in", form)
    assert signed.status == 303 and signed.headers["Location"] == "/app/organizations"
    secret = client.cookies["tfe_registry_session"]
    assert _session_rows(stack) - before == {hashlib.sha256(secret.encode()).hexdigest()}
    again = client.send("GET", "/app/sign-in?next=/app/" + encoded)  # signed in
    assert again.status == 303 and again.headers["Location"] == "/app/organizations"
    client.cookies.clear()
    form_page = client.send("GET", "/app/sign-in?next=/app/" + encoded)  # not signed in
    assert form_page.status == 200 and 'name="next" value="/app/organizations"' in form_page.text
