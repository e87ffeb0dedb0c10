"""The private provider registry through HTTP (Chalice test client + moto): GPG keys,
providers, versions and platforms, ported from go-tfe v1.109.0's
``gpg_key_integration_test.go`` and ``registry_provider*_integration_test.go``, plus who may
do what and the refusals that change nothing."""

from __future__ import annotations

import warnings
from typing import Any

import pytest

from chalicelib.core.data.aws import client
from chalicelib.core.settings import get_settings
from tests.conftest import Api, doc, make_org, make_team
from tests.providers.helpers import ORG, PROVIDER, VERSIONS, _key_of

KEYS = "/api/registry/private/v2/gpg-keys"


def _new_key(algorithm: str) -> tuple[str, str]:
    """(armored public key, its 16-hex key id) of a fresh key."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from pgpy import PGPUID, PGPKey
        from pgpy.constants import EllipticCurveOID, HashAlgorithm, KeyFlags, PubKeyAlgorithm

        if algorithm == "rsa":
            key = PGPKey.new(PubKeyAlgorithm.RSAEncryptOrSign, 2048)
        elif algorithm == "dsa":
            key = PGPKey.new(PubKeyAlgorithm.DSA, 2048)
        else:
            key = PGPKey.new(PubKeyAlgorithm.EdDSA, EllipticCurveOID.Ed25519)
        key.add_uid(
            PGPUID.new("Provider Signer", email="sign@acme.test"),
            usage={KeyFlags.Sign},
            hashes=[HashAlgorithm.SHA256],
        )
        return str(key.pubkey), str(key.fingerprint.keyid)


@pytest.fixture(scope="module")
def rsa_key() -> tuple[str, str]:
    return _new_key("rsa")


@pytest.fixture
def acme(api: Api) -> Api:
    make_org(api, "acme")
    return api


@pytest.fixture
def provider(acme: Api) -> dict[str, Any]:
    reply = acme.post(
        ORG,
        doc("registry-providers", name="mycloud", namespace="acme", **{"registry-name": "private"}),
    )
    assert reply.status == 201, reply.json
    return reply.data


def create_version(api: Api, version: str = "1.0.0", key_id: str = "abcdefg") -> Any:
    body = {
        "data": {
            "type": "registry-provider-versions",
            "attributes": {"version": version, "key-id": key_id, "protocols": ["5.0"]},
        }
    }
    return api.post(VERSIONS, body)


def platform_body(os_: str = "linux", arch: str = "amd64", **extra: Any) -> dict[str, Any]:
    attributes = {
        "os": os_,
        "arch": arch,
        "shasum": "ab" * 32,
        "filename": f"terraform-provider-mycloud_1.0.0_{os_}_{arch}.zip",
        **extra,
    }
    return {"data": {"type": "registry-provider-version-platforms", "attributes": attributes}}


def everything(api: Api) -> dict[str, Any]:
    """What a reader sees of the organization's providers: a refusal must leave it as is."""
    return {
        "providers": api.get(ORG).json,
        "keys": api.get(f"{KEYS}?filter[namespace]=acme").json,
    }


# ----- GPG keys (TestGPGKeyCreate, Read, Update, Delete) ------------------------------------


def test_gpg_key_create_read_list_delete(acme: Api, rsa_key: tuple[str, str]) -> None:
    armor, key_id = rsa_key
    reply = acme.post(KEYS, doc("gpg-keys", namespace="acme", **{"ascii-armor": armor}))
    assert reply.status == 201, reply.json
    key = reply.data
    assert key["type"] == "gpg-keys" and key["id"]
    attrs = key["attributes"]
    assert attrs["ascii-armor"] == armor and attrs["namespace"] == "acme"
    assert attrs["key-id"] == key_id.upper() and len(attrs["key-id"]) == 16
    assert attrs["created-at"] and attrs["updated-at"]
    assert attrs["source"] == "" and attrs["trust-signature"] == ""

    # Read by namespace and key id, in either case.
    assert acme.get(f"{KEYS}/acme/{key_id.lower()}").data == key
    assert acme.get(f"{KEYS}/acme/foobar").status == 404
    listed = acme.get(f"{KEYS}?filter[namespace]=acme")
    assert listed.status == 200 and [k["id"] for k in listed.data] == [key["id"]]
    assert listed.json["meta"]["pagination"]["total-count"] == 1

    # The same key twice in one namespace: a 422, nothing added.
    again = acme.post(KEYS, doc("gpg-keys", namespace="acme", **{"ascii-armor": armor}))
    assert again.status == 422 and "already" in again.error["detail"]

    assert acme.delete(f"{KEYS}/acme/{key_id}").status == 204
    assert acme.get(f"{KEYS}/acme/{key_id}").status == 404
    assert acme.get(f"{KEYS}?filter[namespace]=acme").data == []


def test_gpg_key_list_needs_a_namespace(acme: Api) -> None:
    reply = acme.get(KEYS)
    assert reply.status == 422 and reply.error["source"]["parameter"] == "filter[namespace]"
    many = ",".join(f"org{i}" for i in range(21))
    assert acme.get(f"{KEYS}?filter[namespace]={many}").status == 422


