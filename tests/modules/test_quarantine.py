"""A version the publishing policy quarantined: never served by the registry protocol (its
versions list and download), shown with its reasons on the version resource, neither
deprecated nor revoked nor uploaded again, deleted by owners, and released (served) by an
owner or a manage-modules team with a written reason that is recorded; everyone else is
refused and nothing changes.

The scan worker quarantines versions (``modules.scanning``); here ``quarantine_by_scan``
puts one there through the worker's own write (``writes.record_scan``)."""

from __future__ import annotations

import pytest

from chalicelib.artifacts.statuses import VersionStatus
from chalicelib.core.audit import events, trail
from chalicelib.core.data.ids import now
from chalicelib.modules import writes
from chalicelib.modules.store import ModuleVersionModel
from tests.accounts.helpers import add_member, new_user, team_id_by_name
from tests.conftest import Api, doc, make_org, make_team
from tests.modules.helpers import ORG, V1, create_module, create_version, publish
from tests.modules.scan_data import quarantine_by_scan

MODULE = f"{ORG}/private/acme/vpc/aws"
REASONS = ["1 finding(s) at or above high (AVD-AWS-0086)"]


def release_path(version: str) -> str:
    return f"{MODULE}/versions/{version}/actions/release"


def release(api: Api, version: str, reason: object = "reviewed: the bucket is a website"):
    return api.post(release_path(version), doc("registry-module-version-releases", reason=reason))


def stored(module_id: str, version: str) -> ModuleVersionModel:
    return next(v for v in ModuleVersionModel.query(module_id) if v.version == version)


def quarantine(module_id: str, version: str, reasons: list[str] = REASONS) -> None:
    assert quarantine_by_scan(stored(module_id, version), reasons)


def attributes(api: Api, version: str) -> dict:
    reply = api.get(f"{MODULE}/version?module_version={version}")
    assert reply.status == 200, reply.json
    return reply.data["attributes"]


def served(api: Api) -> list[str]:
    (module,) = api.get(f"{V1}/acme/vpc/aws/versions").json["modules"]
    return [v["version"] for v in module["versions"]]


@pytest.fixture
def acme(api: Api) -> Api:
    make_org(api, "acme")
    return api


@pytest.fixture
def held(acme: Api) -> str:
    """acme/vpc/aws with 1.0.0 served and 1.1.0 quarantined (its archive ingested)."""
    module = create_module(acme)
    publish(acme, "1.0.0")
    publish(acme, "1.1.0")
    quarantine(module["id"], "1.1.0")
    return module["id"]


def test_the_protocol_never_serves_a_quarantined_version(acme: Api, held: str) -> None:
    assert served(acme) == ["1.0.0"]
    assert acme.get(f"{V1}/acme/vpc/aws/1.1.0/download").status == 404
    assert acme.get(f"{V1}/acme/vpc/aws").json["version"] == "1.0.0"
    assert acme.get(f"{V1}/acme/vpc/aws/download").headers["Location"].endswith("/1.0.0/download")
    listed = {m["id"] for m in acme.get(f"{V1}/acme").json["modules"]}
    assert listed == {"acme/vpc/aws/1.0.0"}

    attrs = attributes(acme, "1.1.0")
    assert attrs["status"] == "quarantined"
    assert attrs["quarantine"]["reasons"] == REASONS and attrs["quarantine"]["quarantined-at"]
    assert attrs["quarantine"]["released-by"] is None
    assert "quarantine" not in attributes(acme, "1.0.0")
    statuses = acme.get(MODULE).data["attributes"]["version-statuses"]
    assert {v["version"]: v["status"] for v in statuses} == {"1.0.0": "ok", "1.1.0": "quarantined"}


def test_an_owner_releases_it_with_a_reason_and_terraform_gets_it(acme: Api, held: str) -> None:
    reply = release(acme, "1.1.0", "  reviewed: the bucket is a website  ")
    assert reply.status == 200, reply.json
    attrs = reply.data["attributes"]
    assert attrs["status"] == "ok"
    record = attrs["quarantine"]
    assert record["reasons"] == REASONS
    admin = acme.get("/api/v2/account/details").data
    assert record["released-by"] == {"type": "user", "id": admin["id"], "name": "admin"}
    assert record["released-at"] and record["release-reason"] == "reviewed: the bucket is a website"
    assert attributes(acme, "1.1.0") == attrs
    # The protocol's list, latest and download follow.
    assert served(acme) == ["1.1.0", "1.0.0"]
    assert acme.get(f"{V1}/acme/vpc/aws/1.1.0/download").status == 204
    assert acme.get(f"{V1}/acme/vpc/aws").json["version"] == "1.1.0"
    assert {m["id"] for m in acme.get(f"{V1}/acme").json["modules"]} == {"acme/vpc/aws/1.1.0"}
    # Released once: a second release is refused and changes nothing.
    again = release(acme, "1.1.0", "again")
    assert again.status == 422 and "only a quarantined version" in again.error["detail"]
    assert attributes(acme, "1.1.0") == attrs


@pytest.mark.parametrize(
    ("reason", "pointer"),
    [
        (None, "/data/attributes/reason"),
        ("", "/data/attributes/reason"),
        ("   ", "/data/attributes/reason"),
        ("x" * 1001, "/data/attributes/reason"),
        (5, "/data/attributes/reason"),
    ],
)
def test_a_release_needs_a_written_bounded_reason(
    acme: Api, held: str, reason: object, pointer: str
) -> None:
    before = attributes(acme, "1.1.0")
    reply = release(acme, "1.1.0", reason)
    assert reply.status == 422, reply.json
    assert reply.error["source"]["pointer"] == pointer
    assert attributes(acme, "1.1.0") == before and served(acme) == ["1.0.0"]


