"""A version's scan findings through the HTTP layer: the findings list (filter, pages, meta),
the version's scan summary, the module's per-version scan counts, and who may read them.

The scan results are stored as the scan function stores them (``tests.modules.scan_data``)."""

from __future__ import annotations

import gzip
from urllib.parse import urlsplit

import pytest

from chalicelib.artifacts import objects
from chalicelib.modules.keys import UploadKey
from chalicelib.trust import findings
from tests.conftest import Api, make_org, make_team
from tests.modules.helpers import ORG, create_module, publish
from tests.modules.scan_data import (
    INSECURE,
    NO_LOGGING,
    OPEN_SSH,
    PUBLIC_BUCKET,
    SCANNED_AT,
    UNENCRYPTED_EBS,
    failed_report,
    record_scan,
    report,
    version_item,
)

VPC = f"{ORG}/private/acme/vpc/aws"
FINDINGS = f"{VPC}/versions/1.0.0/findings"
NO_FINDINGS = {"critical": 0, "high": 0, "medium": 0, "low": 0, "unknown": 0}


@pytest.fixture
def vpc(api: Api) -> str:
    """acme/vpc/aws with version 1.0.0 published (not scanned yet): the module's id."""
    make_org(api, "acme")
    module_id = create_module(api)["id"]
    publish(api, "1.0.0")
    return module_id


def test_findings_most_severe_first_with_the_scan_in_meta(api: Api, vpc: str):
    item = record_scan(vpc, "1.0.0", report())
    reply = api.get(FINDINGS)
    assert reply.status == 200, reply.json
    assert [f["attributes"]["rule-id"] for f in reply.data] == [
        "AVD-AWS-0107",
        "AVD-AWS-0092",
        "AVD-AWS-0026",
        "AVD-AWS-0089",
    ]
    bucket = reply.data[1]
    assert bucket["type"] == "registry-module-findings"
    assert bucket["id"] == f"{item.id}-2"
    assert bucket["attributes"] == {
        "rule-id": PUBLIC_BUCKET.rule_id,
        "title": PUBLIC_BUCKET.title,
        "severity": "high",
        "resource": "aws_s3_bucket_acl.public",
        "file": "main.tf",
        "start-line": 12,
        "end-line": 15,
        "description": PUBLIC_BUCKET.description,
        "resolution": PUBLIC_BUCKET.resolution,
        "guidance-url": "https://avd.aquasec.com/misconfig/avd-aws-0092",
    }
    assert bucket["relationships"]["registry-module-version"]["data"] == {
        "id": item.id,
        "type": "registry-module-versions",
    }
    assert reply.data[2]["attributes"]["guidance-url"] is None  # the scanner gave none
    meta = reply.json["meta"]
    assert {k: v for k, v in meta.items() if k != "pagination"} == {
        "status": "findings",
        "scanner": "trivy",
        "scanner-version": "0.76.0",
        "rules-version": "embedded checks of trivy 0.76.0",
        "scanned-at": SCANNED_AT,
        "counts": {"critical": 1, "high": 2, "medium": 0, "low": 1, "unknown": 0},
        "truncated": False,
    }
    assert meta["pagination"]["total-count"] == 4


@pytest.mark.parametrize(
    ("wanted", "rules"),
    [
        ("critical", [OPEN_SSH.rule_id]),
        ("high,critical", [OPEN_SSH.rule_id, PUBLIC_BUCKET.rule_id, UNENCRYPTED_EBS.rule_id]),
        (" LOW , high ", [PUBLIC_BUCKET.rule_id, UNENCRYPTED_EBS.rule_id, NO_LOGGING.rule_id]),
        ("medium", []),
        ("", [f.rule_id for f in (OPEN_SSH, PUBLIC_BUCKET, UNENCRYPTED_EBS, NO_LOGGING)]),
    ],
)
def test_filter_by_severity(api: Api, vpc: str, wanted: str, rules: list[str]):
    record_scan(vpc, "1.0.0", report())
    reply = api.get(f"{FINDINGS}?filter%5Bseverity%5D={wanted.replace(' ', '%20')}")
    assert reply.status == 200, reply.json
    assert [f["attributes"]["rule-id"] for f in reply.data] == rules
    assert reply.json["meta"]["pagination"]["total-count"] == len(rules)
    # The counts are the scan's, whatever the filter shows.
    assert reply.json["meta"]["counts"]["high"] == 2


@pytest.mark.parametrize("wanted", ["severe", "high,bogus", "HIGH;low", "x" * 101])
def test_an_unknown_severity_is_refused(api: Api, vpc: str, wanted: str):
    record_scan(vpc, "1.0.0", report())
    reply = api.get(f"{FINDINGS}?filter%5Bseverity%5D={wanted}")
    if len(wanted) > 100:  # past the parameter's bound: the wrapper's 422
        assert reply.status == 422, reply.json
    else:
        assert reply.status == 400, reply.json
        assert "is not a severity" in reply.error["detail"]
    assert reply.error["source"] == {"parameter": "filter[severity]"}