def test_dsa_keys_are_accepted(acme: Api) -> None:
    armor, key_id = _new_key("dsa")
    reply = acme.post(KEYS, doc("gpg-keys", namespace="acme", **{"ascii-armor": armor}))
    assert reply.status == 201, reply.json
    assert reply.data["attributes"]["key-id"] == key_id.upper()


@pytest.mark.parametrize(
    ("armor", "words"),
    [
        ("", "ascii-armor is required"),
        ("not a key at all", "ASCII-armored public key"),
        (
            "-----BEGIN PGP PUBLIC KEY BLOCK-----\n\nbm90IGEga2V5\n"
            "-----END PGP PUBLIC KEY BLOCK-----\n",
            "not a readable OpenPGP key",
        ),
        (None, "EdDSA keys are not accepted"),
    ],
)
def test_bad_keys_are_a_422_with_a_pointer(acme: Api, armor: str | None, words: str) -> None:
    if armor is None:
        armor = _new_key("eddsa")[0]
    before = everything(acme)
    reply = acme.post(KEYS, doc("gpg-keys", namespace="acme", **{"ascii-armor": armor}))
    assert reply.status == 422, reply.json
    assert words in reply.error["detail"]
    assert reply.error["source"]["pointer"] == "/data/attributes/ascii-armor"
    assert everything(acme) == before


def test_gpg_key_moves_only_to_a_namespace_the_caller_manages(
    acme: Api, rsa_key: tuple[str, str]
) -> None:
    armor, key_id = rsa_key
    assert (
        acme.post(KEYS, doc("gpg-keys", namespace="acme", **{"ascii-armor": armor})).status == 201
    )
    _, acme_publisher = make_team(acme, "acme", "publishers", manage_providers=True)
    make_org(acme, "other")
    publisher = acme.as_(acme_publisher)

    # go-tfe's "when using an invalid namespace": the words it looks for.
    for target in ("invalid_namespace_org", "other"):
        reply = publisher.patch(f"{KEYS}/acme/{key_id}", doc("gpg-keys", namespace=target))
        assert reply.status == 422, reply.json
        assert "namespace not authorized" in reply.error["detail"]
    assert acme.get(f"{KEYS}/acme/{key_id}").status == 200

    # "when updating to a valid namespace": the site admin manages both.
    moved = acme.patch(f"{KEYS}/acme/{key_id}", doc("gpg-keys", namespace="other"))
    assert moved.status == 200, moved.json
    assert moved.data["attributes"]["namespace"] == "other"
    assert moved.data["attributes"]["key-id"] == key_id.upper()
    assert acme.get(f"{KEYS}/acme/{key_id}").status == 404
    assert acme.delete(f"{KEYS}/other/{key_id}").status == 204


def test_gpg_keys_permissions(acme: Api, rsa_key: tuple[str, str]) -> None:
    armor, key_id = rsa_key
    _, reader_token = make_team(acme, "acme", "readers")
    _, publisher_token = make_team(acme, "acme", "publishers", manage_providers=True)
    make_org(acme, "outside")
    _, outsider_token = make_team(acme, "outside", "owners-of-nothing", manage_providers=True)
    body = doc("gpg-keys", namespace="acme", **{"ascii-armor": armor})

    assert acme.as_(reader_token).post(KEYS, body).status == 404
    assert acme.as_(outsider_token).post(KEYS, body).status == 404
    assert acme.get(f"{KEYS}?filter[namespace]=acme").data == []
    assert acme.as_(publisher_token).post(KEYS, body).status == 201

    reader = acme.as_(reader_token)
    assert reader.get(f"{KEYS}/acme/{key_id}").status == 200
    assert reader.get(f"{KEYS}?filter[namespace]=acme").status == 200
    assert reader.delete(f"{KEYS}/acme/{key_id}").status == 404
    outsider = acme.as_(outsider_token)
    assert outsider.get(f"{KEYS}/acme/{key_id}").status == 404
    assert outsider.get(f"{KEYS}?filter[namespace]=acme").status == 404
    assert acme.get(f"{KEYS}/acme/{key_id}").status == 200


# ----- providers (TestRegistryProviders*) ---------------------------------------------------


def test_provider_create_read_list_delete(acme: Api, provider: dict[str, Any]) -> None:
    assert provider["type"] == "registry-providers" and provider["id"].startswith("prov-")
    attrs = provider["attributes"]
    assert attrs["name"] == "mycloud" and attrs["namespace"] == "acme"
    assert attrs["registry-name"] == "private"
    assert attrs["permissions"] == {"can-delete": True}
    assert attrs["created-at"] and attrs["updated-at"]
    assert provider["relationships"]["organization"]["data"] == {
        "id": "acme",
        "type": "organizations",
    }

    assert acme.get(PROVIDER).data == provider
    assert acme.get(f"/api/v2/registry-providers/{provider['id']}").data == provider
    listed = acme.get(ORG)
    assert [p["id"] for p in listed.data] == [provider["id"]]
    assert acme.get(f"{ORG}?filter[registry_name]=public").data == []
    assert acme.get(f"{ORG}?q=cloud").status == 200 and len(acme.get(f"{ORG}?q=cloud").data) == 1
    assert acme.get(f"{ORG}?q=nothing").data == []

    with_versions = acme.get(f"{PROVIDER}?include=registry-provider-versions")
    assert with_versions.status == 200 and with_versions.json["included"] == []

    assert acme.delete(PROVIDER).status == 204
    assert acme.get(PROVIDER).status == 404
    assert acme.get(f"/api/v2/registry-providers/{provider['id']}").status == 404


