"""A module version's SBOM and signed provenance: made after ingest (``attest``), read by the
module's readers only, and verified offline as a consumer would: the envelope's signature
with ``cryptography`` against the key ``/api/registry/v1/signing-keys`` serves, the subject
against the SHA-256 of the archive downloaded through the registry protocol."""

from __future__ import annotations

import base64
import hashlib
import json
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import requests
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.serialization import load_pem_public_key
from cyclonedx.schema import SchemaVersion
from cyclonedx.validation.json import JsonStrictValidator

from chalicelib.modules import store
from chalicelib.modules.scanning.attest import attest
from chalicelib.modules.store import ModuleVersionModel
from tests.conftest import Api, make_org, make_team
from tests.modules.helpers import ORG, V1, create_module, create_version, upload_and_ingest
from tests.modules.publishing import NET, connect, drain, publish
from tests.support.vcs_git_server import GitServer, serve

FILES = {
    "main.tf": """
terraform {
  required_version = ">= 1.5"
  required_providers {
    aws = { source = "hashicorp/aws", version = ">= 5.0" }
  }
}
module "labels" {
  source  = "cloudposse/label/null"
  version = "0.25.0"
}
resource "aws_s3_bucket" "b" {}
"""
}
VERSION_PATH = f"{ORG}/private/acme/vpc/aws/versions/1.0.0"


@pytest.fixture
def git_server() -> Iterator[tuple[GitServer, dict[str, str]]]:
    yield from serve()


def _ingested(api: Api) -> ModuleVersionModel:
    make_org(api)
    create_module(api)
    reply = create_version(api, "1.0.0")
    assert reply.status == 201, reply.json
    assert upload_and_ingest(reply, FILES) == "ok"
    (module,) = store.modules_of("acme")
    (version,) = store.versions_of(module.id)
    return version


def _attested(api: Api) -> ModuleVersionModel:
    from chalicelib.artifacts import objects

    version = _ingested(api)
    assert version.metadata_key is not None
    attest(version, objects.get_metadata(version.metadata_key))
    return version


def _downloaded_sha256(api: Api) -> str:
    """What terraform does: the protocol's download, then the archive's presigned URL."""
    reply = api.get(f"{V1}/acme/vpc/aws/1.0.0/download")
    assert reply.status == 204
    archive = requests.get(reply.headers["X-Terraform-Get"], timeout=10)
    assert archive.status_code == 200
    return hashlib.sha256(archive.content).hexdigest()


def _served_keys(api: Api) -> dict[str, str]:
    reply = api.as_(None).get("/api/registry/v1/signing-keys")  # no token needed
    assert reply.status == 200
    return {key["keyid"]: key["pem"] for key in reply.json["keys"]}


def _verify_offline(envelope: dict, keys: dict[str, str]) -> dict:
    """DSSE verification with nothing but ``cryptography`` (what docs/provenance.md shows)."""
    payload = base64.b64decode(envelope["payload"])
    kind = envelope["payloadType"].encode()
    signed = b"DSSEv1 %d %s %d %s" % (len(kind), kind, len(payload), payload)
    (signature,) = envelope["signatures"]
    key = load_pem_public_key(keys[signature["keyid"]].encode())
    assert isinstance(key, ec.EllipticCurvePublicKey)
    key.verify(base64.b64decode(signature["sig"]), signed, ec.ECDSA(hashes.SHA256()))
    return json.loads(payload)


