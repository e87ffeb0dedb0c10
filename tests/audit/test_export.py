"""The audit trail's export (issue #37): each new event, as the API answers it, one JSON line
in S3 (a bucket with Object Lock, keyed by date) and in CloudWatch Logs, from the table's
stream; through the stream reader the local stack runs and through the export function's
own Lambda handler; and the template that wires it in AWS."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from botocore.exceptions import ClientError

from chalicelib.audit import export
from chalicelib.core.audit import events, trail
from chalicelib.core.auth import Principal
from chalicelib.core.data.aws import client
from chalicelib.core.settings import get_settings
from infrastructure.streams import StreamReader, audit_export_reader
from tests.conftest import Api, doc

BUCKET = "test-audit-export"
# Two seconds before last midnight: CloudWatch Logs takes events of the last 14 days only.
_TODAY = datetime.now(UTC).replace(hour=0, minute=0, second=0, microsecond=0)
START = _TODAY - timedelta(seconds=2)
DAYS = [(START + timedelta(days=n)).strftime("%Y/%m/%d") for n in (0, 1)]
ORG_TRAIL = "/api/v2/organization/audit-trail"


@pytest.fixture
def sinks(
    aws: None, monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest
) -> Iterator[str]:
    """The export's bucket (Object Lock) and a log group of this test's own (moto keeps log
    groups for the session): the group's name."""
    from infrastructure.resources import provision_audit_export

    group = f"/test/audit-{request.node.name[:60]}"
    monkeypatch.setenv("REGISTRY_AUDIT_BUCKET", BUCKET)
    monkeypatch.setenv("REGISTRY_AUDIT_LOG_GROUP", group)
    get_settings.cache_clear()
    export._streams.clear()
    provision_audit_export()
    yield group
    # The bucket goes with the test: its versions are locked in governance mode, which only
    # a caller bypassing it (s3:BypassGovernanceRetention) may delete.
    s3 = client("s3")
    for page in s3.get_paginator("list_object_versions").paginate(Bucket=BUCKET):
        for version in page.get("Versions", []) + page.get("DeleteMarkers", []):
            s3.delete_object(
                Bucket=BUCKET,
                Key=version["Key"],
                VersionId=version["VersionId"],
                BypassGovernanceRetention=True,
            )
    s3.delete_bucket(Bucket=BUCKET)
    monkeypatch.delenv("REGISTRY_AUDIT_BUCKET")
    monkeypatch.delenv("REGISTRY_AUDIT_LOG_GROUP")
    get_settings.cache_clear()


@pytest.fixture
def stream(sinks: str) -> StreamReader:
    """The audit-events stream from now on (the session's tables keep older records)."""
    reader = audit_export_reader("LATEST")
    reader.open()
    return reader


def _event(organization: str | None, n: int, moment: datetime) -> events.Event:
    return events.event(
        Principal("user", "user-x", "at-x"),
        organization=organization,
        resource_type="thing",
        resource_id=f"thing-{n}",
        action="updated",
        description="x",
        moment=moment,
    )


def _objects() -> dict[str, list[dict[str, Any]]]:
    """Every exported object's key and its lines (parsed)."""
    s3 = client("s3")
    found = {}
    for item in s3.list_objects_v2(Bucket=BUCKET, Prefix=export.PREFIX).get("Contents", []):
        body = s3.get_object(Bucket=BUCKET, Key=item["Key"])["Body"].read().decode()
        assert body.endswith("\n")
        found[item["Key"]] = [json.loads(line) for line in body.splitlines()]
    return found


def _logged(group: str) -> dict[str, list[dict[str, Any]]]:
    """Every log stream's events of the group: the message parsed, the timestamp beside."""
    logs = client("logs")
    found = {}
    for described in logs.describe_log_streams(logGroupName=group)["logStreams"]:
        name = described["logStreamName"]
        answer = logs.get_log_events(logGroupName=group, logStreamName=name, startFromHead=True)
        found[name] = [
            {**json.loads(e["message"]), "_ms": e["timestamp"]} for e in answer["events"]
        ]
    return found


def test_each_event_is_one_json_line_in_s3_by_date_and_in_the_log_group(
    sinks: str, stream: StreamReader
) -> None:
    """Three events across midnight, two organizations and the site: the bucket has one
    object per hour under audit-events/YYYY/MM/DD/HH/, the log group one stream per day, and
    every line is the event exactly as the API answers it."""
    written = [
        _event("acme", 0, START),
        _event(None, 1, START + timedelta(seconds=1)),
        _event("other", 2, START + timedelta(seconds=3)),  # the next day
    ]
    for made in written:
        trail.record(made)
    assert stream.drain() == 3
    objects = _objects()
    assert all(k.startswith(export.PREFIX) and k.endswith(".jsonl") for k in objects)
    assert ["/".join(k.split("/")[1:5]) for k in sorted(objects)] == [
        f"{DAYS[0]}/23",
        f"{DAYS[1]}/00",
    ]
    lines = [line for key in sorted(objects) for line in objects[key]]
    assert lines == [made.to_json() for made in written]
    logged = _logged(sinks)
    assert sorted(logged) == DAYS
    in_log = [e for name in sorted(logged) for e in logged[name]]
    assert [e.pop("_ms") for e in in_log] == [
        int(made.timestamp.timestamp() * 1000) for made in written
    ]
    assert in_log == [made.to_json() for made in written]