@pytest.mark.parametrize(
    ("attributes", "pointer"),
    [
        ({"namespace": "acme", "registry-name": "private"}, "/data/attributes/name"),
        (
            {"name": "Bad_Name", "namespace": "acme", "registry-name": "private"},
            "/data/attributes/name",
        ),
        (
            {"name": "x" * 65, "namespace": "acme", "registry-name": "private"},
            "/data/attributes/name",
        ),
        (
            {"name": "ok", "namespace": "someone-else", "registry-name": "private"},
            "/data/attributes/namespace",
        ),
        ({"name": "ok", "registry-name": "private"}, "/data/attributes/namespace"),
        ({"name": "ok", "namespace": "acme"}, "/data/attributes/registry-name"),
        ({"name": 5, "namespace": "acme", "registry-name": "private"}, "/data/attributes/name"),
    ],
)
def test_bad_provider_bodies_are_422s(acme: Api, attributes: dict[str, Any], pointer: str) -> None:
    before = everything(acme)
    reply = acme.post(ORG, {"data": {"type": "registry-providers", "attributes": attributes}})
    assert reply.status == 422, reply.json
    assert reply.error["source"]["pointer"] == pointer
    assert everything(acme) == before


def test_a_provider_twice_is_a_422(acme: Api, provider: dict[str, Any]) -> None:
    again = acme.post(
        ORG,
        doc("registry-providers", name="mycloud", namespace="acme", **{"registry-name": "private"}),
    )
    assert again.status == 422 and "already been taken" in again.error["detail"]
    assert len(acme.get(ORG).data) == 1


def test_public_providers_need_the_hosted_edition(acme: Api) -> None:
    body = doc(
        "registry-providers", name="aws", namespace="hashicorp", **{"registry-name": "public"}
    )
    assert acme.post(ORG, body).status == 403
    assert acme.get(ORG).data == []


def test_public_providers_on_the_hosted_edition(acme: Api, hosted: None) -> None:
    body = doc(
        "registry-providers", name="aws", namespace="hashicorp", **{"registry-name": "public"}
    )
    reply = acme.post(ORG, body)
    assert reply.status == 201, reply.json
    assert acme.get(f"{ORG}/public/hashicorp/aws").status == 200
    # go-tfe "with a public provider": versions are for private providers only.
    version = acme.post(
        f"{ORG}/public/hashicorp/aws/versions",
        doc("registry-provider-versions", version="1.0.0", **{"key-id": "ab"}),
    )
    assert version.status == 422


def test_go_tfe_provider_names_with_underscores(acme: Api, hosted: None) -> None:
    """go-tfe registry_provider_integration_test.go, TestRegistryProvidersCreate "with valid
    options": ``provider_name`` in ``public_namespace`` (public) and ``provider_name`` in the
    organization (private) are created and echoed back (TFE accepts the underscore)."""
    for registry, namespace in (("public", "public_namespace"), ("private", "acme")):
        body = doc(
            "registry-providers",
            name="provider_name",
            namespace=namespace,
            **{"registry-name": registry},
        )
        reply = acme.post(ORG, body)
        assert reply.status == 201, reply.json
        attributes = reply.data["attributes"]
        assert (attributes["name"], attributes["namespace"]) == ("provider_name", namespace)
        assert attributes["registry-name"] == registry
        assert acme.get(f"{ORG}/{registry}/{namespace}/provider_name").status == 200


def test_go_tfe_registry_name_errors(acme: Api) -> None:
    """go-tfe TestRegistryProvidersCreate "without a registry-name" and "with an invalid
    registry-name": the error texts go-tfe compares, built from the answer's errors (title,
    a blank line, detail; one line per error)."""
    from tests.scim.helpers import go_tfe_error

    before = everything(acme)
    missing = acme.post(ORG, doc("registry-providers", name="name", namespace="namespace"))
    assert missing.status == 422
    assert go_tfe_error(missing) == (
        "invalid attribute\n\nRegistry name can't be blank\n"
        "invalid attribute\n\nRegistry name is not included in the list"
    )
    invalid = acme.post(
        ORG,
        doc("registry-providers", name="name", namespace="namespace", **{"registry-name": "x"}),
    )
    assert invalid.status == 422
    assert go_tfe_error(invalid) == "invalid attribute\n\nRegistry name is not included in the list"
    assert everything(acme) == before