def test_provenance_verifies_offline_against_the_served_key_and_the_downloaded_archive(
    api: Api,
) -> None:
    version = _attested(api)
    reply = api.get(f"{VERSION_PATH}/provenance")
    assert reply.status == 200, reply.json
    assert reply.headers["Content-Type"] == "application/vnd.dsse.envelope.v1+json"
    envelope = reply.json
    statement = _verify_offline(envelope, _served_keys(api))

    assert statement["_type"] == "https://in-toto.io/Statement/v1"
    assert statement["predicateType"] == "https://slsa.dev/provenance/v1"
    (subject,) = statement["subject"]
    assert subject["digest"]["sha256"] == _downloaded_sha256(api) == version.sha256
    external = statement["predicate"]["buildDefinition"]["externalParameters"]
    assert external["module"] == "registry.test/acme/vpc/aws"
    assert external["version"] == "1.0.0"
    assert external["source"] == "upload"
    # The version records who created it (the admin's user token here).
    assert version.created_by is not None and version.created_by["type"] == "user"
    assert external["uploaded-by"] == version.created_by
    assert statement["predicate"]["runDetails"]["builder"]["id"] == "http://registry.test"

    # A changed payload (another archive's digest) fails verification.
    statement["subject"][0]["digest"]["sha256"] = "0" * 64
    forged = dict(envelope, payload=base64.b64encode(json.dumps(statement).encode()).decode())
    with pytest.raises(InvalidSignature):
        _verify_offline(forged, _served_keys(api))


def test_sbom_is_served_valid_with_the_archive_digest(api: Api) -> None:
    version = _attested(api)
    reply = api.get(f"{VERSION_PATH}/sbom")
    assert reply.status == 200, reply.json
    assert reply.headers["Content-Type"] == "application/vnd.cyclonedx+json"
    text = reply.body.decode()
    assert JsonStrictValidator(SchemaVersion.V1_6).validate_str(text) is None
    bom = json.loads(text)
    module = bom["metadata"]["component"]
    assert module["hashes"] == [{"alg": "SHA-256", "content": version.sha256}]
    names = {c["name"] for c in bom["components"]}
    assert names == {"registry.terraform.io/hashicorp/aws", "cloudposse/label/null", "terraform"}


def test_not_attested_yet_is_a_404_that_says_so(api: Api) -> None:
    _ingested(api)
    for what in ("sbom", "provenance"):
        reply = api.get(f"{VERSION_PATH}/{what}")
        assert reply.status == 404
        assert "has not been made yet" in reply.error["detail"]


def test_only_readers_of_the_module_read_its_evidence(api: Api) -> None:
    _attested(api)
    make_org(api, "other")
    _, outsider = make_team(api, "other", "outsiders")
    _, reader = make_team(api, "acme", "readers")
    for what in ("sbom", "provenance"):
        path = f"{VERSION_PATH}/{what}"
        assert api.as_(reader).get(path).status == 200
        refused = api.as_(outsider).get(path)
        # As if the module did not exist: the same 404 as the module's own.
        assert refused.status == 404
        assert refused.json == api.as_(outsider).get(f"{ORG}/private/acme/vpc/aws").json
        assert api.as_(None).get(path).status == 401
        assert api.get(f"{ORG}/private/acme/vpc/aws/versions/9.9.9/{what}").status == 404


def _documented_script() -> str:
    """The Python block of docs/provenance.md, verbatim."""
    text = (Path(__file__).resolve().parents[3] / "docs" / "provenance.md").read_text()
    (block,) = re.findall(r"```python\n(.*?)```", text, re.DOTALL)
    return block


def _run(script: str, where: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", script], cwd=where, capture_output=True, text=True, timeout=60
    )


