"""A provider version's signed provenance: made when its SHA256SUMS signature verifies, naming
the SHA256SUMS terraform downloads (which names each platform zip), signed with the served
key; readers of the organization only; none for a version that failed."""

from __future__ import annotations

import base64
import hashlib
import json

import pytest
import requests

from chalicelib.artifacts import objects
from chalicelib.providers import keys, store
from chalicelib.trust import provenance
from tests.conftest import Api, make_org, make_team
from tests.providers.helpers import VERSIONS, provider_org, publish
from tests.support.provider_files import SigningKey, new_signing_key, shasums

V1 = "/api/registry/v1/providers"


@pytest.fixture(scope="module")
def signer() -> SigningKey:
    return new_signing_key()


def _served_keys(api: Api) -> dict[str, str]:
    reply = api.as_(None).get("/api/registry/v1/signing-keys")
    return {key["keyid"]: key["pem"] for key in reply.json["keys"]}


def test_a_verified_version_has_provenance_of_its_downloaded_shasums(
    api: Api, signer: SigningKey
) -> None:
    provider_org(api, signer)
    publish(api, signer)
    reply = api.get(f"{VERSIONS}/1.0.0/provenance")
    assert reply.status == 200, reply.json
    assert reply.headers["Content-Type"] == provenance.MEDIA_TYPE
    statement = provenance.verify(reply.json, _served_keys(api))

    download = api.get(f"{V1}/acme/mycloud/1.0.0/download/linux/amd64").json
    sums = requests.get(download["shasums_url"], timeout=10).content
    (subject,) = statement["subject"]
    assert subject["digest"]["sha256"] == hashlib.sha256(sums).hexdigest()
    assert subject["name"] == "terraform-provider-mycloud_1.0.0_SHA256SUMS"
    definition = statement["predicate"]["buildDefinition"]
    assert definition["externalParameters"]["provider"] == "registry.test/acme/mycloud"
    assert definition["externalParameters"]["uploaded-by"]["type"] == "user"
    assert definition["internalParameters"]["gpg-key-id"] == signer.key_id.upper()

    changed = dict(statement, subject=[{"name": "x", "digest": {"sha256": "0" * 64}}])
    forged = dict(reply.json, payload=base64.b64encode(json.dumps(changed).encode()).decode())
    with pytest.raises(provenance.InvalidEnvelope):
        provenance.verify(forged, _served_keys(api))

    # Deleting the version deletes its provenance with its files.
    (provider,) = store.providers_of("acme")
    key = keys.provenance_key(provider.id, "1.0.0")
    assert objects.exists(key)
    assert api.delete(f"{VERSIONS}/1.0.0").status == 204
    assert not objects.exists(key)


def test_a_failed_version_has_none_and_outsiders_see_nothing(api: Api, signer: SigningKey) -> None:
    provider_org(api, signer)
    sums = shasums({"terraform-provider-mycloud_1.0.0_linux_amd64.zip": b"zip"})
    publish(api, signer, sums=sums, signature=new_signing_key().sign(sums))  # wrong signer
    reply = api.get(f"{VERSIONS}/1.0.0/provenance")
    assert reply.status == 404
    assert "has not been made yet" in reply.error["detail"]
    make_org(api, "other")
    _, outsider = make_team(api, "other", "outsiders")
    assert api.as_(outsider).get(f"{VERSIONS}/1.0.0/provenance").status == 404
    assert api.as_(None).get(f"{VERSIONS}/1.0.0/provenance").status == 401