def test_provider_permissions(acme: Api, provider: dict[str, Any]) -> None:
    _, reader_token = make_team(acme, "acme", "readers", manage_modules=True)
    _, publisher_token = make_team(acme, "acme", "publishers", manage_providers=True)
    make_org(acme, "outside")
    _, outsider_token = make_team(acme, "outside", "publishers", manage_providers=True)
    reader, publisher, outsider = (
        acme.as_(t) for t in (reader_token, publisher_token, outsider_token)
    )

    seen = reader.get(PROVIDER)
    assert seen.status == 200 and seen.data["attributes"]["permissions"]["can-delete"] is False
    assert (
        reader.post(
            ORG,
            doc("registry-providers", name="two", namespace="acme", **{"registry-name": "private"}),
        ).status
        == 404
    )
    assert reader.delete(PROVIDER).status == 404
    assert create_version(reader).status == 404
    for path in (ORG, PROVIDER, f"/api/v2/registry-providers/{provider['id']}", VERSIONS):
        assert outsider.get(path).status == 404, path
    assert outsider.delete(PROVIDER).status == 404
    assert acme.get(PROVIDER).status == 200

    created = create_version(publisher)
    assert created.status == 201, created.json
    assert "shasums-upload" in created.data["links"]
    # A reader sees the version without any upload link.
    read = reader.get(f"{VERSIONS}/1.0.0")
    assert read.status == 200 and read.data["links"] == {}
    assert read.data["attributes"]["permissions"] == {
        "can-delete": False,
        "can-upload-asset": False,
    }
    assert publisher.delete(PROVIDER).status == 204


# ----- versions (TestRegistryProviderVersions*) ---------------------------------------------


def test_version_create_read_list_delete(acme: Api, provider: dict[str, Any]) -> None:
    reply = create_version(acme)
    assert reply.status == 201, reply.json
    version = reply.data
    assert version["type"] == "registry-provider-versions" and version["id"].startswith("provver-")
    attrs = version["attributes"]
    assert attrs["version"] == "1.0.0" and attrs["key-id"] == "abcdefg"
    assert attrs["protocols"] == ["5.0"]
    assert attrs["shasums-uploaded"] is False and attrs["shasums-sig-uploaded"] is False
    assert attrs["created-at"] and attrs["updated-at"]
    assert version["relationships"]["registry-provider"]["data"]["id"] == provider["id"]
    links = version["links"]
    assert set(links) == {"shasums-upload", "shasums-sig-upload"}
    assert "shasums-download" not in links  # "doesn't include download links"

    read = acme.get(f"{VERSIONS}/1.0.0")
    assert read.status == 200 and read.data["id"] == version["id"]
    assert set(read.data["links"]) == {"shasums-upload", "shasums-sig-upload"}
    assert read.data["relationships"]["platforms"]["data"] == []

    for number in ("1.1.0", "2.0.0-beta.1", "0.9.0"):
        assert create_version(acme, number).status == 201
    listed = acme.get(f"{VERSIONS}?page[size]=2")
    assert listed.json["meta"]["pagination"]["total-count"] == 4
    assert listed.json["meta"]["pagination"]["total-pages"] == 2
    assert [v["attributes"]["version"] for v in listed.data] == ["2.0.0-beta.1", "1.1.0"]

    assert acme.delete(f"{VERSIONS}/1.0.0").status == 204
    assert acme.get(f"{VERSIONS}/1.0.0").status == 404
    assert acme.delete(f"{VERSIONS}/1.0.0").status == 404  # "with non existing version"


@pytest.mark.parametrize(
    ("attributes", "pointer"),
    [
        ({"key-id": "abcdefg"}, "/data/attributes/version"),
        ({"version": "1.0.0"}, "/data/attributes/key-id"),
        ({"version": "v1.0.0", "key-id": "abcdefg"}, "/data/attributes/version"),
        ({"version": "1.0.0", "key-id": "ab cd"}, "/data/attributes/key-id"),
        (
            {"version": "1.0.0", "key-id": "ab", "protocols": ["five"]},
            "/data/attributes/protocols/0",
        ),
        (
            {"version": "1.0.0", "key-id": "ab", "protocols": ["5.0"] * 11},
            "/data/attributes/protocols",
        ),
    ],
)
def test_bad_version_bodies_are_422s(
    acme: Api, provider: dict[str, Any], attributes: dict[str, Any], pointer: str
) -> None:
    reply = acme.post(
        VERSIONS, {"data": {"type": "registry-provider-versions", "attributes": attributes}}
    )
    assert reply.status == 422, reply.json
    assert reply.error["source"]["pointer"] == pointer
    assert acme.get(VERSIONS).data == []


def test_a_version_twice_is_a_422(acme: Api, provider: dict[str, Any]) -> None:
    assert create_version(acme).status == 201
    again = create_version(acme)
    assert again.status == 422 and "already been taken" in again.error["detail"]


# ----- platforms (TestRegistryProviderPlatforms*) -------------------------------------------


