"""What the provider tests build on: an organization with a signing key, versions, platforms,
and uploads that arrive through the ingest function's dispatch of S3 events."""

from __future__ import annotations

import json
from urllib.parse import quote_plus

from chalicelib.core.data.aws import client
from chalicelib.core.settings import get_settings
from tests.conftest import Api, doc, make_org
from tests.support.provider_files import SigningKey, provider_zip, sha256, shasums

ORG = "/api/v2/organizations/acme/registry-providers"


PROVIDER = f"{ORG}/private/acme/mycloud"


VERSIONS = f"{PROVIDER}/versions"


def _key_of(url: str) -> str:
    from urllib.parse import unquote, urlsplit

    path = unquote(urlsplit(url).path).lstrip("/")
    bucket = get_settings().bucket
    return path[len(bucket) + 1 :] if path.startswith(bucket + "/") else path


KEYS = "/api/registry/private/v2/gpg-keys"


FILENAME = "terraform-provider-mycloud_1.0.0_linux_amd64.zip"


GOOD_ZIP = provider_zip("mycloud", "1.0.0")


def provider_org(api: Api, signer: SigningKey) -> Api:
    """The organization acme with ``signer``'s key and the private provider mycloud."""
    make_org(api, "acme")
    reply = api.post(KEYS, doc("gpg-keys", namespace="acme", **{"ascii-armor": signer.armor}))
    assert reply.status == 201, reply.json
    reply = api.post(
        ORG,
        doc("registry-providers", name="mycloud", namespace="acme", **{"registry-name": "private"}),
    )
    assert reply.status == 201, reply.json
    return api


def arrive(url: str, body: bytes) -> None:
    """The publisher's PUT to the upload link lands, and its S3 event is handled."""
    from chalicelib.entry.ingest import handle_body

    key = _key_of(url)
    client("s3").put_object(Bucket=get_settings().bucket, Key=key, Body=body)
    record = {
        "eventSource": "aws:s3",
        "eventName": "ObjectCreated:Put",
        # URL-encoded, as S3 writes the key in its event ("providers%2F...").
        "s3": {"object": {"key": quote_plus(key)}},
    }
    handle_body(json.dumps({"Records": [record]}))


def new_version(api: Api, key_id: str, version: str = "1.0.0") -> dict[str, str]:
    body = {
        "data": {
            "type": "registry-provider-versions",
            "attributes": {"version": version, "key-id": key_id.lower(), "protocols": ["5.0"]},
        }
    }
    reply = api.post(VERSIONS, body)
    assert reply.status == 201, reply.json
    return reply.data["links"]


def new_platform(api: Api, shasum: str, filename: str = FILENAME) -> str:
    attributes = {"os": "linux", "arch": "amd64", "shasum": shasum, "filename": filename}
    body = {"data": {"type": "registry-provider-version-platforms", "attributes": attributes}}
    reply = api.post(f"{VERSIONS}/1.0.0/platforms", body)
    assert reply.status == 201, reply.json
    return reply.data["links"]["provider-binary-upload"]


def publish(
    api: Api,
    signer: SigningKey,
    *,
    archive: bytes = GOOD_ZIP,
    shasum: str | None = None,
    sums: bytes | None = None,
    signature: bytes | None = None,
    binary_first: bool = False,
) -> None:
    """Version 1.0.0 with one platform (linux/amd64), its files uploaded; by default all
    consistent and signed by ``signer``."""
    links = new_version(api, signer.key_id)
    sums = shasums({FILENAME: archive}) if sums is None else sums
    upload = new_platform(api, shasum or sha256(archive))
    if binary_first:
        arrive(upload, archive)
    arrive(links["shasums-upload"], sums)
    arrive(links["shasums-sig-upload"], signer.sign(sums) if signature is None else signature)
    if not binary_first:
        arrive(upload, archive)
