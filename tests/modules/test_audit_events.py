"""Every change of a module, a version or a no-code module records exactly one audit event in
its organization's partition, written with the change (``modules.audit_events``,
``modules.writes``): who (a user, or the registry's workers as ``System`` naming the
uploader), what, and the outcome; a refused change records nothing; and a version's history
reads back who created, published, deprecated, revoked and released it
(``modules.history``).

The organization is made outside any request (``lifecycle.create_organization``): its
creation's event is the accounts' part, and these tests count only the modules' events."""

from __future__ import annotations

import hashlib
import hmac
import json
from collections.abc import Iterator
from typing import Any

import pytest

from chalicelib.core import observe
from chalicelib.core.audit import check
from chalicelib.core.audit.store import AuditEventModel, partition_of
from chalicelib.core.auth import authenticate
from chalicelib.modules.audit import history
from chalicelib.modules.ingest.handler import handle_s3_record
from chalicelib.modules.scanning import worker
from chalicelib.modules.service import ModuleRef
from chalicelib.trust.findings import Severity
from chalicelib.trust.policy import Policy
from tests.conftest import ADMIN_TOKEN, Api, doc, tar_gz
from tests.modules.helpers import MAIN_TF, ORG, create_module, create_version, upload_key
from tests.modules.publishing import V2, connect, drain, publish
from tests.modules.scanning.helpers import FakeScanner, finding, holding, scan_jobs
from tests.support.vcs_git_server import GitServer, serve

MODULE = f"{ORG}/private/acme/vpc/aws"
REF = ModuleRef("acme", "private", "acme", "vpc", "aws")


def trail(organization: str | None = "acme") -> list[dict[str, Any]]:
    """The partition's events, oldest first (read from the table itself)."""
    items = AuditEventModel.query(partition_of(organization), consistent_read=True)
    return [json.loads(item.document) for item in items]


def new_events(before: list[dict[str, Any]]) -> list[dict[str, Any]]:
    seen = {event["id"] for event in before}
    return [event for event in trail() if event["id"] not in seen]


def the_one(before: list[dict[str, Any]]) -> dict[str, Any]:
    """The one event recorded since ``before`` was read."""
    (event,) = new_events(before)
    return event


def admin_id(api: Api) -> str:
    return api.get("/api/v2/account/details").data["id"]


@pytest.fixture
def acme(api: Api) -> Api:
    from chalicelib.lifecycle.organizations import create_organization

    create_organization(authenticate(f"Bearer {ADMIN_TOKEN}"), "acme", "o@x.io")
    return api


def ingest(reply: Any, files: dict[str, str | bytes] | bytes) -> str:
    """The version's archive uploaded and ingested as the ingest function does: in a worker's
    scope of its own, held to record its change (``check.hold``)."""
    key = upload_key(reply)
    body = files if isinstance(files, bytes) else tar_gz(files)
    from chalicelib.core.data.aws import client
    from chalicelib.core.settings import get_settings

    client("s3").put_object(Bucket=get_settings().bucket, Key=key, Body=body)
    with observe.scope() as state:
        outcome = handle_s3_record({"s3": {"object": {"key": key}}})
    assert not check.unexplained(state), state.written
    return outcome


def test_a_module_created_updated_and_deleted_records_one_event_each(acme: Api) -> None:
    user = admin_id(acme)
    before = trail()
    module = create_module(acme)
    created = the_one(before)
    assert created["type"] == "Resource" and created["version"] == "0"
    assert created["auth"]["type"] == "Client" and created["auth"]["accessor_id"] == user
    assert created["auth"]["organization_id"] == "acme"
    resource = created["resource"]
    assert (resource["type"], resource["id"], resource["action"]) == (
        "registry-module",
        module["id"],
        "created",
    )
    assert resource["meta"]["module"] == "acme/vpc/aws"
    assert resource["meta"]["registry"] == "private"
    assert resource["meta"]["outcome"] == "succeeded"
    assert trail(None) == []  # nothing in the site's partition

    before = trail()
    patch = {
        "data": {
            "type": "registry-modules",
            "attributes": {"no-code": True},
            "relationships": {
                "tag-bindings": {
                    "data": [{"type": "tag-bindings", "attributes": {"key": "team", "value": "a"}}]
                }
            },
        }
    }
    assert acme.patch(MODULE, patch).status == 200
    updated = the_one(before)["resource"]
    assert updated["action"] == "updated" and updated["id"] == module["id"]
    assert updated["meta"]["changed"] == ["no-code", "tag-bindings"]
    assert updated["meta"]["tag-bindings"] == ["team"]

    before = trail()
    assert acme.delete(MODULE).status == 204
    deleted = the_one(before)["resource"]
    assert (deleted["type"], deleted["id"], deleted["action"]) == (
        "registry-module",
        module["id"],
        "deleted",
    )


