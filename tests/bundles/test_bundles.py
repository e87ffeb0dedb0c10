"""Air-gapped bundles through the site-admin API and the transfers queue's jobs: an export's
manifest and digests, an import that creates what is missing, skips what is identical,
refuses a conflicting version per entry, and refuses a tampered or badly signed bundle as a
whole before creating anything.

One registry plays both sides: what the import must create is deleted after the export
(the two-stack test is tests/e2e/test_bundles_e2e.py)."""

from __future__ import annotations

import hashlib
import io
import json
import tarfile
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any
from urllib.parse import quote_plus

import pytest

from chalicelib.core.data.aws import client
from chalicelib.core.settings import get_settings
from tests.conftest import Api, doc
from tests.modules.helpers import publish as publish_module
from tests.modules.publishing import drain
from tests.providers.helpers import VERSIONS, provider_org
from tests.providers.helpers import publish as publish_provider
from tests.support.provider_files import SigningKey, new_signing_key

EXPORTS = "/api/v2/admin/bundle-exports"
IMPORTS = "/api/v2/admin/bundle-imports"
MODULE = "/api/v2/organizations/acme/registry-modules/private/acme/vpc/aws"
SELECTION = {
    "modules": [{"address": "acme/acme/vpc/aws", "version": ">= 1.0.0"}],
    "providers": [{"address": "acme/acme/mycloud", "version": "~> 1.0", "platforms": []}],
}


@pytest.fixture(scope="module")
def signer() -> SigningKey:
    return new_signing_key()


def drain_transfers(stop: Callable[[int], bool] | None = None, limit: int = 100) -> list[str]:
    """Run every message on the transfers queue (at most ``limit``) through the Transfers
    function's handler (``stop``: its time budget, told the parts sent by the run); the kinds
    seen."""
    from chalicelib.entry.transfers import handle_body

    sqs = client("sqs")
    url = sqs.get_queue_url(QueueName=get_settings().transfers_queue)["QueueUrl"]
    seen: list[str] = []
    for _ in range(limit):
        messages = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=1).get("Messages", [])
        if not messages:
            return seen
        (message,) = messages
        seen.append(json.loads(message["Body"])["kind"])
        handle_body(message["Body"], stop)
        sqs.delete_message(QueueUrl=url, ReceiptHandle=message["ReceiptHandle"])
    if limit < 100:
        return seen
    raise AssertionError("the transfers queue never emptied")


def _run_queue() -> None:
    """The Transfers function's jobs, then the ingest function's work: the S3 events of what
    they wrote (moto sends none: each object a job wrote under an upload prefix is delivered
    as S3 would)."""
    from chalicelib.entry.ingest import handle_body

    bucket = get_settings().bucket
    seen = set()
    drain_transfers()
    while True:
        drain()
        new = []
        for prefix in ("v1/object/", "providers/"):
            listed = client("s3").list_objects_v2(Bucket=bucket, Prefix=prefix)
            new += [o["Key"] for o in listed.get("Contents", []) if o["Key"] not in seen]
        if not new:
            return
        # SHA256SUMS before its signature before the platforms, as a publisher uploads.
        for key in sorted(new, key=lambda k: (not k.endswith("SHA256SUMS"), k.count("/"), k)):
            seen.add(key)
            record = {"eventSource": "aws:s3", "eventName": "ObjectCreated:Put"}
            record["s3"] = {"object": {"key": quote_plus(key)}}
            handle_body(json.dumps({"Records": [record]}))


def _published(api: Api, signer: SigningKey) -> None:
    provider_org(api, signer)
    reply = api.post(
        "/api/v2/organizations/acme/registry-modules",
        doc("registry-modules", name="vpc", provider="aws"),
    )
    assert reply.status == 201, reply.json
    publish_module(api, "1.0.0")
    publish_provider(api, signer)
    _run_queue()  # only uploads' events the helpers handled already