def test_findings_are_paged_like_the_other_lists(api: Api, vpc: str):
    record_scan(vpc, "1.0.0", report())
    first = api.get(f"{FINDINGS}?filter%5Bseverity%5D=critical,high,low&page%5Bsize%5D=2")
    assert [f["attributes"]["severity"] for f in first.data] == ["critical", "high"]
    pagination = first.json["meta"]["pagination"]
    assert pagination["total-count"] == 4 and pagination["total-pages"] == 2
    assert pagination["next-page"] == 2
    next_link = urlsplit(first.json["links"]["next"])
    assert "filter%5Bseverity%5D=critical%2Chigh%2Clow" in next_link.query  # the filter kept
    second = api.get(f"{next_link.path}?{next_link.query}")
    assert second.status == 200, second.json
    assert [f["attributes"]["severity"] for f in second.data] == ["high", "low"]
    version_id = version_item(vpc, "1.0.0").id
    assert [f["id"] for f in first.data + second.data] == [
        f"{version_id}-{n}" for n in (1, 2, 3, 4)
    ]
    assert api.get(f"{FINDINGS}?page%5Bnumber%5D=3&page%5Bsize%5D=2").data == []
    assert api.get(f"{FINDINGS}?page%5Bsize%5D=x").status == 422


def test_a_version_not_scanned_yet_is_pending(api: Api, vpc: str):
    reply = api.get(FINDINGS)
    assert reply.status == 200, reply.json
    assert reply.data == []
    meta = reply.json["meta"]
    assert meta["status"] == "pending" and meta["counts"] is None and meta["scanner"] is None
    version = api.get(f"{VPC}/version?module_version=1.0.0").data["attributes"]
    assert version["scan-status"] == "pending"
    assert version["scan-counts"] is None and version["scan"] is None
    (entry,) = api.get(VPC).data["attributes"]["version-statuses"]
    assert entry == {"version": "1.0.0", "status": "ok"}  # no scan yet: as before scans


def test_a_failed_scan_says_why_and_lists_nothing(api: Api, vpc: str):
    record_scan(vpc, "1.0.0", failed_report(), store_report=False)
    reply = api.get(FINDINGS)
    assert reply.status == 200, reply.json
    assert reply.data == []
    meta = reply.json["meta"]
    assert meta["status"] == "failed" and meta["error"] == "the scan took longer than 60 s"
    version = api.get(f"{VPC}/version?module_version=1.0.0").data["attributes"]
    assert version["scan-status"] == "failed" and version["scan-counts"] is None
    assert version["scan"]["error"] == "the scan took longer than 60 s"


def test_a_truncated_report_counts_every_finding(api: Api, vpc: str):
    record_scan(vpc, "1.0.0", report(dropped={"low": 40}))
    reply = api.get(FINDINGS)
    assert len(reply.data) == 4
    assert reply.json["meta"]["truncated"] is True
    assert reply.json["meta"]["counts"]["low"] == 41


def test_the_version_resource_and_the_module_carry_the_scan_summary(api: Api, vpc: str):
    record_scan(vpc, "1.0.0", report())
    counts = {"critical": 1, "high": 2, "medium": 0, "low": 1, "unknown": 0}
    version = api.get(f"{VPC}/version?module_version=1.0.0").data["attributes"]
    assert version["scan-status"] == "findings"
    assert version["scan-counts"] == counts
    assert version["scan"] == {
        "scanner": "trivy",
        "scanner-version": "0.76.0",
        "rules-version": "embedded checks of trivy 0.76.0",
        "scanned-at": SCANNED_AT,
    }
    listed = api.get(f"{VPC}/versions").data[0]["attributes"]
    assert listed["scan-status"] == "findings" and listed["scan-counts"] == counts
    # The module's entry (the list reads no version): status and counts.
    for module in (api.get(VPC).data, api.get(ORG).data[0]):
        (entry,) = module["attributes"]["version-statuses"]
        assert entry["scan-status"] == "findings" and entry["scan-counts"] == counts


def test_a_clean_version_passes(api: Api, vpc: str):
    record_scan(vpc, "1.0.0", report(()))
    reply = api.get(FINDINGS)
    assert reply.data == [] and reply.json["meta"]["status"] == "passed"
    assert reply.json["meta"]["counts"] == NO_FINDINGS
    (entry,) = api.get(VPC).data["attributes"]["version-statuses"]
    assert entry["scan-status"] == "passed" and entry["scan-counts"] == NO_FINDINGS