def test_platform_create_read_list_delete(acme: Api, provider: dict[str, Any]) -> None:
    version = create_version(acme).data
    reply = acme.post(f"{VERSIONS}/1.0.0/platforms", platform_body())
    assert reply.status == 201, reply.json
    platform = reply.data
    assert platform["type"] == "registry-provider-platforms"
    assert platform["id"].startswith("provpltfrm-")
    attrs = platform["attributes"]
    assert (attrs["os"], attrs["arch"], attrs["shasum"]) == ("linux", "amd64", "ab" * 32)
    assert attrs["filename"] == "terraform-provider-mycloud_1.0.0_linux_amd64.zip"
    assert attrs["provider-binary-uploaded"] is False
    assert platform["relationships"]["registry-provider-version"]["data"]["id"] == version["id"]
    assert set(platform["links"]) == {"provider-binary-upload"}

    # go-tfe's own values: any os and arch, a shasum and filename without a shape.
    odd = platform_body("foo", "scrimbles", shasum="shasum", filename="filename")
    assert acme.post(f"{VERSIONS}/1.0.0/platforms", odd).status == 201

    read = acme.get(f"{VERSIONS}/1.0.0/platforms/linux/amd64")
    assert read.status == 200 and read.data["id"] == platform["id"]
    assert acme.get(f"{VERSIONS}/1.0.0/platforms/DoesNotExist/amd64").status == 404
    assert acme.get(f"{VERSIONS}/1.0.0/platforms/linux/DoesNotExist").status == 404
    listed = acme.get(f"{VERSIONS}/1.0.0/platforms?page[size]=1")
    assert listed.json["meta"]["pagination"]["total-count"] == 2 and len(listed.data) == 1
    shown = acme.get(f"{VERSIONS}/1.0.0").data["relationships"]["platforms"]["data"]
    assert len(shown) == 2

    assert acme.delete(f"{VERSIONS}/1.0.0/platforms/linux/amd64").status == 204
    assert acme.delete(f"{VERSIONS}/1.0.0/platforms/nope/no").status == 404
    assert acme.get(f"{VERSIONS}/1.0.0/platforms").json["meta"]["pagination"]["total-count"] == 1


@pytest.mark.parametrize(
    ("attributes", "pointer"),
    [
        ({"os": ""}, "/data/attributes/os"),
        ({"arch": ""}, "/data/attributes/arch"),
        ({"shasum": ""}, "/data/attributes/shasum"),
        ({"filename": ""}, "/data/attributes/filename"),
        ({"os": "linux_x"}, "/data/attributes/os"),
        ({"filename": "../evil.zip"}, "/data/attributes/filename"),
        ({"filename": "a/b.zip"}, "/data/attributes/filename"),
    ],
)
def test_bad_platform_bodies_are_422s(
    acme: Api, provider: dict[str, Any], attributes: dict[str, Any], pointer: str
) -> None:
    assert create_version(acme).status == 201
    body = platform_body()
    body["data"]["attributes"].update(attributes)
    reply = acme.post(f"{VERSIONS}/1.0.0/platforms", body)
    assert reply.status == 422, reply.json
    assert reply.error["source"]["pointer"] == pointer
    assert acme.get(f"{VERSIONS}/1.0.0/platforms").data == []


def test_platform_type_and_duplicates(acme: Api, provider: dict[str, Any]) -> None:
    assert create_version(acme).status == 201
    wrong = platform_body()
    wrong["data"]["type"] = "registry-providers"
    assert acme.post(f"{VERSIONS}/1.0.0/platforms", wrong).status == 422
    untyped = platform_body()
    del untyped["data"]["type"]  # go-tfe sends none
    assert acme.post(f"{VERSIONS}/1.0.0/platforms", untyped).status == 201
    again = acme.post(f"{VERSIONS}/1.0.0/platforms", platform_body())
    assert again.status == 422 and "already been taken" in again.error["detail"]
    assert acme.post(f"{VERSIONS}/9.9.9/platforms", platform_body()).status == 404


def test_deleting_a_provider_removes_versions_platforms_and_files(
    acme: Api, provider: dict[str, Any]
) -> None:
    links = create_version(acme).data["links"]
    platform = acme.post(f"{VERSIONS}/1.0.0/platforms", platform_body()).data
    s3, bucket = client("s3"), get_settings().bucket
    uploads = [
        links["shasums-upload"],
        links["shasums-sig-upload"],
        platform["links"]["provider-binary-upload"],
    ]
    keys = [_key_of(url) for url in uploads]
    for key in keys:
        s3.put_object(Bucket=bucket, Key=key, Body=b"x")
    assert acme.delete(PROVIDER).status == 204
    left = s3.list_objects_v2(Bucket=bucket, Prefix="providers/").get("Contents", [])
    assert left == []
    # A provider of the same name starts empty.
    acme.post(
        ORG,
        doc("registry-providers", name="mycloud", namespace="acme", **{"registry-name": "private"}),
    )
    assert acme.get(VERSIONS).data == []


# ----- uploads: the S3 events turn the flags true -------------------------------------------


def _arrive(key: str) -> None:
    """The object arrives and its S3 event goes through the ingest function's dispatch."""
    import json

    from chalicelib.entry.ingest import handle_body

    client("s3").put_object(Bucket=get_settings().bucket, Key=key, Body=b"content")
    record = {
        "eventSource": "aws:s3",
        "eventName": "ObjectCreated:Put",
        "s3": {"object": {"key": key}},
    }
    handle_body(json.dumps({"Records": [record]}))