def test_a_refused_change_records_nothing(acme: Api) -> None:
    create_module(acme)
    create_version(acme, "1.0.0")
    before = trail()
    # The same module again, the same version again, a module update by a stranger's path.
    taken = acme.post(ORG, doc("registry-modules", name="vpc", provider="aws"))
    assert taken.status == 422
    assert create_version(acme, "1.0.0").status == 422
    assert acme.patch(f"{ORG}/private/acme/nope/aws", doc("registry-modules")).status == 404
    bad = acme.patch(
        f"{MODULE}/1.0.0",
        {"data": {"type": "module-versions", "attributes": {"deprecation": {}}}},
    )
    assert bad.status == 422
    assert new_events(before) == []


def test_a_version_created_uploaded_deprecated_revoked_and_deleted(acme: Api) -> None:
    user = admin_id(acme)
    module = create_module(acme)
    before = trail()
    reply = create_version(acme, "1.0.0")
    assert reply.status == 201
    version_id = reply.data["id"]
    created = the_one(before)
    assert created["auth"]["accessor_id"] == user
    assert created["resource"]["type"] == "registry-module-version"
    assert created["resource"]["id"] == version_id
    assert created["resource"]["action"] == "created"
    assert created["resource"]["meta"]["version"] == "1.0.0"

    # The ingest worker's outcome: the registry acted (System), for the version's creator.
    before = trail()
    assert ingest(reply, {"main.tf": MAIN_TF}) == "ok"
    uploaded = the_one(before)
    assert uploaded["auth"]["type"] == "System"
    assert uploaded["auth"]["accessor_id"] == "registry"
    assert uploaded["auth"]["organization_id"] == "acme"
    assert uploaded["resource"]["action"] == "uploaded"
    assert uploaded["resource"]["meta"]["uploaded-by"] == f"user:{user}"
    assert uploaded["resource"]["meta"]["status"] == "ok"
    assert uploaded["resource"]["meta"]["outcome"] == "succeeded"

    deprecation = {"deprecated-status": "Deprecated", "reason": "use 2.x"}
    body = {"data": {"type": "module-versions", "attributes": {"deprecation": deprecation}}}
    assert acme.patch(f"{MODULE}/1.0.0", body).status == 200
    revocation = {"status": "Revoked", "message": "CVE"}
    body = {"data": {"type": "module-versions", "attributes": {"revocation": revocation}}}
    assert acme.patch(f"{MODULE}/1.0.0", body).status == 200

    seen = history.version_history(authenticate(f"Bearer {ADMIN_TOKEN}"), REF, "1.0.0")
    assert seen.complete
    assert [s.action for s in seen.steps] == ["created", "uploaded", "deprecated", "revoked"]
    assert seen.published is not None and seen.published.action == "uploaded"
    assert seen.published_by == seen.created.actor if seen.created else False
    assert seen.deprecated is not None and seen.deprecated.meta["reason"] == "use 2.x"
    assert seen.revoked is not None and seen.revoked.actor_id == user
    assert seen.released is None

    # Deleting the last version deletes the module: two changes, two events.
    before = trail()
    assert acme.delete(f"{MODULE}/1.0.0").status == 204
    gone = {
        (e["resource"]["type"], e["resource"]["id"], e["resource"]["action"])
        for e in new_events(before)
    }
    assert len(new_events(before)) == 2  # at the same moment: in either order
    assert gone == {
        ("registry-module-version", version_id, "deleted"),
        ("registry-module", module["id"], "deleted"),
    }