def test_the_module_list_reads_nothing_more_for_the_scans(api: Api, vpc: str):
    """The counts come from the module item (its entries' ``scan``): listing scanned
    modules costs the calls it cost before they were scanned."""
    from bench.reads import counting_reads

    create_module(api, "db")
    publish(api, "1.0.0", name="db")
    api.get(ORG)  # warm
    with counting_reads() as before:
        assert api.get(ORG).status == 200
    record_scan(vpc, "1.0.0", report())
    with counting_reads() as after:
        listed = api.get(ORG).data
    assert after.calls == before.calls, (before.detail(), after.detail())
    assert [m["attributes"]["version-statuses"][0].get("scan-status") for m in listed] == [
        None,  # db: not scanned
        "findings",
    ]


def test_only_readers_of_the_module_read_its_findings(api: Api, vpc: str):
    record_scan(vpc, "1.0.0", report())
    make_org(api, "other")
    _, reader = make_team(api, "acme", "readers")
    _, outsider = make_team(api, "other", "owners-of-other", manage_modules=True)
    assert len(api.as_(reader).get(FINDINGS).data) == 4
    for caller in (api.as_(outsider),):
        module = caller.get(VPC)
        refused = caller.get(FINDINGS)
        assert module.status == refused.status == 404, refused.json
        assert "findings" not in refused.body.decode() and "AVD" not in refused.body.decode()
        # The module is looked up first: a filter, good or bad, changes nothing for them.
        for wanted in ("high", "bogus"):
            assert caller.get(f"{FINDINGS}?filter%5Bseverity%5D={wanted}").status == 404
    assert api.as_(None).get(FINDINGS).status == 401
    assert api.as_("nope").get(FINDINGS).status == 401
    assert api.get(f"{VPC}/versions/9.9.9/findings").status == 404
    assert api.get(f"{VPC}/versions/not-a-version/findings").status == 404
    assert api.get(f"{ORG}/private/acme/nope/aws/versions/1.0.0/findings").status == 404
    assert api.get(f"{ORG}/secret/acme/vpc/aws/versions/1.0.0/findings").status == 404


def test_a_missing_report_shows_the_summary(api: Api, vpc: str):
    record_scan(vpc, "1.0.0", report(), store_report=False)
    reply = api.get(FINDINGS)
    assert reply.status == 200 and reply.data == []
    assert reply.json["meta"]["status"] == "findings"
    assert reply.json["meta"]["counts"]["critical"] == 1


def test_an_unreadable_report_is_an_error_not_an_empty_list(api: Api, vpc: str):
    item = record_scan(vpc, "1.0.0", report())
    key = UploadKey(vpc, "1.0.0", item.id).findings_key
    objects.put(key, b"not gzip", "application/gzip")
    reply = api.get(FINDINGS)
    assert reply.status == 500
    assert reply.error["detail"] == "the scan report of version 1.0.0 cannot be read"


def test_a_report_is_read_under_its_bounds(api: Api, vpc: str, monkeypatch: pytest.MonkeyPatch):
    from chalicelib.modules.scanning import findings as reader

    item = record_scan(vpc, "1.0.0", report())
    stored = findings.encode(report())
    monkeypatch.setattr(reader, "MAX_REPORT_BYTES", len(stored) - 1)
    assert api.get(FINDINGS).status == 500
    monkeypatch.setattr(reader, "MAX_REPORT_BYTES", len(stored))
    assert api.get(FINDINGS).status == 200
    # A few kilobytes that unpack to megabytes are refused unpacked, not read whole.
    bomb = gzip.compress(b" " * (8 * 1024 * 1024))
    objects.put(UploadKey(vpc, "1.0.0", item.id).findings_key, bomb, "application/gzip")
    monkeypatch.setattr(reader, "MAX_REPORT_JSON_BYTES", 1024 * 1024)
    assert api.get(FINDINGS).status == 500


def test_decode_bounds_what_it_unpacks():
    stored = findings.encode(report())
    assert findings.decode(stored, 1 << 20) == findings.decode(stored) == report()
    with pytest.raises(findings.ReportTooLarge):
        findings.decode(gzip.compress(b"[" * 4096), 4095)


def test_only_web_links_are_links():
    from chalicelib.modules.scanning.findings import guidance_link, lines

    assert guidance_link(PUBLIC_BUCKET) == PUBLIC_BUCKET.guidance_url
    assert guidance_link(NO_LOGGING) is None  # javascript:
    assert guidance_link(UNENCRYPTED_EBS) is None  # none given
    assert lines(PUBLIC_BUCKET) == "12-15" and lines(OPEN_SSH) == "3"
    assert lines(INSECURE[0].__class__("r", "t", findings.Severity.LOW)) == ""