def test_uploads_turn_the_flags_true_and_give_download_links(
    acme: Api, provider: dict[str, Any]
) -> None:
    links = create_version(acme).data["links"]
    platform = acme.post(f"{VERSIONS}/1.0.0/platforms", platform_body()).data
    _, reader_token = make_team(acme, "acme", "readers")

    _arrive(_key_of(links["shasums-upload"]))
    version = acme.get(f"{VERSIONS}/1.0.0").data
    assert version["attributes"]["shasums-uploaded"] is True
    assert version["attributes"]["shasums-sig-uploaded"] is False
    assert set(version["links"]) == {"shasums-download", "shasums-sig-upload"}

    _arrive(_key_of(links["shasums-sig-upload"]))
    _arrive(_key_of(platform["links"]["provider-binary-upload"]))
    version = acme.as_(reader_token).get(f"{VERSIONS}/1.0.0").data
    assert version["attributes"]["shasums-sig-uploaded"] is True
    assert set(version["links"]) == {"shasums-download", "shasums-sig-download"}
    read = acme.get(f"{VERSIONS}/1.0.0/platforms/linux/amd64").data
    assert read["attributes"]["provider-binary-uploaded"] is True
    assert set(read["links"]) == {"provider-binary-download"}


def test_upload_events_of_unknown_keys_change_nothing(acme: Api, provider: dict[str, Any]) -> None:
    from chalicelib.providers.store import ProviderVersionModel

    links = create_version(acme).data["links"]
    shasums = _key_of(links["shasums-upload"])
    prefix = shasums.rsplit("/", 2)[0]
    for key in (
        f"{prefix}/9.9.9/SHA256SUMS",  # no such version
        f"{prefix}/1.0.0/other-file",
        f"{prefix}/1.0.0/linux_amd64/not-the-filename.zip",
        "providers/prov-unknown/1.0.0/SHA256SUMS",
    ):
        _arrive(key)
    attrs = acme.get(f"{VERSIONS}/1.0.0").data["attributes"]
    assert attrs["shasums-uploaded"] is False and attrs["shasums-sig-uploaded"] is False

    # A version deleted before its event is handled is not brought back by it.
    assert acme.delete(f"{VERSIONS}/1.0.0").status == 204
    _arrive(shasums)
    assert list(ProviderVersionModel.scan()) == []


def test_a_user_publishes_through_a_manage_providers_team(
    acme: Api, provider: dict[str, Any]
) -> None:
    """The user path of the permission: on a team with manage-providers a user publishes;
    on a team with only manage-modules the same user reads."""
    from tests.accounts.helpers import add_member, new_user

    publishers, _ = make_team(acme, "acme", "publishers", manage_providers=True)
    modules, _ = make_team(acme, "acme", "module-people", manage_modules=True)
    _, ann = new_user(acme, "ann")
    _, bob = new_user(acme, "bob")
    assert add_member(acme, publishers, "ann").status == 204
    assert add_member(acme, modules, "bob").status == 204

    assert create_version(bob).status == 404
    assert bob.get(PROVIDER).data["attributes"]["permissions"]["can-delete"] is False
    assert create_version(ann).status == 201
    assert ann.get(PROVIDER).data["attributes"]["permissions"]["can-delete"] is True


def test_manage_providers_round_trips_through_the_team_api_and_decides(
    acme: Api, provider: dict[str, Any], rsa_key: tuple[str, str]
) -> None:
    """``organization-access.manage-providers`` as go-tfe's OrganizationAccess sends it: set
    on create, rendered on show, cleared on update; the team's token publishes exactly while
    it is set. An organization token reads but never publishes (as for modules)."""
    created = acme.post(
        "/api/v2/organizations/acme/teams",
        doc("teams", name="ci", **{"organization-access": {"manage-providers": True}}),
    )
    assert created.status == 201, created.json
    team_id = created.data["id"]
    assert created.data["attributes"]["organization-access"]["manage-providers"] is True
    shown = acme.get(f"/api/v2/teams/{team_id}").data["attributes"]["organization-access"]
    assert shown["manage-providers"] is True and shown["manage-modules"] is False
    token = acme.post(f"/api/v2/teams/{team_id}/authentication-token").data["attributes"]["token"]
    team = acme.as_(token)
    assert team.get(PROVIDER).data["attributes"]["permissions"]["can-delete"] is True
    assert create_version(team, "1.0.0").status == 201

    patched = acme.patch(
        f"/api/v2/teams/{team_id}",
        doc("teams", **{"organization-access": {"manage-providers": False}}),
    )
    assert patched.status == 200, patched.json
    assert patched.data["attributes"]["organization-access"]["manage-providers"] is False
    shown = acme.get(f"/api/v2/teams/{team_id}").data["attributes"]["organization-access"]
    assert shown["manage-providers"] is False
    assert team.get(PROVIDER).data["attributes"]["permissions"]["can-delete"] is False
    assert create_version(team, "2.0.0").status == 404
    assert team.delete(PROVIDER).status == 404

    org_token = acme.post("/api/v2/organizations/acme/authentication-token")
    assert org_token.status == 201, org_token.json
    organization = acme.as_(org_token.data["attributes"]["token"])
    assert organization.get(PROVIDER).status == 200
    assert organization.get(f"{VERSIONS}/1.0.0").data["links"] == {}
    assert create_version(organization, "3.0.0").status == 404
    armor, _ = rsa_key
    body = doc("gpg-keys", namespace="acme", **{"ascii-armor": armor})
    assert organization.post(KEYS, body).status == 404
    assert organization.delete(PROVIDER).status == 404
    assert [v["attributes"]["version"] for v in acme.get(VERSIONS).data] == ["1.0.0"]


