"""Renovate keeps working: unchanged, with a consumer's token, it finds a module's and a
provider's new versions through the registry's discovery and ``versions`` answers
(``tests.support.renovate``: the calls its datasources make), and deprecations change
nothing it reads (it ignores ``deprecation``: the registry's own notices reach people)."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

import pytest

from tests.conftest import Api, doc, make_team
from tests.modules.helpers import create_module, publish
from tests.providers.helpers import VERSIONS, arrive, new_version, provider_org
from tests.support.provider_files import (
    SigningKey,
    new_signing_key,
    provider_zip,
    sha256,
    shasums,
)
from tests.support.renovate import Renovate, join

REGISTRY = "https://registry.example.com"
MODULE = "/api/v2/organizations/acme/registry-modules/private/acme/vpc/aws"


def renovate(api: Api, token: str) -> Renovate:
    """Renovate against the whole app in process (its URLs' paths and queries)."""

    def get(url: str, bearer: str | None) -> tuple[int, Any]:
        parts = urlsplit(url)
        reply = api.as_(bearer).get(parts.path + (f"?{parts.query}" if parts.query else ""))
        return reply.status, reply.json

    return Renovate(get, REGISTRY, token)


def test_the_join_is_url_joins():
    assert join("/api/registry/v1/modules/", "acme/vpc/aws/versions") == (
        "/api/registry/v1/modules/acme/vpc/aws/versions"
    )
    assert join(REGISTRY, "/api/x/") == f"{REGISTRY}/api/x"


@pytest.fixture(scope="module")
def signer() -> SigningKey:
    return new_signing_key()


def test_renovate_finds_new_module_versions_deprecated_or_not(api: Api, signer: SigningKey):
    provider_org(api, signer)  # acme, with a private provider too
    create_module(api, "vpc", "aws")
    publish(api, "1.0.0")
    _, token = make_team(api, "acme", "app")
    bot = renovate(api, token)
    assert bot.module_releases("acme/vpc/aws") == ["1.0.0"]
    publish(api, "1.1.0")
    deprecation = {"deprecated-status": "Deprecated", "reason": "use 1.1", "link": "https://x.io"}
    reply = api.patch(f"{MODULE}/1.0.0", doc("module-versions", deprecation=deprecation))
    assert reply.status == 200, reply.json
    assert sorted(bot.module_releases("acme/vpc/aws") or []) == ["1.0.0", "1.1.0"]
    reply = api.patch(f"{MODULE}/1.0.0", doc("module-versions", revocation={"status": "Revoked"}))
    assert reply.status == 200, reply.json
    assert bot.module_releases("acme/vpc/aws") == ["1.1.0"]  # never offered once revoked
    # Without a token a private registry answers nothing.
    with pytest.raises(LookupError, match="401"):
        Renovate(bot.get, REGISTRY, None).module_releases("acme/vpc/aws")


def publish_provider(api: Api, signer: SigningKey, version: str) -> None:
    """A version of acme/mycloud with one platform (linux/amd64), signed and uploaded."""
    links = new_version(api, signer.key_id, version)
    filename = f"terraform-provider-mycloud_{version}_linux_amd64.zip"
    archive = provider_zip("mycloud", version)
    sums = shasums({filename: archive})
    attributes = {"os": "linux", "arch": "amd64", "shasum": sha256(archive), "filename": filename}
    reply = api.post(
        f"{VERSIONS}/{version}/platforms",
        {"data": {"type": "registry-provider-version-platforms", "attributes": attributes}},
    )
    assert reply.status == 201, reply.json
    arrive(links["shasums-upload"], sums)
    arrive(links["shasums-sig-upload"], signer.sign(sums))
    arrive(reply.data["links"]["provider-binary-upload"], archive)


def test_renovate_finds_new_provider_versions_and_their_builds(api: Api, signer: SigningKey):
    provider_org(api, signer)
    _, token = make_team(api, "acme", "app")
    bot = renovate(api, token)
    assert bot.provider_releases("acme/mycloud") == []
    publish_provider(api, signer, "1.0.0")
    assert bot.provider_releases("acme/mycloud") == ["1.0.0"]
    publish_provider(api, signer, "1.1.0")
    assert sorted(bot.provider_releases("acme/mycloud")) == ["1.0.0", "1.1.0"]
    (build,) = bot.provider_builds("acme/mycloud", "1.1.0")
    assert build["filename"] == "terraform-provider-mycloud_1.1.0_linux_amd64.zip"
    assert build["download_url"] and build["shasums_url"] and build["shasum"]