def test_a_change_over_the_api_is_exported_as_the_api_shows_it(
    api: Api, sinks: str, stream: StreamReader
) -> None:
    """A policy change (recorded with its change) reaches both sinks as the organization's
    trail answers it, address and user agent included."""
    from chalicelib.accounts.organizations import service as organizations_service
    from chalicelib.accounts.users.service import find_user_by_name

    admin = find_user_by_name("admin")
    assert admin is not None
    organizations_service.create_organization(
        Principal("user", admin.id, "at-x"), "acme", "o@x.io", limited=False
    )
    reply = api.patch(
        "/api/v2/organizations/acme/registry-policy",
        doc("registry-policies", **{"block-severity": "high"}),
        headers={"User-Agent": "audit-export-test/1.0"},
    )
    assert reply.status == 200, reply.json
    stream.drain()
    everything, _ = trail.read_page("acme", None, 1, 10)  # the organization's creation too
    [shown] = [e for e in everything if e["resource"]["type"] == "registry-policy"]
    assert shown["request"]["user_agent"] == "audit-export-test/1.0"
    exported = [line for lines in _objects().values() for line in lines]
    assert sorted(exported, key=lambda e: e["id"]) == sorted(everything, key=lambda e: e["id"])
    logged = [e for found in _logged(sinks).values() for e in found]
    for line in logged:
        line.pop("_ms")
    assert sorted(logged, key=lambda e: e["id"]) == sorted(everything, key=lambda e: e["id"])


def test_a_batch_delivered_again_writes_the_same_object_again(
    sinks: str, stream: StreamReader
) -> None:
    """Lambda delivers a failed batch again, through the export function's own handler: the
    object's key is made of its lines, so S3 holds the same object (a new locked version of
    it), never a second one; the log may hold the lines twice (the event ids tell them)."""
    from chalicelib.entry.audit_export import handler

    seen: list[list[Any]] = []
    stream.handle = seen.append
    trail.record(_event("acme", 0, START))
    trail.record(_event("acme", 1, START + timedelta(seconds=1)))
    stream.drain()
    event = {"Records": json.loads(json.dumps([r for b in seen for r in b], default=str))}
    handler(event, None)
    handler(event, None)
    objects = _objects()
    assert len(objects) == 1 and len(next(iter(objects.values()))) == 2
    [key] = objects
    versions = client("s3").list_object_versions(Bucket=BUCKET, Prefix=key)["Versions"]
    assert len(versions) == 2
    ids = [e["id"] for found in _logged(sinks).values() for e in found]
    assert len(ids) == 4 and len(set(ids)) == 2


def test_an_exported_object_cannot_be_deleted_or_overwritten_in_place(
    sinks: str, stream: StreamReader
) -> None:
    """The bucket has Object Lock: each object version is kept for the retention (governance
    mode locally; the template lets the operator choose compliance), so deleting it is
    refused."""
    s3 = client("s3")
    lock = s3.get_object_lock_configuration(Bucket=BUCKET)["ObjectLockConfiguration"]
    assert lock["ObjectLockEnabled"] == "Enabled"
    retention = lock["Rule"]["DefaultRetention"]
    assert (retention["Mode"], retention["Days"]) == ("GOVERNANCE", 400)
    trail.record(_event("acme", 0, START))
    stream.drain()
    [key] = _objects()
    [version] = s3.list_object_versions(Bucket=BUCKET, Prefix=key)["Versions"]
    held = s3.head_object(Bucket=BUCKET, Key=key, VersionId=version["VersionId"])
    assert held["ObjectLockMode"] == "GOVERNANCE"
    assert held["ObjectLockRetainUntilDate"] > datetime.now(UTC) + timedelta(days=399)
    with pytest.raises(ClientError) as refused:
        s3.delete_object(Bucket=BUCKET, Key=key, VersionId=version["VersionId"])
    assert refused.value.response["Error"]["Code"] == "AccessDenied"
    assert list(_objects()) == [key]