# ----- the organization's delete cascades ---------------------------------------------------


def test_deleting_the_organization_deletes_its_providers_keys_and_files(
    acme: Api, provider: dict[str, Any], rsa_key: tuple[str, str]
) -> None:
    """Providers, versions, platforms, GPG keys and every uploaded file go with their
    organization; another organization's stay; a new organization of the same name sees
    nothing of the old one's."""
    from chalicelib.providers.store import (
        GpgKeyModel,
        ProviderModel,
        ProviderPlatformModel,
        ProviderVersionModel,
    )

    armor, _ = rsa_key
    key_body = doc("gpg-keys", namespace="acme", **{"ascii-armor": armor})
    assert acme.post(KEYS, key_body).status == 201
    uploaded: list[str] = []
    for version in ("1.0.0", "1.1.0"):
        links = create_version(acme, version).data["links"]
        uploaded += [_key_of(links["shasums-upload"]), _key_of(links["shasums-sig-upload"])]
        for os_ in ("linux", "darwin"):
            created = acme.post(f"{VERSIONS}/{version}/platforms", platform_body(os_))
            assert created.status == 201, created.json
            uploaded.append(_key_of(created.data["links"]["provider-binary-upload"]))
    for key in uploaded:
        _arrive(key)
    # Another organization's provider and key, which must stay.
    make_org(acme, "other")
    other = acme.post(
        "/api/v2/organizations/other/registry-providers",
        doc(
            "registry-providers", name="mycloud", namespace="other", **{"registry-name": "private"}
        ),
    )
    assert other.status == 201
    assert (
        acme.post(KEYS, doc("gpg-keys", namespace="other", **{"ascii-armor": armor})).status == 201
    )
    other_file = _key_of(
        acme.post(
            "/api/v2/organizations/other/registry-providers/private/other/mycloud/versions",
            doc("registry-provider-versions", version="1.0.0", **{"key-id": "ab"}),
        ).data["links"]["shasums-upload"]
    )
    _arrive(other_file)

    assert acme.delete("/api/v2/organizations/acme").status == 204

    s3 = client("s3")
    bucket = get_settings().bucket
    left = [o["Key"] for o in s3.list_objects_v2(Bucket=bucket).get("Contents", [])]
    assert not set(uploaded) & set(left) and other_file in left
    assert [p.organization for p in ProviderModel.scan()] == ["other"]
    assert [k.namespace for k in GpgKeyModel.scan()] == ["other"]
    assert [v.provider_id for v in ProviderVersionModel.scan()] == [other.data["id"]]
    assert list(ProviderPlatformModel.scan()) == []
    assert acme.get(f"/api/v2/registry-providers/{provider['id']}").status == 404

    make_org(acme, "acme")
    assert acme.get(ORG).data == []
    assert acme.get(PROVIDER).status == 404
    assert acme.get(f"{KEYS}?filter[namespace]=acme").data == []
    assert (
        acme.post(
            ORG,
            doc(
                "registry-providers",
                name="mycloud",
                namespace="acme",
                **{"registry-name": "private"},
            ),
        ).status
        == 201
    )
    assert acme.get(VERSIONS).data == []


# ----- tag bindings (go-tfe's RegistryProviders.Update / ListTagBindings, beta) -------------


def provider_bindings_doc(bindings: Any) -> dict[str, Any]:
    """go-tfe's ``RegistryProviderUpdateOptions``: no primary type, the bindings a
    relationship (``None``: the relationship left out)."""
    data: dict[str, Any] = {"type": ""}
    if bindings is not None:
        items = [{"type": "tag-bindings", "attributes": b} for b in bindings]
        data["relationships"] = {"tag-bindings": {"data": items}}
    return {"data": data}


def provider_bindings(api: Api, provider_id: str) -> list[tuple[str, str]]:
    reply = api.get(f"/api/v2/registry-providers/{provider_id}/tag-bindings")
    assert reply.status == 200, reply.json
    assert all(b["type"] == "tag-bindings" and b["id"].startswith("tb-") for b in reply.data)
    return [(b["attributes"]["key"], b["attributes"]["value"]) for b in reply.data]


