"""The audit events of the provider registry (``chalicelib.providers.audited``): one per
change, in the organization's partition, naming who did it; the upload check's outcome by the
registry (``System``); a refused change writes none; no key armor in any event."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.conftest import Api, doc, make_org, make_team
from tests.providers.helpers import (
    KEYS,
    ORG,
    PROVIDER,
    VERSIONS,
    new_platform,
    new_version,
    provider_org,
    publish,
)
from tests.support.provider_files import SigningKey, new_signing_key, sha256


def recorded(organization: str | None) -> list[dict[str, Any]]:
    from chalicelib.core.audit import trail

    found, _ = trail.read_page(organization, None, 1, 1000)
    return found


def summary(organization: str | None) -> list[tuple[str, str, str]]:
    return [
        (e["resource"]["type"], e["resource"]["action"], e["resource"]["meta"]["outcome"])
        for e in recorded(organization)
    ]


def admin_id(api: Api) -> str:
    return str(api.get("/api/v2/account/details").data["id"])


@pytest.fixture(scope="module")
def signer() -> SigningKey:
    return new_signing_key()


@pytest.fixture
def acme(api: Api, signer: SigningKey) -> Api:
    return provider_org(api, signer)


def test_each_publisher_change_records_one_event(acme: Api, signer: SigningKey) -> None:
    before = len(recorded("acme"))  # the organization, the key, the provider
    assert summary("acme")[-2:] == [
        ("gpg-key", "created", "succeeded"),
        ("registry-provider", "created", "succeeded"),
    ]
    binding = {"data": {"type": "", "relationships": {"tag-bindings": {"data": []}}}}
    assert acme.patch(PROVIDER, binding).status == 200
    new_version(acme, signer.key_id)
    new_platform(acme, sha256(b"zip"))
    platform = f"{VERSIONS}/1.0.0/platforms/linux/amd64"
    assert acme.delete(platform).status == 204
    assert acme.delete(f"{VERSIONS}/1.0.0").status == 204
    assert acme.delete(PROVIDER).status == 204

    events = recorded("acme")[before:]
    assert [(e["resource"]["type"], e["resource"]["action"]) for e in events] == [
        ("registry-provider", "updated"),
        ("registry-provider-version", "created"),
        ("registry-provider-platform", "created"),
        ("registry-provider-platform", "deleted"),
        ("registry-provider-version", "deleted"),
        ("registry-provider", "deleted"),
    ]
    me = admin_id(acme)
    for event in events:
        assert event["auth"]["accessor_id"] == me
        assert event["auth"]["type"] == "Client"
        assert event["auth"]["organization_id"] == "acme"
        assert event["resource"]["meta"]["provider"] == "private/acme/mycloud"
    assert events[0]["resource"]["meta"]["changed"] == ["tag-bindings"]
    assert events[2]["resource"]["meta"]["os"] == "linux"
    assert events[1]["resource"]["meta"]["version"] == "1.0.0"
    assert events[1]["resource"]["id"] == events[4]["resource"]["id"]
    # Nothing of acme's in the site's partition.
    assert not [e for e in recorded(None) if e["resource"]["type"].startswith("registry-prov")]


def test_refused_changes_record_nothing(api: Api, acme: Api, signer: SigningKey) -> None:
    _, reader = make_team(api, "acme", "readers")
    before = recorded("acme")
    # Taken, invalid, not allowed, not found.
    again = doc(
        "registry-providers", name="mycloud", namespace="acme", **{"registry-name": "private"}
    )
    assert acme.post(ORG, again).status == 422
    bad = {"data": {"type": "registry-provider-versions", "attributes": {"version": "x"}}}
    assert acme.post(VERSIONS, bad).status == 422
    assert acme.as_(reader).post(VERSIONS, bad).status == 404
    assert acme.as_(reader).delete(PROVIDER).status == 404
    assert acme.delete(f"{VERSIONS}/9.9.9").status == 404
    key = doc("gpg-keys", namespace="acme", **{"ascii-armor": signer.armor})
    assert acme.post(KEYS, key).status == 422  # added already
    assert recorded("acme") == before


def test_a_lost_race_writes_neither_the_change_nor_its_event(acme: Api) -> None:
    """The change and its event are one transaction: a delete of a provider deleted
    meanwhile writes no event."""
    from chalicelib.core.api.errors import NotFound
    from chalicelib.providers import audited, service, store

    provider = store.provider("acme", store.provider_key("private", "acme", "mycloud"))
    assert provider is not None
    assert acme.delete(PROVIDER).status == 204
    before = recorded("acme")
    principal = _principal(acme)
    with pytest.raises(NotFound):
        service._delete_last(provider, audited.provider_event(principal, provider, "deleted"))
    assert recorded("acme") == before


def _principal(api: Api) -> Any:
    from chalicelib.core.auth import Principal

    return Principal(kind="user", id=admin_id(api), token_id="at-test")


def test_gpg_keys_record_their_changes_never_their_armor(
    api: Api, acme: Api, signer: SigningKey
) -> None:
    make_org(api, "beta")
    moved = acme.patch(f"{KEYS}/acme/{signer.key_id}", doc("gpg-keys", namespace="beta"))
    assert moved.status == 200, moved.json
    assert acme.delete(f"{KEYS}/beta/{signer.key_id}").status == 204

    created = [e for e in recorded("acme") if e["resource"]["type"] == "gpg-key"]
    assert [e["resource"]["action"] for e in created] == ["created"]
    beta = [e for e in recorded("beta") if e["resource"]["type"] == "gpg-key"]
    assert [e["resource"]["action"] for e in beta] == ["updated", "deleted"]
    assert beta[0]["resource"]["meta"]["changed"] == ["namespace"]
    assert beta[0]["resource"]["meta"]["moved-from"] == "acme"
    assert beta[1]["resource"]["meta"]["key-id"] == signer.key_id
    assert {e["resource"]["id"] for e in created + beta} == {created[0]["resource"]["id"]}
    everything = json.dumps(recorded("acme") + recorded("beta") + recorded(None))
    assert "PGP" not in everything and signer.armor[40:80] not in everything


def test_the_upload_check_records_its_outcome_as_the_registry(
    acme: Api, signer: SigningKey
) -> None:
    before = len(recorded("acme"))
    publish(acme, signer)
    events = recorded("acme")[before:]
    checked = [e for e in events if e["auth"]["type"] == "System"]
    assert [(e["resource"]["type"], e["resource"]["action"]) for e in checked] == [
        ("registry-provider-version", "uploaded"),
        ("registry-provider-platform", "uploaded"),
    ]
    for event in checked:
        assert event["auth"]["accessor_id"] == "registry"
        assert event["auth"]["organization_id"] == "acme"
        assert event["resource"]["meta"]["outcome"] == "succeeded"
        assert event["resource"]["meta"]["created-by"] == admin_id(acme)
    assert checked[0]["resource"]["meta"]["key-id"] == signer.key_id


def test_a_refused_upload_records_its_refusal(acme: Api, signer: SigningKey) -> None:
    before = len(recorded("acme"))
    publish(acme, signer, signature=b"not a signature")
    checked = [e for e in recorded("acme")[before:] if e["auth"]["type"] == "System"]
    assert [(e["resource"]["type"], e["resource"]["action"]) for e in checked] == [
        ("registry-provider-version", "refused")
    ]
    meta = checked[0]["resource"]["meta"]
    assert meta["outcome"] == "refused"
    assert meta["reason"]


def test_an_upload_of_a_deleted_version_records_nothing(acme: Api, signer: SigningKey) -> None:
    from tests.providers.helpers import arrive

    links = new_version(acme, signer.key_id)
    assert acme.delete(f"{VERSIONS}/1.0.0").status == 204
    before = recorded("acme")
    arrive(links["shasums-upload"], b"sums")
    arrive(links["shasums-sig-upload"], b"sig")
    assert recorded("acme") == before