def _export(api: Api, selection: dict[str, Any] = SELECTION) -> tuple[dict[str, Any], bytes]:
    reply = api.post(EXPORTS, {"data": {"type": "bundle-exports", "attributes": selection}})
    assert reply.status == 202, reply.json
    assert reply.data["attributes"]["status"] == "queued"
    _run_queue()
    shown = api.get(f"{EXPORTS}/{reply.data['id']}")
    assert shown.status == 200
    assert shown.data["attributes"]["status"] == "finished", shown.data["attributes"]
    assert "download" in shown.data["links"]
    body = (
        client("s3")
        .get_object(Bucket=get_settings().bucket, Key=f"bundles/files/{reply.data['id']}.tar")[
            "Body"
        ]
        .read()
    )
    return shown.data, body


def _import(api: Api, bundle: bytes) -> dict[str, Any]:
    reply = api.post(IMPORTS)
    assert reply.status == 201, reply.json
    assert reply.data["attributes"]["status"] == "awaiting-upload"
    assert reply.data["links"]["upload"]
    job = reply.data["id"]
    early = api.post(f"{IMPORTS}/{job}/actions/start")
    assert early.status == 422  # nothing uploaded yet
    client("s3").put_object(
        Bucket=get_settings().bucket, Key=f"bundles/files/{job}.tar", Body=bundle
    )
    started = api.post(f"{IMPORTS}/{job}/actions/start")
    assert started.status == 202, started.json
    assert api.post(f"{IMPORTS}/{job}/actions/start").status == 422  # once
    _run_queue()
    shown = api.get(f"{IMPORTS}/{job}")
    assert shown.status == 200
    return shown.data["attributes"]


def _members(bundle: bytes) -> dict[str, bytes]:
    with tarfile.open(fileobj=io.BytesIO(bundle)) as tar:
        return {m.name: tar.extractfile(m).read() for m in tar}  # type: ignore[union-attr]


def _tar(members: dict[str, bytes]) -> bytes:
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w") as tar:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return out.getvalue()


def _delete_both(api: Api) -> None:
    assert api.delete(MODULE).status in (200, 204)
    assert api.delete(f"{VERSIONS}/1.0.0").status == 204
    _run_queue()


def _results(report: list[dict[str, Any]]) -> dict[str, str]:
    return {f"{r['kind']} {r['address']}": r["result"] for r in report}


def test_export_writes_every_file_with_its_digest_and_the_manifest_last(
    api: Api, signer: SigningKey
) -> None:
    _published(api, signer)
    shown, bundle = _export(api)
    members = _members(bundle)
    assert list(members)[-1] == "manifest.json"
    manifest = json.loads(members["manifest.json"])
    assert manifest["format"] == "registry-bundle" and manifest["format-version"] == 1
    kinds = [(e["kind"], e["address"]) for e in manifest["entries"]]
    assert kinds == [
        ("module", "acme/acme/vpc/aws"),
        ("gpg-key", f"acme/{signer.key_id}"),
        ("provider", "acme/acme/mycloud"),
    ]
    for entry in manifest["entries"]:
        for file in entry["files"]:
            data = members[file["path"]]
            assert hashlib.sha256(data).hexdigest() == file["sha256"]
            assert len(data) == file["size"]
    assert members[f"gpg-keys/acme/{signer.key_id}.asc"].decode().strip() == signer.armor.strip()
    platform = manifest["entries"][2]["files"][2]
    assert (platform["os"], platform["arch"]) == ("linux", "amd64")
    assert shown["attributes"]["size"] == len(bundle)
    assert [r["result"] for r in shown["attributes"]["report"]] == ["exported"] * 3