def test_provider_tag_bindings_are_replaced_by_the_patch_and_listed(
    acme: Api, provider: dict[str, Any]
) -> None:
    link = f"/api/v2/registry-providers/{provider['id']}/tag-bindings"
    assert provider["relationships"]["tag-bindings"] == {"links": {"related": link}}
    assert provider_bindings(acme, provider["id"]) == []

    updated = acme.patch(
        PROVIDER, provider_bindings_doc([{"key": "team", "value": "net"}, {"key": "tier"}])
    )
    assert updated.status == 200, updated.json
    assert updated.data["id"] == provider["id"]
    assert updated.data["relationships"]["tag-bindings"] == {"links": {"related": link}}
    assert provider_bindings(acme, provider["id"]) == [("team", "net"), ("tier", "")]
    team_id = acme.get(link).data[0]["id"]
    # Read by id (go-tfe's RegistryProviderID{ID}) shows the same relationship.
    by_id = acme.get(f"/api/v2/registry-providers/{provider['id']}").data
    assert by_id["relationships"]["tag-bindings"] == {"links": {"related": link}}

    # Left out: unchanged. Replaced: a kept key keeps its id.
    assert acme.patch(PROVIDER, provider_bindings_doc(None)).status == 200
    assert provider_bindings(acme, provider["id"]) == [("team", "net"), ("tier", "")]
    acme.patch(PROVIDER, provider_bindings_doc([{"key": "team", "value": "platform"}]))
    assert provider_bindings(acme, provider["id"]) == [("team", "platform")]
    assert acme.get(link).data[0]["id"] == team_id

    # The bounds modules have: a 422 with a pointer, nothing changed.
    pointer = "/data/relationships/tag-bindings/data"
    too_many = [{"key": f"k{i}"} for i in range(51)]
    for bad, where in (
        ([{"key": ""}], f"{pointer}/0/attributes/key"),
        ([{"key": "a"}, {"key": "a"}], f"{pointer}/1/attributes/key"),
        ([{"key": "hc:x"}], f"{pointer}/0/attributes/key"),
        ([{"key": "k" * 129}], f"{pointer}/0/attributes/key"),
        ([{"key": "k", "value": "v" * 257}], f"{pointer}/0/attributes/value"),
        (too_many, pointer),
    ):
        reply = acme.patch(PROVIDER, provider_bindings_doc(bad))
        assert reply.status == 422 and reply.error["source"]["pointer"] == where, reply.json
    malformed = {"data": {"type": "", "relationships": {"tag-bindings": {"data": 5}}}}
    assert acme.patch(PROVIDER, malformed).status == 422
    wrong_type = {"data": {"type": "workspaces", "relationships": {"tag-bindings": {"data": []}}}}
    assert acme.patch(PROVIDER, wrong_type).status == 422
    assert provider_bindings(acme, provider["id"]) == [("team", "platform")]

    # [] clears; 50 fit.
    assert acme.patch(PROVIDER, provider_bindings_doc([])).status == 200
    assert provider_bindings(acme, provider["id"]) == []
    assert acme.patch(PROVIDER, provider_bindings_doc(too_many[:50])).status == 200
    assert len(provider_bindings(acme, provider["id"])) == 50


def test_provider_tag_bindings_permissions(acme: Api, provider: dict[str, Any]) -> None:
    _, publisher = make_team(acme, "acme", "publishers", manage_providers=True)
    _, reader = make_team(acme, "acme", "readers", manage_modules=True)
    make_org(acme, "other")
    _, outsider = make_team(acme, "other", "owners-of-other", manage_providers=True)
    acme.patch(PROVIDER, provider_bindings_doc([{"key": "team", "value": "net"}]))
    link = f"/api/v2/registry-providers/{provider['id']}/tag-bindings"

    assert provider_bindings(acme.as_(reader), provider["id"]) == [("team", "net")]
    for token in (reader, outsider):
        assert acme.as_(token).patch(PROVIDER, provider_bindings_doc([])).status == 404
    assert acme.as_(outsider).get(link).status == 404
    assert acme.get("/api/v2/registry-providers/prov-unknown/tag-bindings").status == 404
    assert acme.patch(f"{ORG}/private/acme/nothing", provider_bindings_doc([])).status == 404
    assert provider_bindings(acme, provider["id"]) == [("team", "net")]
    updated = acme.as_(publisher).patch(PROVIDER, provider_bindings_doc([{"key": "x"}]))
    assert updated.status == 200, updated.json
    assert provider_bindings(acme, provider["id"]) == [("x", "")]


# ----- empty lists (go-tfe's "without providers", "without versions", "without platforms") --


def test_empty_lists_have_no_pages(acme: Api, provider: dict[str, Any]) -> None:
    """TFE answers ``total-pages: 0`` for an empty list (go-tfe asserts it on the provider,
    version and platform lists), on every list the shared pagination serves; a list with
    items keeps at least one page."""
    make_org(acme, "empty")
    assert create_version(acme, "1.0.0").status == 201
    empty_provider = acme.post(
        "/api/v2/organizations/empty/registry-providers",
        doc("registry-providers", name="bare", namespace="empty", **{"registry-name": "private"}),
    )
    assert empty_provider.status == 201
    for path in (
        "/api/v2/organizations/empty/registry-providers?filter[registry_name]=public",
        "/api/v2/organizations/empty/registry-providers/private/empty/bare/versions",
        f"{VERSIONS}/1.0.0/platforms",
        f"{KEYS}?filter[namespace]=empty",
        "/api/v2/organizations/empty/registry-modules",
    ):
        reply = acme.get(path)
        assert reply.status == 200 and reply.data == [], (path, reply.json)
        pagination = reply.json["meta"]["pagination"]
        assert pagination["total-count"] == 0 and pagination["total-pages"] == 0, path
        assert pagination["current-page"] == 1 and pagination["next-page"] is None, path
        assert pagination["prev-page"] is None, path
    one = acme.get(ORG).json["meta"]["pagination"]
    assert one["total-count"] == 1 and one["total-pages"] == 1 and one["next-page"] is None