def test_only_new_events_are_exported_and_nothing_without_sinks(
    aws: None, sinks: str, stream: StreamReader, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An item's removal (its TTL) is no event; with no bucket and no log group configured
    the export writes nowhere (and still consumes the stream)."""
    from chalicelib.core.audit.store import AuditEventModel

    trail.record(_event("acme", 0, START))
    stream.drain()
    for item in AuditEventModel.query("acme"):
        item.delete()  # as DynamoDB's TTL does
    assert stream.drain() == 1
    assert sum(len(lines) for lines in _objects().values()) == 1
    monkeypatch.setenv("REGISTRY_AUDIT_BUCKET", "")
    monkeypatch.setenv("REGISTRY_AUDIT_LOG_GROUP", "")
    get_settings.cache_clear()
    trail.record(_event("acme", 1, START))
    assert stream.drain() == 1
    assert sum(len(lines) for lines in _objects().values()) == 1


def test_a_large_batch_goes_to_the_log_in_bounded_calls() -> None:
    """PutLogEvents takes at most 10,000 events and 1 MB a call: a batch is cut to fit."""
    big = export.Line("2026-03-04T23:59:58.000000Z#x", "x" * 300_000)
    small = export.Line("2026-03-04T23:59:58.000000Z#y", "{}")
    chunks = list(export._chunks([big, big, big, big]))
    assert [len(c) for c in chunks] == [3, 1]
    assert [len(c) for c in export._chunks([small] * 25_000)] == [10_000, 10_000, 5_000]


def test_the_local_reader_resumes_after_its_checkpoint(sinks: str, tmp_path: Path) -> None:
    """The local stack keeps where its reader stopped (its data directory): a restart, which
    brings the stream's records back with the tables, exports nothing twice."""
    checkpoint = tmp_path / "audit-export.json"
    first = audit_export_reader("LATEST", checkpoint)
    first.open()
    trail.record(_event("acme", 0, START))
    assert first.drain() == 1
    assert checkpoint.exists()
    trail.record(_event("acme", 1, START + timedelta(seconds=1)))
    again = audit_export_reader("TRIM_HORIZON", checkpoint)  # as after a restart
    assert again.drain() == 1
    assert again.drain() == 0
    ids = [e["resource"]["id"] for found in _logged(sinks).values() for e in found]
    assert ids == ["thing-0", "thing-1"]


def test_the_stack_exports_from_the_tables_stream() -> None:
    """The audit-events table streams its new images to the AuditExport function, which may
    read that stream, add objects to the audit bucket (Object Lock, its mode a parameter)
    and write its log group, and touch no table; its stream retries until the records age
    out, then names them in a dead-letter queue."""
    from infrastructure import template

    merged = template.merge_template()
    resources = merged["Resources"]
    assert resources["AuditEventsTable"]["Properties"]["StreamSpecification"] == {
        "StreamViewType": "NEW_IMAGE"
    }
    function = resources["AuditExport"]["Properties"]
    assert function["Handler"] == "chalicelib.entry.audit_export.handler"
    stream_event = function["Events"]["Stream"]["Properties"]
    assert stream_event["Stream"] == {"Fn::GetAtt": ["AuditEventsTable", "StreamArn"]}
    assert stream_event["MaximumRetryAttempts"] == -1
    assert "AuditExportDeadLetterQueue" in json.dumps(stream_event["DestinationConfig"])
    variables = function["Environment"]["Variables"]
    assert variables["REGISTRY_AUDIT_LOG_GROUP"] == {"Ref": "AuditLogGroup"}
    assert "HasAuditBucket" in json.dumps(variables["REGISTRY_AUDIT_BUCKET"])
    bucket = resources["AuditBucket"]
    assert bucket["Condition"] == "HasAuditBucket" and bucket["DeletionPolicy"] == "Retain"
    assert bucket["Properties"]["ObjectLockEnabled"] is True
    retention = bucket["Properties"]["ObjectLockConfiguration"]["Rule"]["DefaultRetention"]
    assert retention == {
        "Mode": {"Ref": "AuditObjectLockMode"},
        "Days": {"Ref": "AuditObjectLockDays"},
    }
    assert merged["Parameters"]["AuditObjectLockMode"]["AllowedValues"] == [
        "GOVERNANCE",
        "COMPLIANCE",
    ]
    assert resources["AuditLogGroup"]["Properties"]["RetentionInDays"] == {
        "Ref": "AuditLogRetentionDays"
    }
    statements = resources["AuditExportRole"]["Properties"]["Policies"][0]["PolicyDocument"][
        "Statement"
    ]
    granted = {action: json.dumps(s["Resource"]) for s in statements for action in s["Action"]}
    assert "StreamArn" in granted["dynamodb:GetRecords"]
    assert "-audit-" in granted["s3:PutObject"] and "archives" not in granted["s3:PutObject"]
    assert not {"dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:Query"} & set(granted)
    assert not {"s3:DeleteObject", "s3:GetObject", "s3:BypassGovernanceRetention"} & set(granted)
    # No other function may write the audit bucket.
    for name, resource in resources.items():
        if resource.get("Type") == "AWS::IAM::Role" and name != "AuditExportRole":
            assert "-audit-${AWS::AccountId}" not in json.dumps(resource), name