def test_import_creates_what_is_missing_then_skips_what_is_identical(
    api: Api, signer: SigningKey
) -> None:
    _published(api, signer)
    _, bundle = _export(api)
    archive_sha = json.loads(_members(bundle)["manifest.json"])["entries"][0]["files"][0]["sha256"]
    _delete_both(api)
    assert api.get(MODULE).status == 404

    first = _import(api, bundle)
    assert first["status"] == "finished", first
    assert _results(first["report"]) == {
        f"gpg-key acme/{signer.key_id}": "skipped",
        "module acme/acme/vpc/aws": "created",
        "provider acme/acme/mycloud": "created",
    }
    from chalicelib.modules import store

    module = store.find_module("acme", store.module_key("private", "acme", "vpc", "aws"))
    assert module is not None
    (item,) = store.versions_of(module.id)
    assert (item.status, item.sha256) == ("ok", archive_sha)
    provider = api.get(f"{VERSIONS}/1.0.0")
    assert provider.status == 200
    assert provider.data["attributes"]["status"] == "verified"
    platform = api.get(f"{VERSIONS}/1.0.0/platforms/linux/amd64")
    assert platform.data["attributes"]["status"] == "verified"

    again = _import(api, bundle)
    assert again["status"] == "finished"
    assert set(_results(again["report"]).values()) == {"skipped"}


def test_a_conflicting_version_is_refused_and_the_rest_imported(
    api: Api, signer: SigningKey
) -> None:
    _published(api, signer)
    _, bundle = _export(api)
    _delete_both(api)
    reply = api.post(
        "/api/v2/organizations/acme/registry-modules",
        doc("registry-modules", name="vpc", provider="aws"),
    )
    assert reply.status == 201
    publish_module(api, "1.0.0", files={"main.tf": 'variable "other" {}\n'})

    report = _import(api, bundle)
    assert report["status"] == "finished"
    results = _results(report["report"])
    assert results["module acme/acme/vpc/aws"] == "refused"
    assert results["provider acme/acme/mycloud"] == "created"
    refused = next(r for r in report["report"] if r["result"] == "refused")
    assert "exists here with other content" in refused["reason"]
    from chalicelib.modules import store

    module = store.find_module("acme", store.module_key("private", "acme", "vpc", "aws"))
    assert module is not None and len(store.versions_of(module.id)) == 1


def _assert_refused_whole(api: Api, bundle: bytes, words: str) -> None:
    report = _import(api, bundle)
    assert report["status"] == "failed"
    assert words in report["error"], report["error"]
    assert api.get(MODULE).status == 404  # nothing created
    assert api.get(f"{VERSIONS}/1.0.0").status == 404


def test_a_changed_file_refuses_the_whole_bundle(api: Api, signer: SigningKey) -> None:
    _published(api, signer)
    _, bundle = _export(api)
    _delete_both(api)
    members = _members(bundle)
    path = "modules/acme/acme/vpc/aws/1.0.0.tar.gz"
    members[path] = members[path] + b"\0"
    _assert_refused_whole(api, _tar(members), f"{path}: sha256")


def test_a_signature_by_another_key_refuses_the_whole_bundle(api: Api, signer: SigningKey) -> None:
    _published(api, signer)
    _, bundle = _export(api)
    _delete_both(api)
    members = _members(bundle)
    manifest = json.loads(members["manifest.json"])
    sums = "providers/acme/acme/mycloud/1.0.0/SHA256SUMS"
    forged = new_signing_key("Someone Else").sign(members[sums])
    members[sums + ".sig"] = forged
    for entry in manifest["entries"]:
        for file in entry["files"]:
            if file["path"] == sums + ".sig":
                file["sha256"], file["size"] = hashlib.sha256(forged).hexdigest(), len(forged)
    members["manifest.json"] = json.dumps(manifest).encode()
    _assert_refused_whole(api, _tar(members), "SHA256SUMS.sig was made by key")


@pytest.mark.parametrize(
    ("change", "words"),
    [
        ({"../evil": b"x"}, "not a path a bundle may hold"),
        ({"extra.txt": b"x"}, "extra.txt is in the bundle but not in its manifest"),
    ],
)
def test_a_bundle_with_more_than_its_manifest_is_refused(
    api: Api, signer: SigningKey, change: dict[str, bytes], words: str
) -> None:
    _published(api, signer)
    _, bundle = _export(api)
    _delete_both(api)
    members = _members(bundle)
    manifest = members.pop("manifest.json")
    members.update(change)
    members["manifest.json"] = manifest
    _assert_refused_whole(api, _tar(members), words)


