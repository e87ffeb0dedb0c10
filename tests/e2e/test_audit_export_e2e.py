"""The local stack exports the audit trail as the AuditExport function does in AWS: each event
of a change made over HTTP reaches the local bucket (Object Lock) and log group as one JSON
line, and a restart (the state, the stream and the log group restored from the data
directory) exports nothing twice and loses nothing."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import boto3
from botocore.config import Config

from infrastructure import spawn
from infrastructure.local import LOCAL_AUDIT_BUCKET, LOCAL_AUDIT_LOG_GROUP
from tests.conftest import doc
from tests.e2e.conftest import ADMIN_TOKEN, Stack, wait_for

LOCAL = {"aws_access_key_id": "local", "aws_secret_access_key": "local"}


def _aws(stack: Stack, service: str) -> Any:
    return boto3.client(
        service,
        endpoint_url=stack.moto_url,
        region_name="us-east-1",
        config=Config(s3={"addressing_style": "path"}, retries={"max_attempts": 1}),
        **LOCAL,
    )


def _in_bucket(stack: Stack) -> list[dict[str, Any]]:
    s3 = _aws(stack, "s3")
    listed = s3.list_objects_v2(Bucket=LOCAL_AUDIT_BUCKET, Prefix="audit-events/")
    lines = []
    for item in listed.get("Contents", []):
        body = s3.get_object(Bucket=LOCAL_AUDIT_BUCKET, Key=item["Key"])["Body"].read()
        lines += [json.loads(line) for line in body.decode().splitlines()]
    return lines


def _in_log(stack: Stack) -> list[dict[str, Any]]:
    logs = _aws(stack, "logs")
    found = []
    for described in logs.describe_log_streams(logGroupName=LOCAL_AUDIT_LOG_GROUP)["logStreams"]:
        answer = logs.get_log_events(
            logGroupName=LOCAL_AUDIT_LOG_GROUP,
            logStreamName=described["logStreamName"],
            startFromHead=True,
        )
        found += [json.loads(e["message"]) for e in answer["events"]]
    return found


def _change_policy(stack: Stack, severity: str) -> None:
    reply = stack.session().patch(
        stack.api("/organizations/audited/registry-policy"),
        json=doc("registry-policies", **{"block-severity": severity}),
        headers={"User-Agent": f"e2e-export/{severity}"},
    )
    assert reply.status_code == 200, reply.text


def _policy_events(lines: list[dict[str, Any]]) -> list[str]:
    """The user agents of the policy changes' events, in order."""
    return [
        line["request"]["user_agent"]
        for line in lines
        if line["resource"]["type"] == "registry-policy"
    ]


def test_the_local_stack_exports_each_event_once_across_restarts(tmp_path: Path) -> None:
    persisting = {"REGISTRY_DATA_DIR": str(tmp_path / "data"), "REGISTRY_SNAPSHOT_SECONDS": "1"}
    first = spawn.start(ADMIN_TOKEN, REGISTRY_RATE_LIMITING="off", **persisting)
    try:
        stack = Stack(first.url, first.moto_url, first.startup_seconds)
        made = stack.session().post(
            stack.api("/organizations"), json=doc("organizations", name="audited", email="a@x.io")
        )
        assert made.status_code == 201, made.text
        _change_policy(stack, "high")
        wanted = ["e2e-export/high"]
        # The organization's creation is exported too: wait for the policy's event.
        has_policy = _policy_events
        assert _policy_events(wait_for(lambda: _in_bucket(stack), has_policy)) == wanted
        assert _policy_events(wait_for(lambda: _in_log(stack), has_policy)) == wanted
        lock = _aws(stack, "s3").get_object_lock_configuration(Bucket=LOCAL_AUDIT_BUCKET)
        assert lock["ObjectLockConfiguration"]["ObjectLockEnabled"] == "Enabled"
    finally:
        spawn.stop(first)

    second = spawn.start(ADMIN_TOKEN, REGISTRY_RATE_LIMITING="off", **persisting)
    try:
        stack = Stack(second.url, second.moto_url, second.startup_seconds)
        _change_policy(stack, "critical")
        wanted = ["e2e-export/high", "e2e-export/critical"]

        def exported(read: Any) -> list[str]:
            return _policy_events(wait_for(read, lambda found: len(_policy_events(found)) >= 2))

        assert exported(lambda: _in_bucket(stack)) == wanted
        assert exported(lambda: _in_log(stack)) == wanted
        # Nothing more comes (the restored stream is read after its checkpoint).
        every = _in_log(stack)
        assert len({line["id"] for line in every}) == len(every)
        assert sorted(line["id"] for line in _in_bucket(stack)) == sorted(
            line["id"] for line in every
        )
    finally:
        spawn.stop(second)


def test_the_audit_trail_token_through_pytfe(stack: Stack) -> None:
    """pytfe (a TFE client, HCP's token types included) creates, reads and deletes the audit
    trail token with its token_type options, beside the organization token; the token reads
    the organization's trail over HTTP, and nothing else."""
    import pytest
    import requests

    pytest.importorskip("pytfe")
    from pytfe import TFEClient, TFEConfig
    from pytfe.errors import NotFound
    from pytfe.models import OrganizationCreateOptions
    from pytfe.models.organization_token import (
        OrganizationTokenCreateOptions,
        OrganizationTokenDeleteOptions,
        OrganizationTokenReadOptions,
        TokenType,
    )

    admin = TFEClient(
        TFEConfig(address=stack.url, token=ADMIN_TOKEN, max_retries=1, timeout=15, ca_bundle=None)
    )
    admin.organizations.create(OrganizationCreateOptions(name="pytfe-audit", email="a@x.io"))
    try:
        tokens = admin.organization_tokens
        plain = tokens.create("pytfe-audit")
        audit = tokens.create_with_options(
            "pytfe-audit", OrganizationTokenCreateOptions(token_type=TokenType.AUDIT_TRAILS)
        )
        assert audit.token and audit.id != plain.id
        kind = OrganizationTokenReadOptions(token_type=TokenType.AUDIT_TRAILS)
        assert tokens.read_with_options("pytfe-audit", kind).id == audit.id
        assert tokens.read("pytfe-audit").id == plain.id
        auth = {"Authorization": f"Bearer {audit.token}"}
        trail = requests.get(stack.api("/organization/audit-trail"), headers=auth, timeout=10)
        assert trail.status_code == 200, trail.text
        assert audit.id in [e["resource"]["id"] for e in trail.json()["data"]]
        other = requests.get(stack.api("/organizations/pytfe-audit"), headers=auth, timeout=10)
        assert other.status_code == 401
        gone = OrganizationTokenDeleteOptions(token_type=TokenType.AUDIT_TRAILS)
        tokens.delete_with_options("pytfe-audit", gone)
        with pytest.raises(NotFound):
            tokens.read_with_options("pytfe-audit", kind)
        with pytest.raises(NotFound):
            tokens.delete_with_options("pytfe-audit", gone)
        assert tokens.read("pytfe-audit").id == plain.id
    finally:
        admin.organizations.delete("pytfe-audit")