def test_a_refused_upload_records_its_refusal_with_the_reason(acme: Api) -> None:
    create_module(acme)
    reply = create_version(acme, "1.0.0")
    before = trail()
    assert ingest(reply, b"this is no gzip") == "failed"
    refused = the_one(before)
    assert refused["auth"]["type"] == "System"
    resource = refused["resource"]
    assert (resource["type"], resource["action"]) == ("registry-module-version", "refused")
    assert resource["meta"]["outcome"] == "refused"
    assert resource["meta"]["reason"]
    assert resource["meta"]["uploaded-by"].startswith("user:")


def test_the_scan_worker_records_its_scan_and_a_quarantine(
    acme: Api, monkeypatch: pytest.MonkeyPatch
) -> None:
    create_module(acme)
    holding(monkeypatch, Policy(block_severity="high"))
    passing, blocked = create_version(acme, "1.0.0"), create_version(acme, "1.1.0")
    assert ingest(passing, {"main.tf": MAIN_TF}) == "held"
    assert ingest(blocked, {"main.tf": MAIN_TF}) == "held"
    jobs = {job["version"]: job for job in scan_jobs()}

    before = trail()
    with observe.scope():
        assert worker.run(jobs["1.0.0"], lambda: FakeScanner()) == "passed"
    scanned = the_one(before)
    assert scanned["auth"]["type"] == "System"
    assert scanned["resource"]["action"] == "scanned"
    assert scanned["resource"]["meta"]["status"] == "ok"  # a held version published
    assert scanned["resource"]["meta"]["scan-status"] == "passed"

    before = trail()
    with observe.scope():
        run = worker.run(jobs["1.1.0"], lambda: FakeScanner((finding(Severity.CRITICAL),)))
    assert run == "findings"
    quarantined = the_one(before)["resource"]
    assert quarantined["action"] == "quarantined"
    assert quarantined["meta"]["status"] == "quarantined"
    assert quarantined["meta"]["findings-critical"] == 1
    assert quarantined["meta"]["reasons"]

    # A second delivery of the job writes nothing, and records nothing.
    before = trail()
    with observe.scope():
        assert worker.run(jobs["1.1.0"], lambda: FakeScanner()) == "already-scanned"
    assert new_events(before) == []

    released = acme.post(
        f"{MODULE}/versions/1.1.0/actions/release",
        doc("registry-module-version-releases", reason="a false positive"),
    )
    assert released.status == 200
    seen = history.version_history(authenticate(f"Bearer {ADMIN_TOKEN}"), REF, "1.1.0")
    assert [s.action for s in seen.steps] == ["created", "uploaded", "quarantined", "released"]
    assert seen.published is not None and seen.published.action == "released"
    assert seen.published_by == seen.released.actor if seen.released else False
    passed = history.version_history(authenticate(f"Bearer {ADMIN_TOKEN}"), REF, "1.0.0")
    assert passed.published is not None and passed.published.action == "scanned"
    # Only its own events: none of the other version's, none of the module's.
    assert [s.action for s in passed.steps] == ["created", "uploaded", "scanned"]


def test_no_code_modules_record_their_changes(acme: Api) -> None:
    module = create_module(acme)
    nocode = "/api/v2/organizations/acme/no-code-modules"
    relation = {"registry-module": {"data": {"type": "registry-modules", "id": module["id"]}}}
    body = {"data": {"type": "no-code-modules", "attributes": {}, "relationships": relation}}
    before = trail()
    reply = acme.post(nocode, body)
    assert reply.status == 200, reply.json  # TFE answers 200
    item = reply.data["id"]
    created = the_one(before)["resource"]
    assert (created["type"], created["id"], created["action"]) == (
        "no-code-module",
        item,
        "created",
    )
    assert created["meta"]["registry-module"] == module["id"]

    before = trail()
    change = {"data": {"type": "no-code-modules", "id": item, "attributes": {"enabled": False}}}
    assert acme.patch(f"/api/v2/no-code-modules/{item}", change).status == 200
    updated = the_one(before)["resource"]
    assert updated["action"] == "updated" and updated["meta"]["changed"] == ["enabled"]
    # The same PATCH again changes nothing, and records nothing.
    before = trail()
    assert acme.patch(f"/api/v2/no-code-modules/{item}", change).status == 200
    assert new_events(before) == []

    before = trail()
    assert acme.delete(f"/api/v2/no-code-modules/{item}").status == 204
    assert the_one(before)["resource"]["action"] == "deleted"