def test_the_documented_script_verifies_and_refuses(api: Api, tmp_path: Path) -> None:
    _attested(api)
    envelope = api.get(f"{VERSION_PATH}/provenance").json
    (tmp_path / "provenance.json").write_text(json.dumps(envelope))
    keys = api.as_(None).get("/api/registry/v1/signing-keys").body
    (tmp_path / "signing-keys.json").write_bytes(keys)
    location = api.get(f"{V1}/acme/vpc/aws/1.0.0/download").headers["X-Terraform-Get"]
    archive = requests.get(location, timeout=10).content
    (tmp_path / "module.tar.gz").write_bytes(archive)
    script = _documented_script()

    done = _run(script, tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "verified: registry.test/acme/vpc/aws 1.0.0 (upload)"

    statement = json.loads(base64.b64decode(envelope["payload"]))
    statement["predicate"]["buildDefinition"]["externalParameters"]["uploaded-by"]["id"] = "x"
    changed = dict(envelope, payload=base64.b64encode(json.dumps(statement).encode()).decode())
    (tmp_path / "provenance.json").write_text(json.dumps(changed))
    refused = _run(script, tmp_path)
    assert refused.returncode != 0
    assert "FAILED: no signature verifies" in refused.stderr

    (tmp_path / "provenance.json").write_text(json.dumps(envelope))
    (tmp_path / "module.tar.gz").write_bytes(archive + b"\0")
    refused = _run(script, tmp_path)
    assert refused.returncode != 0
    assert "FAILED: the archive is not the one the provenance names" in refused.stderr


def test_each_function_serves_its_part(api: Api, tmp_path_factory: pytest.TempPathFactory) -> None:
    """Through the functions' own entry apps, as deployed: the registry function serves the
    envelope, the protocol function the keys (no token) and the archive's link."""
    from chalice.test import Client

    from chalicelib.entry.api.protocol import app as protocol_app
    from chalicelib.entry.api.registry import app as registry_app

    version = _attested(api)
    project = str(tmp_path_factory.mktemp("entry"))
    with Client(registry_app, project_dir=project) as registry:
        envelope = Api(registry, api.token).get(f"{VERSION_PATH}/provenance").json
    with Client(protocol_app, project_dir=project) as protocol:
        keys = _served_keys(Api(protocol, None))
        assert _downloaded_sha256(Api(protocol, api.token)) == version.sha256
    statement = _verify_offline(envelope, keys)
    assert statement["subject"][0]["digest"]["sha256"] == version.sha256


def test_a_vcs_version_names_its_repository_tag_and_commit(
    api: Api, git_server: tuple[GitServer, dict[str, str]]
) -> None:
    from chalicelib.artifacts import objects

    server, shas = git_server
    make_org(api, "acme")
    assert publish(api, connect(api, server), "acme/terraform-aws-net").status == 201
    drain()
    module = store.find_module("acme", "private#acme#net#aws")
    assert module is not None
    version = next(v for v in store.versions_of(module.id) if v.version == "1.0.0")
    assert version.metadata_key is not None
    attest(version, objects.get_metadata(version.metadata_key))

    envelope = api.get(f"{NET}/versions/1.0.0/provenance").json
    statement = _verify_offline(envelope, _served_keys(api))
    definition = statement["predicate"]["buildDefinition"]
    repository = f"{server.url}/acme/terraform-aws-net"
    assert definition["externalParameters"] == {
        "module": "registry.test/acme/net/aws",
        "version": "1.0.0",
        "source": "vcs",
        "service-provider": "github_enterprise",
        "repository": repository,
        "tag": version.tag,
        "commit": shas["net-1.0.0"],
    }
    assert definition["resolvedDependencies"] == [
        {
            "uri": f"git+{repository}@refs/tags/{version.tag}",
            "digest": {"gitCommit": shas["net-1.0.0"]},
        }
    ]
    assert statement["subject"][0]["digest"]["sha256"] == version.sha256


@pytest.mark.parametrize("deleted", ["version", "module"])
def test_deleting_a_version_or_its_module_deletes_its_sbom_and_provenance(
    api: Api, deleted: str
) -> None:
    from chalicelib.artifacts import objects
    from chalicelib.modules.keys import UploadKey

    version = _attested(api)
    upload = UploadKey.parse(version.upload_key)
    assert upload is not None
    made = [upload.sbom_key, upload.provenance_key, version.archive_key]
    assert all(objects.exists(key) for key in made if key)
    module = f"{ORG}/private/acme/vpc/aws"
    path = f"{module}/1.0.0" if deleted == "version" else module
    assert api.delete(path).status == 204
    assert not any(objects.exists(key) for key in made if key)
