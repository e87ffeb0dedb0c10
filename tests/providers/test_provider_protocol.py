"""terraform's Provider Registry Protocol (``providers.v1``) over the Chalice test client and
moto: only verified versions and platforms are served, members read, others get a 404, and
the hot path reads one item (two DynamoDB calls warm, with the rate limiter's)."""

from __future__ import annotations

from typing import Any
from urllib.parse import unquote, urlsplit

import pytest

from chalicelib.core.data.aws import client
from chalicelib.core.settings import get_settings
from tests.conftest import Api, make_org, make_team
from tests.providers.helpers import (
    FILENAME,
    GOOD_ZIP,
    VERSIONS,
    _key_of,
    arrive,
    new_platform,
    new_version,
    provider_org,
    publish,
)
from tests.support.provider_files import SigningKey, new_signing_key, provider_zip, sha256, shasums

V1 = "/api/registry/v1/providers"
DOWNLOAD = f"{V1}/acme/mycloud/1.0.0/download/linux/amd64"


@pytest.fixture(scope="module")
def signer() -> SigningKey:
    return new_signing_key()


@pytest.fixture
def acme(api: Api, signer: SigningKey) -> Api:
    return provider_org(api, signer)


def fetch(url: str) -> bytes:
    """What a presigned GET of the bucket answers (moto serves the object)."""
    path = unquote(urlsplit(url).path).lstrip("/")
    bucket = get_settings().bucket
    key = path[len(bucket) + 1 :] if path.startswith(bucket + "/") else path
    return client("s3").get_object(Bucket=bucket, Key=key)["Body"].read()


def test_discovery_names_providers_v1(api: Api) -> None:
    assert api.get("/.well-known/terraform.json").json["providers.v1"] == f"{V1}/"


def test_a_verified_version_is_served(acme: Api, signer: SigningKey) -> None:
    publish(acme, signer)
    versions = acme.get(f"{V1}/acme/mycloud/versions")
    assert versions.status == 200, versions.json
    assert versions.json["versions"] == [
        {"version": "1.0.0", "protocols": ["5.0"], "platforms": [{"os": "linux", "arch": "amd64"}]}
    ]
    reply = acme.get(DOWNLOAD)
    assert reply.status == 200, reply.json
    body: dict[str, Any] = reply.json
    assert {k: body[k] for k in ("protocols", "os", "arch", "filename", "shasum")} == {
        "protocols": ["5.0"],
        "os": "linux",
        "arch": "amd64",
        "filename": FILENAME,
        "shasum": sha256(GOOD_ZIP),
    }
    (key,) = body["signing_keys"]["gpg_public_keys"]
    assert key["key_id"] == signer.key_id and key["ascii_armor"] == signer.armor
    # The links are presigned (terraform sends no credentials to them) and lead to the files.
    for name in ("download_url", "shasums_url", "shasums_signature_url"):
        assert "Signature=" in body[name] or "X-Amz-Signature=" in body[name], name
    assert fetch(body["download_url"]) == GOOD_ZIP
    sums = fetch(body["shasums_url"])
    assert sums == shasums({FILENAME: GOOD_ZIP})
    signature = fetch(body["shasums_signature_url"])
    from chalicelib.providers.ingest.checks import verify_signature

    verify_signature(signer.armor, signer.key_id, sums, signature)  # raises if not


def test_only_verified_versions_and_platforms_are_served(acme: Api, signer: SigningKey) -> None:
    links = new_version(acme, signer.key_id)
    upload = new_platform(acme, sha256(GOOD_ZIP))
    sums = shasums({FILENAME: GOOD_ZIP})
    arrive(links["shasums-upload"], sums)
    arrive(links["shasums-sig-upload"], signer.sign(sums))
    # Verified, but no platform checked yet: nothing to install.
    assert acme.get(f"{V1}/acme/mycloud/versions").json["versions"] == []
    assert acme.get(DOWNLOAD).status == 404
    arrive(upload, provider_zip("mycloud", "1.0.0", {"../x": b"x"}))  # refused
    assert acme.get(f"{V1}/acme/mycloud/versions").json["versions"] == []
    assert acme.get(DOWNLOAD).json == {
        "errors": ["provider acme/mycloud 1.0.0 for linux/amd64 not found"]
    }
    arrive(upload, GOOD_ZIP)  # the right one, uploaded again
    assert [v["version"] for v in acme.get(f"{V1}/acme/mycloud/versions").json["versions"]] == [
        "1.0.0"
    ]
    assert acme.get(DOWNLOAD).status == 200


def test_a_failed_version_is_not_served(acme: Api, signer: SigningKey) -> None:
    sums = shasums({FILENAME: GOOD_ZIP})
    publish(
        acme, signer, sums=sums + b"\n" + b"1" * 64 + b"  other.zip\n", signature=signer.sign(sums)
    )
    assert acme.get(f"{V1}/acme/mycloud/versions").json["versions"] == []
    assert acme.get(DOWNLOAD).status == 404