@pytest.mark.parametrize(
    ("selection", "status"),
    [
        ({}, 422),
        ({"modules": [{"address": "acme/vpc"}]}, 422),
        ({"modules": [{"address": "acme/acme/vpc/aws", "version": ">>> 1"}]}, 422),
        ({"modules": [{"address": "a" * 5000}]}, 422),
    ],
)
def test_an_export_request_is_checked_before_any_write(
    api: Api, selection: dict[str, Any], status: int
) -> None:
    reply = api.post(EXPORTS, {"data": {"type": "bundle-exports", "attributes": selection}})
    assert reply.status == status, reply.json
    listed = client("s3").list_objects_v2(Bucket=get_settings().bucket, Prefix="bundles/")
    assert listed.get("KeyCount", 0) == 0


@pytest.mark.parametrize("version", [">>> 1", "~> 1.0,", "1.0.0-"])
def test_a_bad_version_constraint_is_refused_at_the_attributes(api: Api, version: str) -> None:
    body = {"providers": [{"address": "acme/acme/aws", "version": version}]}
    reply = api.post(EXPORTS, {"data": {"type": "bundle-exports", "attributes": body}})
    assert reply.status == 422, reply.json
    assert reply.error["source"]["pointer"] == "/data/attributes"
    assert repr(version.split(",")[-1].strip()) in reply.error["detail"]


def test_an_export_of_nothing_published_fails_with_its_reason(api: Api) -> None:
    from tests.conftest import make_org

    make_org(api, "acme")
    body = {"modules": [{"address": "acme/acme/none/aws"}]}
    reply = api.post(EXPORTS, {"data": {"type": "bundle-exports", "attributes": body}})
    assert reply.status == 202
    _run_queue()
    shown = api.get(f"{EXPORTS}/{reply.data['id']}").data
    assert shown["attributes"]["status"] == "failed"
    assert "module acme/acme/none/aws not found" in shown["attributes"]["error"]
    assert "download" not in shown["links"]


def test_jobs_are_not_found_by_the_other_kind_or_a_made_up_id(api: Api) -> None:
    job = api.post(IMPORTS).data["id"]
    assert api.get(f"{EXPORTS}/{job}").status == 404
    assert api.get(f"{IMPORTS}/bimp-nothere").status == 404
    assert api.get(f"{IMPORTS}/..%2Fjobs").status == 404


