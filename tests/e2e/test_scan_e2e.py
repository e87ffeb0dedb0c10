"""Scanning through the real local stack: a module uploaded as a CI pipeline would, ingested
by the stack's ingest poller, scanned by its scan poller (the scan function's handler) with
the real scanner, the report stored beside the archive and the summary on the version."""

from __future__ import annotations

from typing import Any

import boto3
import pytest
import requests
from botocore.config import Config

from chalicelib.artifacts import semver
from chalicelib.modules.keys import UploadKey
from chalicelib.trust import findings
from chalicelib.trust.findings import ScanReport, Severity
from tests.conftest import doc, tar_gz
from tests.e2e.conftest import Stack, wait_for
from tests.trust.modules import INSECURE_TF

pytestmark = pytest.mark.e2e

LOCAL = {"aws_access_key_id": "local", "aws_secret_access_key": "local"}  # the stack's own
BUCKET = "registry-dev-archives"
VERSIONS_TABLE = "registry-dev-registry-module-versions"

# Each of those, by Trivy's rule: a public-read ACL, SSH open to the world, an unencrypted
# EBS volume, a publicly accessible database.
EXPECTED_RULES = {"AWS-0092", "AWS-0107", "AWS-0026", "AWS-0180"}
CLEAN_TF = """
variable "name" {
  type        = string
  description = "What to call it"
}
resource "random_id" "suffix" {
  byte_length = 4
}
output "id" {
  value = "${var.name}-${random_id.suffix.hex}"
}
"""


def aws(stack: Stack, service: str) -> Any:
    return boto3.client(
        service,
        endpoint_url=stack.moto_url,
        region_name="us-east-1",
        config=Config(s3={"addressing_style": "path"}, retries={"max_attempts": 1}),
        **LOCAL,
    )


def publish(stack: Stack, ci: requests.Session, name: str, main_tf: str) -> UploadKey:
    """Create the module and its version 1.0.0, and PUT the archive to its upload link."""
    modules = stack.api("/organizations/scanned/registry-modules")
    created = ci.post(modules, json=doc("registry-modules", name=name, provider="aws"))
    assert created.status_code == 201, created.text
    reply = ci.post(
        stack.api(f"/registry-modules/scanned/{name}/aws/versions"),
        json=doc("registry-module-versions", version="1.0.0"),
    )
    assert reply.status_code == 201, reply.text
    archive = tar_gz({"main.tf": main_tf, "README.md": f"# {name}\n"})
    put = requests.put(reply.json()["data"]["links"]["upload"], data=archive, timeout=10)
    assert put.status_code == 200, put.text
    return UploadKey(created.json()["data"]["id"], "1.0.0", reply.json()["data"]["id"])


def recorded_scan(stack: Stack, key: UploadKey) -> dict[str, Any] | None:
    """The version item's ``scan`` (None while pending), read from the stack's DynamoDB."""
    import json

    item = aws(stack, "dynamodb").get_item(
        TableName=VERSIONS_TABLE,
        Key={
            "module_id": {"S": key.module_id},
            "order_key": {"S": semver.parse(key.version).order_key},
        },
        ConsistentRead=True,
    )["Item"]
    return json.loads(item["scan"]["S"]) if "scan" in item else None


def stored_report(stack: Stack, key: UploadKey) -> ScanReport:
    body = aws(stack, "s3").get_object(Bucket=BUCKET, Key=key.findings_key)["Body"].read()
    return findings.decode(body)


@pytest.fixture(scope="module")
def scanned(stack: Stack) -> dict[str, UploadKey]:
    """An insecure and a clean module, published; their scans recorded."""
    admin = stack.session()
    org = admin.post(
        stack.api("/organizations"), json=doc("organizations", name="scanned", email="o@s.io")
    )
    assert org.status_code == 201, org.text
    keys = {
        "insecure": publish(stack, admin, "insecure", INSECURE_TF),
        "clean": publish(stack, admin, "clean", CLEAN_TF),
    }
    for key in keys.values():
        scan = wait_for(lambda key=key: recorded_scan(stack, key), bool, timeout=90)
        assert scan is not None, "the scan was never recorded"
    return keys


def test_each_uploaded_version_gets_its_scan_recorded(stack: Stack, scanned):
    assert "  scans: Trivy 0.76.0 at " in stack.startup  # make run says what scans
    for name, key in scanned.items():
        report = stored_report(stack, key)
        assert recorded_scan(stack, key) == report.summary()
        # No policy holds versions: each was served from its ingest on, and still is.
        reply = stack.session().get(
            f"{stack.url}/api/registry/v1/modules/scanned/{name}/aws/1.0.0/download"
        )
        assert reply.status_code == 204, (name, reply.text)


def test_the_insecure_module_gets_a_finding_for_each_flaw_and_the_clean_one_none(
    stack: Stack, scanned
):
    insecure = stored_report(stack, scanned["insecure"])
    assert insecure.status == "findings", insecure.error
    rules = {f.rule_id.removeprefix("AVD-") for f in insecure.findings}
    assert rules >= EXPECTED_RULES
    for finding in insecure.findings:
        if finding.rule_id.removeprefix("AVD-") in EXPECTED_RULES:
            assert finding.severity.rank >= Severity.HIGH.rank
            assert finding.file == "main.tf" and finding.resource
    assert insecure.scanner == "trivy" and insecure.scanner_version
    clean = stored_report(stack, scanned["clean"])
    assert clean.status in ("passed", "findings"), clean.error
    assert all(f.severity.rank <= Severity.LOW.rank for f in clean.findings)
