"""Scan findings in a real browser against the real local stack: the module page's Security
tab and the module list's Security column pass the pages' checks (axe-core, a 390 px phone),
and the findings API answers over HTTP.

The scan's results are written into the stack's own S3 and DynamoDB as the scan function
writes them (the report at ``findings_key``, the summary on the version and its module
entry). The module is an insecure one: where the stack runs the real scan too, it finds
issues of its own in it, so what these tests assert holds whichever result is there."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
import requests
from boto3.dynamodb.types import TypeSerializer
from botocore.config import Config
from playwright.sync_api import Browser, BrowserContext, Page, expect

from chalicelib.artifacts import semver
from chalicelib.modules.keys import UploadKey
from chalicelib.trust import findings
from tests.conftest import doc, tar_gz
from tests.e2e.conftest import ADMIN_TOKEN, Stack, wait_for
from tests.e2e.pages import TIMEOUT_MS, check_page
from tests.modules.scan_data import report

ORG = "scans"
NAME, PROVIDER, VERSION = "storage", "aws", "1.0.0"
INSECURE_TF = """
resource "aws_s3_bucket" "public" { bucket = "open-to-all" }
resource "aws_s3_bucket_acl" "public" {
  bucket = aws_s3_bucket.public.id
  acl    = "public-read"
}
resource "aws_security_group" "ssh" {
  ingress {
    from_port   = 22
    to_port     = 22
    protocol    = "tcp"
    cidr_blocks = ["0.0.0.0/0"]
  }
}
"""
LOCAL = {"region_name": "us-east-1", "aws_access_key_id": "local", "aws_secret_access_key": "local"}


def _aws(stack: Stack, service: str) -> Any:
    config = Config(s3={"addressing_style": "path"}, signature_version="s3v4")
    return boto3.client(service, endpoint_url=stack.moto_url, config=config, **LOCAL)


def _record_scan(stack: Stack, module: dict[str, Any], version: dict[str, Any]) -> None:
    """What the scan function stores, in the stack's moto (its default names)."""
    scanned = report()
    key = UploadKey(module["id"], VERSION, version["id"]).findings_key
    _aws(stack, "s3").put_object(
        Bucket="registry-dev-archives", Key=key, Body=findings.encode(scanned)
    )
    dynamodb, value = _aws(stack, "dynamodb"), TypeSerializer().serialize
    summary = scanned.summary()
    dynamodb.update_item(
        TableName="registry-dev-registry-module-versions",
        Key={"module_id": {"S": module["id"]}, "order_key": {"S": semver.parse(VERSION).order_key}},
        UpdateExpression="SET #scan = :summary",
        ExpressionAttributeNames={"#scan": "scan"},
        ExpressionAttributeValues={":summary": {"S": json.dumps(summary)}},
    )
    dynamodb.update_item(
        TableName="registry-dev-registry-modules",
        Key={"organization": {"S": ORG}, "key": {"S": f"private#{ORG}#{NAME}#{PROVIDER}"}},
        UpdateExpression="SET version_statuses.#v.#scan = :entry",
        ExpressionAttributeNames={"#v": VERSION, "#scan": "scan"},
        ExpressionAttributeValues={":entry": value(findings.entry_summary(summary))},
    )


@pytest.fixture(scope="module")
def scanned(stack: Stack) -> Stack:
    """scans/storage/aws 1.0.0, ingested, with its scan's findings recorded."""
    http = stack.session()
    created = http.post(
        stack.api("/organizations"), json=doc("organizations", name=ORG, email="s@x.io")
    )
    assert created.status_code == 201, created.text
    modules = stack.api(f"/organizations/{ORG}/registry-modules")
    module = http.post(modules, json=doc("registry-modules", name=NAME, provider=PROVIDER))
    assert module.status_code == 201, module.text
    url = f"{modules}/private/{ORG}/{NAME}/{PROVIDER}"
    version = http.post(f"{url}/versions", json=doc("registry-module-versions", version=VERSION))
    assert version.status_code == 201, version.text
    upload = version.json()["data"]["links"]["upload"]
    put = requests.put(upload, data=tar_gz({"main.tf": INSECURE_TF}), timeout=30)
    assert put.status_code == 200, put.text
    wait_for(
        lambda: http.get(url).json()["data"]["attributes"]["version-statuses"],
        lambda statuses: statuses and statuses[0]["status"] not in ("pending", "reg_ingressing"),
    )
    _record_scan(stack, module.json()["data"], version.json()["data"])
    return stack


@pytest.fixture
def page(browser: Browser, scanned: Stack) -> Iterator[Page]:
    context: BrowserContext = browser.new_context(
        base_url=scanned.url, viewport={"width": 1280, "height": 900}
    )
    page = context.new_page()
    page.set_default_timeout(TIMEOUT_MS)
    page.goto("/app/sign-in")
    page.get_by_label("API token").fill(ADMIN_TOKEN)
    page.get_by_role("button", name="Sign in with the token").click()
    expect(page.get_by_role("heading", name="Organizations", level=1)).to_be_visible()
    yield page
    context.close()


def test_the_findings_api_over_http(scanned: Stack):
    url = scanned.api(
        f"/organizations/{ORG}/registry-modules/private/{ORG}/{NAME}/{PROVIDER}"
        f"/versions/{VERSION}/findings"
    )
    http = scanned.session()
    reply = http.get(url, params={"filter[severity]": "critical,high"})
    assert reply.status_code == 200, reply.text
    body = reply.json()
    assert body["meta"]["status"] == "findings" and body["meta"]["scanner"] == "trivy"
    severities = [f["attributes"]["severity"] for f in body["data"]]
    assert severities and set(severities) <= {"critical", "high"}
    assert severities == sorted(severities, key=["critical", "high"].index)
    assert http.get(url, params={"filter[severity]": "severe"}).status_code == 400
    assert scanned.session(None).get(url).status_code == 401


def test_the_security_tab_lists_the_findings(page: Page):
    page.goto(f"/app/{ORG}/registry/modules/private/{ORG}/{NAME}/{PROVIDER}")
    tab = page.get_by_role("tab", name=re.compile(r"^Security \(\d+\)$"))
    tab.click()
    panel = page.get_by_role("tabpanel")
    expect(panel.locator("#scan-status")).to_contain_text("found")
    expect(panel).to_contain_text("Scanned by trivy")
    rows = panel.locator("table.findings tbody tr")
    expect(rows.first).to_be_visible()
    first = rows.first
    expect(first.locator(".badge.severity")).to_have_text(re.compile("critical|high"))
    expect(first.locator('td[data-label="Where"] code')).to_have_text(re.compile(r"\.tf:\d+"))
    link = first.get_by_role("link")
    if link.count():
        assert link.get_attribute("href").startswith("https://")
        assert "noopener" in (link.get_attribute("rel") or "")
    check_page(page)


def test_the_module_list_shows_the_counts(page: Page):
    page.goto(f"/app/{ORG}/registry/modules")
    cell = page.locator("table.modules tbody tr").filter(has_text=NAME).locator("td.scan")
    expect(cell.locator(".badge.severity").first).to_have_text(re.compile(r"^\d+ (critical|high)$"))
    check_page(page)