def test_the_sink_sends_parts_and_holds_at_most_one(
    api: Api, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An export's bundle goes to S3 a part at a time: never more than one part held."""
    from chalicelib.bundles import tarstream

    monkeypatch.setattr(tarstream, "PART", 5 * 1024 * 1024)  # S3's smallest part
    sink = tarstream.S3Sink("bundles/files/sink-test.tar")
    held = 0
    data = bytes(range(256)) * 4096  # 1 MiB
    for _ in range(12):
        sink.write(data)
        held = max(held, len(sink._buffer))
    sink.finish()
    assert held < tarstream.PART
    stored = client("s3").get_object(Bucket=get_settings().bucket, Key=sink.key)["Body"].read()
    assert stored == data * 12 and sink.size == len(stored)


def test_a_job_whose_admin_lost_the_flag_fails(api: Api, signer: SigningKey) -> None:
    """The job runs as the site admin who started it, checked again when it runs."""
    from chalicelib.accounts.users import store as users

    _published(api, signer)
    reply = api.post(EXPORTS, {"data": {"type": "bundle-exports", "attributes": SELECTION}})
    assert reply.status == 202
    (admin,) = [u for u in users.UserModel.scan() if u.is_site_admin]
    admin.update(actions=[users.UserModel.is_site_admin.set(False)])
    _run_queue()
    admin.update(actions=[users.UserModel.is_site_admin.set(True)])
    shown = api.get(f"{EXPORTS}/{reply.data['id']}").data["attributes"]
    assert shown["status"] == "failed"
    assert "no longer a site admin" in shown["error"]


def test_a_version_chosen_twice_is_written_once(api: Api, signer: SigningKey) -> None:
    _published(api, signer)
    twice = {
        "modules": [
            {"address": "acme/acme/vpc/aws", "version": ">= 1.0"},
            {"address": "acme/acme/vpc/aws", "version": "1.0.0"},
        ]
    }
    _, bundle = _export(api, twice)
    manifest = json.loads(_members(bundle)["manifest.json"])
    assert [(e["kind"], e["version"]) for e in manifest["entries"]] == [("module", "1.0.0")]


# ----- resumable exports ------------------------------------------------------------------------

SMALL_PART = 1024


@pytest.fixture
def small_parts(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Parts of 1 KiB (moto told to take them), one moment for every job (their manifests'
    ``created-at``), and the size of each part sent, in order."""
    from moto.s3 import models as s3_models

    from chalicelib.bundles import jobs, tarstream

    monkeypatch.setattr(tarstream, "PART", SMALL_PART)
    monkeypatch.setattr(s3_models, "S3_UPLOAD_PART_MIN_SIZE", SMALL_PART)
    moment = datetime(2026, 11, 28, 12, 0, tzinfo=UTC)
    monkeypatch.setattr(jobs, "now", lambda: moment)
    sent: list[int] = []
    send = tarstream.S3Sink._send

    def counted(sink: tarstream.S3Sink, body: bytes) -> None:
        sent.append(len(body))
        send(sink, body)

    monkeypatch.setattr(tarstream.S3Sink, "_send", counted)
    return sent


def _bundle_of(job: str) -> bytes:
    key = f"bundles/files/{job}.tar"
    return client("s3").get_object(Bucket=get_settings().bucket, Key=key)["Body"].read()


def _state(job: str) -> dict[str, Any]:
    key = f"bundles/jobs/{job}.json"
    body = client("s3").get_object(Bucket=get_settings().bucket, Key=key)["Body"].read()
    return dict(json.loads(body))


def test_an_export_stopped_after_each_two_parts_resumes_to_the_same_bytes(
    api: Api, signer: SigningKey, small_parts: list[int]
) -> None:
    """A run told to stop (its time budget) stops after a part and queues the job again; the
    next run goes on from the next part: no part is sent twice, and the bundle is the same,
    byte for byte, as one written in a single run."""
    _published(api, signer)
    _, whole = _export(api)
    parts = len(small_parts)
    assert parts >= 6, parts  # several entries, several parts each
    small_parts.clear()

    job = api.post(EXPORTS, {"data": {"type": "bundle-exports", "attributes": SELECTION}})
    job_id = job.data["id"]
    assert drain_transfers(stop=lambda sent: sent >= 2, limit=1) == ["bundle-export"]
    state = _state(job_id)
    assert state["status"] == "running" and len(state["progress"]["parts"]) == 2
    assert [p["number"] for p in state["progress"]["parts"]] == [1, 2]
    assert api.get(f"{EXPORTS}/{job_id}").data["attributes"]["status"] == "running"
    assert "download" not in api.get(f"{EXPORTS}/{job_id}").data["links"]

    runs = drain_transfers(stop=lambda sent: sent >= 2)  # each run: two more parts
    assert len(runs) == (parts - 2) // 2 + 1 and set(runs) == {"bundle-export"}
    shown = api.get(f"{EXPORTS}/{job_id}").data["attributes"]
    assert shown["status"] == "finished", shown
    assert small_parts == [SMALL_PART] * (parts - 1) + small_parts[-1:]  # each part once
    assert _bundle_of(job_id) == whole and shown["size"] == len(whole)
    assert [r["result"] for r in shown["report"]] == ["exported"] * 3
    assert "progress" not in api.get(f"{EXPORTS}/{job_id}").data["attributes"]
    assert _state(job_id)["progress"] == {}


def test_an_export_whose_run_crashed_resumes_at_its_next_delivery(
    api: Api, signer: SigningKey, small_parts: list[int]
) -> None:
    """A run that dies after three parts (a crash, a timeout) leaves the job running; SQS's
    next delivery of the same message goes on from the fourth part."""
    from chalicelib.entry.transfers import handle_body

    _published(api, signer)
    _, whole = _export(api)
    parts = len(small_parts)
    small_parts.clear()
    job = api.post(EXPORTS, {"data": {"type": "bundle-exports", "attributes": SELECTION}})
    job_id = job.data["id"]
    sqs = client("sqs")
    url = sqs.get_queue_url(QueueName=get_settings().transfers_queue)["QueueUrl"]
    (message,) = sqs.receive_message(QueueUrl=url).get("Messages", [])
    sqs.delete_message(QueueUrl=url, ReceiptHandle=message["ReceiptHandle"])

    def crash(sent: int) -> bool:
        if sent == 3:
            raise RuntimeError("the function ran out of time")
        return False

    with pytest.raises(RuntimeError):
        handle_body(message["Body"], crash)
    assert _state(job_id)["status"] == "running"
    assert len(_state(job_id)["progress"]["parts"]) == 3
    handle_body(message["Body"])  # SQS delivers it again
    assert _state(job_id)["status"] == "finished"
    assert len(small_parts) == parts  # parts 1-3 were not sent again
    assert _bundle_of(job_id) == whole
    assert drain_transfers() == []  # nothing queued again: it finished


def test_an_export_whose_plan_changed_while_stopped_starts_over(
    api: Api, signer: SigningKey, small_parts: list[int]
) -> None:
    """A version published between two runs changes what the export takes: the parts sent
    are dropped (the upload aborted) and the bundle is written again, whole."""
    _published(api, signer)
    job = api.post(EXPORTS, {"data": {"type": "bundle-exports", "attributes": SELECTION}})
    job_id = job.data["id"]
    drain_transfers(stop=lambda sent: sent >= 2, limit=1)
    first_upload = _state(job_id)["progress"]["upload"]
    publish_module(api, "1.1.0")
    _run_queue()
    shown = api.get(f"{EXPORTS}/{job_id}").data["attributes"]
    assert shown["status"] == "finished", shown
    manifest = json.loads(_members(_bundle_of(job_id))["manifest.json"])
    versions = [e.get("version") for e in manifest["entries"] if e["kind"] == "module"]
    assert sorted(versions) == ["1.0.0", "1.1.0"]
    uploads = client("s3").list_multipart_uploads(Bucket=get_settings().bucket)
    assert first_upload not in [u["UploadId"] for u in uploads.get("Uploads", [])]


def test_an_import_creates_as_the_registry_naming_its_job_and_its_admin(
    api: Api, signer: SigningKey
) -> None:
    """What an import creates is the registry's doing, from a bundle: its events are System,
    naming the job, with the site admin who started it in their meta."""
    from chalicelib.accounts.users import store as users
    from chalicelib.core.audit import trail

    def trail_of(organization: str | None) -> list[dict[str, Any]]:
        return list(trail.read_page(organization, None, 1, 1000)[0])

    _published(api, signer)
    _, bundle = _export(api)
    _delete_both(api)
    seen_org, seen_site = len(trail_of("acme")), len(trail_of(None))
    job = api.post(IMPORTS).data["id"]
    client("s3").put_object(
        Bucket=get_settings().bucket, Key=f"bundles/files/{job}.tar", Body=bundle
    )
    assert api.post(f"{IMPORTS}/{job}/actions/start").status == 202
    _run_queue()
    assert api.get(f"{IMPORTS}/{job}").data["attributes"]["status"] == "finished"
    (admin,) = [u for u in users.UserModel.scan() if u.is_site_admin]
    created = [e for e in trail_of("acme")[seen_org:] if e["resource"]["action"] == "created"]
    made = {e["resource"]["type"] for e in created}
    assert made >= {"registry-module", "registry-provider-version"}
    for event in created:
        assert event["auth"]["type"] == "System", event["resource"]["type"]
        assert event["auth"]["accessor_id"] == job
        assert event["auth"]["description"] == f"bundle import {job}"
        assert event["resource"]["meta"]["bundle-job"] == job
        assert event["resource"]["meta"]["started-by"] == admin.id
    # The site admin's own act stays theirs: starting the job.
    site = trail_of(None)[seen_site:]
    (started,) = [e for e in site if e["resource"]["action"] == "started"]
    assert (started["auth"]["type"], started["auth"]["accessor_id"]) == ("Client", admin.id)
