"""The web UI's scan findings: the module page's Security tab and the module list's Security
column (in-process browser; Chromium and axe check them in tests/e2e/test_findings_web_e2e.py)."""

from __future__ import annotations

import re
from dataclasses import replace

import pytest

from tests.conftest import ADMIN_TOKEN, Api, make_org, make_team
from tests.modules.helpers import create_module, publish
from tests.modules.scan_data import (
    NO_LOGGING,
    OPEN_SSH,
    PUBLIC_BUCKET,
    failed_report,
    record_scan,
    report,
)
from tests.support.web_browser import Browser

LIST = "/app/acme/registry/modules"
VPC = LIST + "/private/acme/vpc/aws"


@pytest.fixture
def vpc(api: Api) -> str:
    """acme/vpc/aws 1.0.0 and 1.1.0 (not scanned yet): the module's id."""
    make_org(api, "acme")
    module_id = create_module(api)["id"]
    publish(api, "1.0.0")
    publish(api, "1.1.0")
    return module_id


def _security(page: str) -> str:
    """The Security panel of a module page."""
    found = re.search(r'<section id="security".*?</section>', page, re.S)
    assert found, "no Security panel"
    return found.group(0)


def test_the_security_tab_lists_each_finding_where_it_is(api: Api, browser: Browser, vpc: str):
    hostile = replace(PUBLIC_BUCKET, title="<script>window.pwned=1</script>")
    record_scan(vpc, "1.1.0", report((OPEN_SSH, hostile, NO_LOGGING)))
    browser.sign_in(ADMIN_TOKEN)
    page = browser.get(VPC)
    assert page.status_code == 200
    assert '<a href="#security">Security (3)</a>' in page.text
    panel = _security(page.text)
    assert "found 3 issues" in panel
    assert "1 critical</span>" in panel and "1 high</span>" in panel and "1 low</span>" in panel
    assert "Scanned by trivy 0.76.0 (embedded checks of trivy 0.76.0)" in panel
    assert '<time datetime="2026-11-28T12:00:00Z">2026-11-28 12:00 UTC</time>' in panel
    rows = re.findall(r"<tr>\s*<td data-label=\"Severity\">.*?</tr>", panel, re.S)
    assert len(rows) == 3
    assert ">critical</span>" in rows[0] and "<code>modules/sg/main.tf:3</code>" in rows[0]
    assert (
        '<a href="https://avd.aquasec.com/misconfig/avd-aws-0107" '
        'rel="noopener noreferrer nofollow">AVD-AWS-0107</a>'
    ) in rows[0]
    assert "<code>aws_s3_bucket_acl.public</code>" in rows[1]
    assert "<code>main.tf:12-15</code>" in rows[1]
    assert "&lt;script&gt;window.pwned=1&lt;/script&gt;" in rows[1] and "<script>" not in panel
    # A guidance URL that is not http(s) is not a link.
    assert "javascript:" not in panel and 'data-label="Rule">AVD-AWS-0089</th>' in rows[2]


def test_the_status_line_says_pending_failed_and_passed(api: Api, browser: Browser, vpc: str):
    browser.sign_in(ADMIN_TOKEN)
    pending = _security(browser.get(VPC).text)
    assert "Version 1.1.0 is not scanned yet." in pending and "<table" not in pending
    record_scan(vpc, "1.1.0", failed_report("trivy ran out of memory"), store_report=False)
    failed = _security(browser.get(VPC).text)
    assert "The scan of version 1.1.0 failed" in failed and "trivy ran out of memory" in failed
    record_scan(vpc, "1.0.0", report(()))
    passed = _security(browser.get(VPC + "/1.0.0").text)
    assert "The scan of version 1.0.0 found nothing." in passed and "<table" not in passed


def test_the_module_list_shows_the_latest_versions_counts(api: Api, browser: Browser, vpc: str):
    """The counts come from the module item: the list page costs no call more."""
    from bench.reads import counting_reads

    create_module(api, "db")
    publish(api, "1.0.0", name="db")
    browser.sign_in(ADMIN_TOKEN)
    browser.get(LIST)  # warm
    with counting_reads() as before:
        listing = browser.get(LIST).text
    assert listing.count("not scanned yet") == 2
    record_scan(vpc, "1.0.0", report((OPEN_SSH,)))  # not the latest: not shown
    record_scan(vpc, "1.1.0", report((PUBLIC_BUCKET, NO_LOGGING)))
    with counting_reads() as after:
        listing = browser.get(LIST).text
    assert after.calls == before.calls, (before.detail(), after.detail())
    cells = re.findall(r'<td data-label="Security" class="scan">(.*?)</td>', listing, re.S)
    db, vpc_cell = cells
    assert "not scanned yet" in db
    assert "1 high</span>" in vpc_cell and "1 low</span>" in vpc_cell
    assert "critical" not in vpc_cell


def test_readers_see_the_security_tab_and_outsiders_nothing(api: Api, browser: Browser, vpc: str):
    record_scan(vpc, "1.1.0", report())
    _, reader = make_team(api, "acme", "readers")
    browser.sign_in(reader)
    assert "AVD-AWS-0107" in _security(browser.get(VPC).text)
    make_org(api, "other")
    _, outsider = make_team(api, "other", "owners-of-other", manage_modules=True)
    stranger = Browser(api.client)
    stranger.sign_in(outsider)
    refused = stranger.get(VPC)
    assert refused.status_code == 404 and "AVD-AWS" not in refused.text


def test_an_unreadable_report_says_so_and_the_page_is_served(api: Api, browser: Browser, vpc: str):
    from chalicelib.artifacts import objects
    from chalicelib.modules.keys import UploadKey

    item = record_scan(vpc, "1.1.0", report())
    objects.put(UploadKey(vpc, "1.1.0", item.id).findings_key, b"not gzip", "application/gzip")
    browser.sign_in(ADMIN_TOKEN)
    page = browser.get(VPC)
    assert page.status_code == 200
    panel = _security(page.text)
    assert "The findings of version 1.1.0 cannot be read" in panel and "<table" not in panel