def test_a_failed_transaction_writes_neither_the_change_nor_its_event(acme: Api) -> None:
    """The module's create and its event are one transaction: the module's condition failing
    (it exists) cancels the event too."""
    from chalicelib.core.data.ids import new_id, now
    from chalicelib.modules import writes
    from chalicelib.modules.audit import events as audit_events
    from chalicelib.modules.store import ModuleModel

    module = create_module(acme)
    before = trail()
    twin = ModuleModel(
        "acme",
        "private#acme#vpc#aws",
        id=new_id("mod"),
        registry_name="private",
        namespace="acme",
        name="vpc",
        provider="aws",
        status="pending",
        created_at=now(),
        updated_at=now(),
    )
    event = audit_events.of_module(None, twin, "created")
    with pytest.raises(writes.ModuleTaken):
        writes.insert_module(twin, event)
    assert new_events(before) == []
    assert acme.get(MODULE).data["id"] == module["id"]


# ----- VCS publishing: the request, and the publishing worker's outcomes ----------------------


@pytest.fixture
def git_server() -> Iterator[tuple[GitServer, dict[str, str]]]:
    yield from serve()


def test_publishing_from_vcs_records_the_publish_and_each_worker_outcome(
    acme: Api, git_server: tuple[GitServer, dict[str, str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    server, _ = git_server
    with monkeypatch.context() as others:
        others.setenv(check.STRICT_SWITCH, "0")  # the VCS connection is another room's change
        token_id = connect(acme, server)
    before = trail()
    published = publish(acme, token_id, "acme/terraform-aws-net")
    assert published.status == 201, published.json
    module_id = published.data["id"]
    created = the_one(before)
    assert created["auth"]["type"] == "Client"
    assert created["resource"]["action"] == "created"
    assert created["resource"]["meta"]["vcs-repo"] == "acme/terraform-aws-net"
    assert "webhook-secret" not in json.dumps(created)

    before = trail()
    drain()  # the ingest function's scope holds each job to its event (strict mode)
    made = new_events(before)
    assert {e["auth"]["type"] for e in made} == {"System"}
    by_action: dict[str, list[dict[str, Any]]] = {}
    for event in made:
        by_action.setdefault(event["resource"]["action"], []).append(event["resource"])
    (synced,) = by_action["synced"]
    assert synced["id"] == module_id
    assert sorted(synced["meta"]["published"]) == ["1.0.0", "1.1.0", "1.1.0-rc.1", "1.2.0"]
    (hook,) = by_action["webhook-registered"]
    assert hook["id"] == module_id
    assert sorted(r["meta"]["version"] for r in by_action["created"]) == [
        "1.0.0",
        "1.1.0",
        "1.1.0-rc.1",
        "1.2.0",
    ]
    assert all(r["meta"]["tag"] and r["meta"]["source"] for r in by_action["created"])
    assert sorted(r["meta"]["version"] for r in by_action["uploaded"]) == [
        "1.0.0",
        "1.1.0",
        "1.1.0-rc.1",
    ]
    (refused,) = by_action["refused"]  # the broken tag
    assert refused["meta"]["version"] == "1.2.0" and refused["meta"]["outcome"] == "refused"
    assert len(made) == 1 + 1 + 4 + 3 + 1  # one event per change, none twice

    before = trail()
    assert acme.post(f"{V2}/registry-modules/{module_id}/actions/resync").status == 200
    asked = the_one(before)
    assert asked["auth"]["type"] == "Client"
    assert asked["resource"]["action"] == "sync-requested"

    # A VCS host's signed tag delivery: the registry asks for a sync (System); a forged one
    # changes nothing and records nothing.
    secret = published.data["attributes"]["vcs-repo"]["webhook-secret"]
    url = published.data["attributes"]["vcs-repo"]["webhook-url"]
    path = url[url.index("/webhooks/") :]
    tag_push = json.dumps({"ref": "refs/tags/v1.3.0", "after": "0" * 40})
    before = trail()
    assert signed_delivery(acme, path, tag_push, "not-the-secret").status == 401
    assert new_events(before) == []
    assert signed_delivery(acme, path, tag_push, secret).status == 202
    delivered = the_one(before)
    assert delivered["auth"]["type"] == "System"
    assert delivered["resource"]["action"] == "sync-requested"
    assert delivered["resource"]["meta"]["via"] == "webhook"
    drain()

    # A new webhook secret is recorded, never shown in the event; so is a retry.
    before = trail()
    fresh = acme.post(f"{V2}/registry-modules/{module_id}/actions/regenerate-webhook-secret")
    assert fresh.status == 200
    regenerated = the_one(before)
    assert regenerated["resource"]["action"] == "webhook-secret-regenerated"
    assert fresh.data["attributes"]["secret"] not in json.dumps(regenerated)
    assert secret not in json.dumps(trail())
    before = trail()
    assert acme.post(f"{V2}/registry-modules/{module_id}/actions/retry").status == 200
    retried = the_one(before)["resource"]
    assert retried["action"] == "retried" and retried["meta"]["versions"] == ["1.2.0"]


def signed_delivery(api: Api, path: str, body: str, secret: str) -> Any:
    digest = hmac.new(secret.encode(), body.encode(), hashlib.sha256).hexdigest()
    headers = {"X-GitHub-Event": "push", "X-Hub-Signature-256": f"sha256={digest}"}
    return api.as_(None).call(
        "POST", path, raw=body, content_type="application/json", headers=headers
    )


# ----- the history's one bounded read -----------------------------------------------------------


def test_a_history_reads_its_own_versions_events_and_says_when_it_is_not_whole(aws: Any) -> None:
    from datetime import UTC, datetime, timedelta

    from chalicelib.core.audit import events as core_events
    from chalicelib.core.audit import trail as core_trail
    from chalicelib.modules.store import ModuleVersionModel

    created = datetime.now(UTC) - timedelta(hours=1)
    version = ModuleVersionModel(
        "mod-1", "k", id="modver-1", organization="acme", created_at=created
    )

    def write(resource_id: str, action: str, n: int) -> None:
        core_trail.record(
            core_events.event(
                None,
                organization="acme",
                resource_type="registry-module-version",
                resource_id=resource_id,
                action=action,
                meta={"status": "ok"},
                moment=created + timedelta(seconds=n),
            )
        )

    write("modver-1", "uploaded", 1)
    write("modver-2", "deprecated", 2)  # another version's: not in this one's history
    write("modver-1", "revoked", 3)
    seen = history.of_version(version)
    assert [s.action for s in seen.steps] == ["uploaded", "revoked"] and seen.complete
    assert seen.revoked is not None and seen.revoked.system
    for n in range(history.MOST):
        write("modver-1", "scanned", 10 + n)
    seen = history.of_version(version)
    assert len(seen.steps) == history.MOST and not seen.complete


def test_a_branch_version_is_created_by_its_caller_and_a_failed_fetch_recorded(
    acme: Api, git_server: tuple[GitServer, dict[str, str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    server, _ = git_server
    with monkeypatch.context() as others:
        others.setenv(check.STRICT_SWITCH, "0")  # the VCS connection is another room's change
        token_id = connect(acme, server)
    before = trail()
    created = publish(
        acme,
        token_id,
        "acme/terraform-aws-net",
        vcs_repo={"branch": "main"},
        **{"initial-version": "0.9.0"},
    )
    assert created.status == 201, created.json
    # Two changes, two events: the module, and its first version (by the caller).
    made = sorted((e["resource"]["type"], e["auth"]["type"]) for e in new_events(before))
    assert made == [("registry-module", "Client"), ("registry-module-version", "Client")]
    drain()

    before = trail()
    missing = {"commit-sha": "f" * 40}  # no such commit: the fetch fails
    reply = acme.post(
        f"{V2}/registry-modules/acme/net/aws/versions",
        doc("registry-module-versions", version="1.0.0", **missing),
    )
    assert reply.status == 201, reply.json
    drain()
    version_events = [e["resource"] for e in new_events(before)]
    assert [r["action"] for r in version_events] == ["created", "fetch-failed"]
    failed = version_events[1]
    assert failed["meta"]["outcome"] == "failed" and failed["meta"]["reason"]
    assert failed["meta"]["commit-sha"] == "f" * 40