def test_only_owners_and_manage_modules_teams_release(acme: Api, held: str) -> None:
    _, publisher = make_team(acme, "acme", "ci", manage_modules=True)
    reader_team, reader = make_team(acme, "acme", "readers")
    _, workspaces = make_team(acme, "acme", "ws", manage_workspaces=True)
    _, member = new_user(acme, "bob")
    assert add_member(acme, reader_team, "bob").status in (200, 204)
    org_token = acme.post("/api/v2/organizations/acme/authentication-token", raw="null")
    make_org(acme, "evil")
    _, outsider = new_user(acme, "eve")
    assert add_member(acme, team_id_by_name(acme, "evil", "owners"), "eve").status in (200, 204)
    before = attributes(acme, "1.1.0")
    refused = {
        "read-only team token": acme.as_(reader),
        "manage-workspaces team token": acme.as_(workspaces),
        "member of a read-only team": member,
        "organization token": acme.as_(org_token.data["attributes"]["token"]),
        "another organization's owner": outsider,
    }
    for kind, who in refused.items():
        reply = release(who, "1.1.0")
        assert reply.status == 404, (kind, reply.json)
    assert release(acme.as_(None), "1.1.0").status == 401
    assert attributes(acme, "1.1.0") == before and served(acme) == ["1.0.0"]

    done = release(acme.as_(publisher), "1.1.0", "accepted by the platform team")
    assert done.status == 200, done.json
    assert done.data["attributes"]["quarantine"]["released-by"]["type"] == "team"
    assert served(acme) == ["1.1.0", "1.0.0"]


def test_a_quarantined_version_is_released_or_deleted_nothing_else(acme: Api, held: str) -> None:
    """Deprecating or revoking what nobody can install means nothing (statuses.TRANSITIONS):
    refused, as a new upload is (no link); releasing a version that is not quarantined is
    refused; an owner deletes it."""
    for change in (
        {"deprecation": {"deprecated-status": "Deprecated"}},
        {"revocation": {"status": "Revoked"}},
    ):
        reply = acme.patch(f"{MODULE}/1.1.0", doc("module-versions", **change))
        assert reply.status == 422 and "quarantined" in reply.error["detail"], reply.json
    looked_up = acme.get(f"{MODULE}/version?module_version=1.1.0").data
    assert "links" not in looked_up  # no upload link: its archive is the one held back
    listed = acme.get(f"{MODULE}/versions").data
    assert all("links" not in v for v in listed)
    ok = release(acme, "1.0.0")
    assert ok.status == 422 and "only a quarantined version" in ok.error["detail"]
    pending = create_version(acme, "1.2.0")
    assert pending.status == 201
    assert release(acme, "1.2.0").status == 422
    assert release(acme, "9.9.9").status == 404

    assert acme.delete(f"{MODULE}/1.1.0").status == 204
    statuses = acme.get(MODULE).data["attributes"]["version-statuses"]
    assert {v["version"] for v in statuses} == {"1.0.0", "1.2.0"}
    assert served(acme) == ["1.0.0"]


def test_the_store_writes_are_conditional(acme: Api, held: str) -> None:
    """``record_scan`` quarantines only the version as it was read (a held version whose
    status changed meanwhile is left alone); ``release_version`` releases only the
    quarantined version read, unchanged since."""
    version = stored(held, "1.0.0")
    writes.record_version_status(version, VersionStatus.INGRESSING, now())
    assert not quarantine_by_scan(version, REASONS)  # read as ok: stale
    assert stored(held, "1.0.0").status == "reg_ingressing"

    quarantined = stored(held, "1.1.0")
    assert release(acme, "1.1.0").status == 200
    # The release recorded its audit event, in its own transaction.
    recorded, _ = trail.read_page("acme", None, 1, 100)
    released = [e for e in recorded if e["resource"]["action"] == "released"]
    assert [e["resource"]["id"] for e in released] == [quarantined.id]
    assert released[0]["resource"]["meta"]["version"] == "1.1.0"
    assert released[0]["resource"]["meta"]["outcome"] == "succeeded"
    stale = events.event(
        None,
        organization="acme",
        resource_type="registry-module-version",
        resource_id=quarantined.id,
        action="released",
    )
    with pytest.raises(writes.VersionChanged):
        writes.release_version(quarantined, {"reasons": REASONS}, now(), stale)
    assert stored(held, "1.1.0").quarantine["release-reason"]
    # The refused release wrote no event.
    assert trail.read_page("acme", None, 1, 100)[0] == recorded


def test_a_late_upload_to_a_quarantined_version_is_dropped(acme: Api, held: str) -> None:
    """Its archive is the one its scan held back: an upload through an old link is not
    ingested (else it would become ok without a release), as for an ok version."""
    from chalicelib.core.data.aws import client
    from chalicelib.core.settings import get_settings
    from chalicelib.modules.ingest.handler import handle_s3_record
    from tests.conftest import tar_gz

    version = stored(held, "1.1.0")
    client("s3").put_object(
        Bucket=get_settings().bucket,
        Key=version.upload_key,
        Body=tar_gz({"main.tf": 'resource "aws_s3_bucket" "b" {}'}),
    )
    assert handle_s3_record({"s3": {"object": {"key": version.upload_key}}}) == "already-ok"
    after = stored(held, "1.1.0")
    assert after.status == "quarantined" and after.sha256 == version.sha256
    assert served(acme) == ["1.0.0"]