def test_a_shasums_tampered_after_verification_stops_being_served(
    acme: Api, signer: SigningKey
) -> None:
    links = new_version(acme, signer.key_id)
    upload = new_platform(acme, sha256(GOOD_ZIP))
    sums = shasums({FILENAME: GOOD_ZIP})
    arrive(links["shasums-upload"], sums)
    arrive(links["shasums-sig-upload"], signer.sign(sums))
    arrive(upload, GOOD_ZIP)
    assert acme.get(DOWNLOAD).status == 200
    arrive(links["shasums-upload"], sums.replace(b"  ", b"  evil-"))
    assert acme.get(f"{V1}/acme/mycloud/versions").json["versions"] == []
    assert acme.get(DOWNLOAD).status == 404
    # Signed again (a new signature for the new SHA256SUMS): served after the platform's
    # new check, against the new file (here its line no longer names the archive).
    arrive(links["shasums-sig-upload"], signer.sign(sums.replace(b"  ", b"  evil-")))
    assert acme.get(f"{VERSIONS}/1.0.0").data["attributes"]["status"] == "verified"
    platform = acme.get(f"{VERSIONS}/1.0.0/platforms/linux/amd64").data["attributes"]
    assert platform["status"] == "failed" and "no line for" in platform["error"]
    assert acme.get(DOWNLOAD).status == 404


def test_deleting_a_platform_or_version_stops_serving_it(acme: Api, signer: SigningKey) -> None:
    publish(acme, signer)
    assert acme.get(DOWNLOAD).status == 200
    assert acme.delete(f"{VERSIONS}/1.0.0/platforms/linux/amd64").status == 204
    assert acme.get(DOWNLOAD).status == 404
    assert acme.get(f"{V1}/acme/mycloud/versions").json["versions"] == []
    assert acme.delete(f"{VERSIONS}/1.0.0").status == 204
    publish(acme, signer)  # the same version again: a new version item
    assert acme.get(DOWNLOAD).status == 200


def test_members_read_and_others_get_a_404(acme: Api, signer: SigningKey) -> None:
    publish(acme, signer)
    _, reader = make_team(acme, "acme", "readers")
    assert acme.as_(reader).get(DOWNLOAD).status == 200
    make_org(acme, "other")
    _, outsider = make_team(acme, "other", "outsiders")
    for path in (f"{V1}/acme/mycloud/versions", DOWNLOAD):
        reply = acme.as_(outsider).get(path)
        assert reply.status == 404 and reply.json == {"errors": ["provider acme/mycloud not found"]}
    assert acme.get(f"{V1}/acme/nothing/versions").status == 404
    assert acme.as_(None).get(DOWNLOAD).status == 401


def test_a_provider_item_without_the_served_maps_gets_them(acme: Api, signer: SigningKey) -> None:
    """A provider created before verification existed (no served maps on its item)."""
    from chalicelib.providers.store import ProviderModel

    (provider,) = ProviderModel.scan()
    provider.update(
        actions=[ProviderModel.served.remove(), ProviderModel.served_platforms.remove()]
        + [ProviderModel.served_keys.remove()]
    )
    publish(acme, signer)
    assert acme.get(DOWNLOAD).status == 200


def test_the_hot_path_costs_two_calls_warm(acme: Api, signer: SigningKey) -> None:
    """versions and download cost at most 2 DynamoDB calls warm (the provider item and the
    rate limiter's counter) and 3 cold, for team and user tokens alike, however many
    versions and platforms the provider has; neither writes an audit event (reads are not
    audited, issue #37)."""
    from bench.reads import counting_reads
    from chalicelib.accounts.teams import service as teams_service
    from chalicelib.accounts.tokens import service as tokens_service
    from chalicelib.accounts.users import service as users_service
    from chalicelib.accounts.users import store as users_store
    from chalicelib.core.audit import check
    from chalicelib.core.audit.store import TABLE
    from chalicelib.core.auth import Principal, verified

    publish(acme, signer)
    for minor in range(1, 6):  # more versions: the cost stays the same
        links = new_version(acme, signer.key_id, f"1.{minor}.0")
        sums = shasums({FILENAME: GOOD_ZIP})
        arrive(links["shasums-upload"], sums)
        arrive(links["shasums-sig-upload"], signer.sign(sums))
    _, team_token = make_team(acme, "acme", "readers")
    admin = Principal("user", users_service.bootstrap_admin(None)[0].id, None)
    user = users_service.create_user("reader", "reader@example.com")
    team = next(t for t in teams_service.list_teams(admin, "acme", None) if t.name == "readers")
    teams_service.change_membership(admin, team.id, [user.username], add=True)
    _, user_token = tokens_service.create_user_token(
        Principal("user", user.id, None), user.id, None, None
    )
    for token in (team_token, user_token):
        caller = acme.as_(token)
        for path in (f"{V1}/acme/mycloud/versions", DOWNLOAD):
            for cold, most in ((False, 2), (True, 3)):
                caller.get(path)  # warm
                if cold:
                    verified.clear()
                    users_store._users.clear()
                with counting_reads() as reads:
                    reply = caller.get(path)
                assert reply.status == 200, reply.json
                assert reads.total_calls <= most, (path, cold, reads.detail())
                # Reads are not audited: no event (a round trip) on the hot path; what it
                # writes is bookkeeping (the download counter), never a change.
                prefix = get_settings().table_name("")
                written = {table.removeprefix(prefix) for table in reads.written}
                assert written <= check.BOOKKEEPING - {TABLE}, (path, cold, written)


def test_upload_keys_of_other_files_do_not_serve_anything(acme: Api, signer: SigningKey) -> None:
    """An object put beside the version's files (not a key the registry handed out)."""
    links = new_version(acme, signer.key_id)
    prefix = _key_of(links["shasums-upload"]).rsplit("/", 1)[0]
    client("s3").put_object(Bucket=get_settings().bucket, Key=f"{prefix}/x", Body=b"x")
    assert acme.get(f"{V1}/acme/mycloud/versions").json["versions"] == []
