"""The provider network mirror (``/api/registry/mirror/v1``) through HTTP (Chalice test
client + moto): private providers under any host name, the pull-through cache of public
providers from a local stand-in upstream (never the internet), its bounds and failures,
and seeding from ``terraform providers mirror``'s output."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from typing import Any
from urllib.parse import unquote, urlsplit

import pytest

from chalicelib.core.data.aws import client
from chalicelib.core.settings import get_settings
from chalicelib.providers.mirror import store
from tests.conftest import Api, doc, make_org, make_team, tar_gz
from tests.providers.helpers import arrive, provider_org
from tests.support.mirror_upstream import Listener, Upstream, filename, provider_zip
from tests.support.provider_files import expected_h1, new_signing_key, shasums
from tests.support.provider_files import provider_zip as mycloud_zip

MIRROR = "/api/registry/mirror/v1"
PUBLIC = f"{MIRROR}/registry.terraform.io/hashicorp/fake"
VERSIONS = {"1.0.0": ["linux_amd64", "darwin_arm64"], "1.1.0": ["linux_amd64"]}


def zh(archive: bytes) -> str:
    return "zh:" + hashlib.sha256(archive).hexdigest()


def key_of(url: str) -> str:
    path = unquote(urlsplit(url).path).lstrip("/")
    bucket = get_settings().bucket
    return path[len(bucket) + 1 :] if path.startswith(bucket + "/") else path


def fetch(url: str) -> bytes:
    """What a presigned link serves (moto's S3 behind it)."""
    assert "Signature" in url or "X-Amz-Signature" in url, "archive links must be presigned"
    return client("s3").get_object(Bucket=get_settings().bucket, Key=key_of(url))["Body"].read()


def mirror_objects() -> list[str]:
    found = client("s3").list_objects_v2(Bucket=get_settings().bucket, Prefix="mirror/")
    return [o["Key"] for o in found.get("Contents", [])]


def configure(monkeypatch: pytest.MonkeyPatch, **env: str) -> None:
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    get_settings.cache_clear()


@pytest.fixture
def upstream(monkeypatch: pytest.MonkeyPatch) -> Iterator[Upstream]:
    server = Upstream(VERSIONS)
    configure(
        monkeypatch,
        REGISTRY_MIRROR_UPSTREAM_URL=server.url,
        REGISTRY_MIRROR_TIMEOUT="10",  # never reached: the "slow" case sets its own
        # As deployed: nothing listed; the configured upstream is allowed as such.
        REGISTRY_OUTBOUND_ALLOW="",
    )
    yield server
    server.close()
    get_settings.cache_clear()


# ----- pull-through cache ---------------------------------------------------------------------


def test_first_request_fills_the_cache_and_the_second_calls_no_upstream(
    api: Api, upstream: Upstream
) -> None:
    index = api.get(f"{PUBLIC}/index.json")
    assert index.status == 200, index.json
    assert index.headers["Content-Type"] == "application/json"
    assert index.json == {"versions": {"1.1.0": {}, "1.0.0": {}}}
    assert upstream.requests == ["/v1/providers/hashicorp/fake/versions"]

    version = api.get(f"{PUBLIC}/1.0.0.json")
    assert version.status == 200, version.json
    archives = version.json["archives"]
    assert set(archives) == {"linux_amd64", "darwin_arm64"}
    for platform, archive in archives.items():
        served = fetch(archive["url"])
        assert served == upstream.zips[("1.0.0", platform)]
        assert archive["hashes"] == [expected_h1(served), zh(served)]
    fetched = len(upstream.requests)
    # versions, then per platform: download, archive, SHA256SUMS and its signature
    assert fetched == 1 + 2 * 4

    # From now on the cache answers, with no upstream call at all.
    again = api.get(f"{PUBLIC}/1.0.0.json")
    assert again.status == 200
    assert {p: a["hashes"] for p, a in again.json["archives"].items()} == {
        p: a["hashes"] for p, a in archives.items()
    }
    assert api.get(f"{PUBLIC}/index.json").json == index.json
    assert len(upstream.requests) == fetched
    assert sorted(mirror_objects()) == [
        f"mirror/registry.terraform.io/hashicorp/fake/1.0.0/{filename('1.0.0', *p.split('_'))}"
        for p in ("darwin_arm64", "linux_amd64")
    ]


def test_the_version_list_is_fetched_again_after_its_ttl_the_archives_are_not(
    api: Api, upstream: Upstream, monkeypatch: pytest.MonkeyPatch
) -> None:
    configure(monkeypatch, REGISTRY_MIRROR_CACHE_TTL="0")
    assert api.get(f"{PUBLIC}/1.1.0.json").status == 200
    before = list(upstream.requests)
    assert api.get(f"{PUBLIC}/1.1.0.json").status == 200
    # Only the list again: the archive is kept for good.
    assert upstream.requests[len(before) :] == ["/v1/providers/hashicorp/fake/versions"]


def test_only_the_configured_platforms_are_fetched(
    api: Api, upstream: Upstream, monkeypatch: pytest.MonkeyPatch
) -> None:
    configure(monkeypatch, REGISTRY_MIRROR_PLATFORMS="linux_amd64, windows_amd64")
    assert set(api.get(f"{PUBLIC}/1.0.0.json").json["archives"]) == {"linux_amd64"}
    assert not any("darwin" in path for path in upstream.requests)


@pytest.mark.parametrize(
    ("mode", "status", "words"),
    [
        ("error", 502, "answered 500"),
        ("slow", 504, "in time"),
        ("bad-shasum", 502, "does not match its shasum"),
        ("huge", 502, "larger than"),
    ],
)
def test_upstream_failures_are_a_502_or_504_that_keeps_nothing(
    api: Api,
    upstream: Upstream,
    monkeypatch: pytest.MonkeyPatch,
    mode: str,
    status: int,
    words: str,
) -> None:
    size = len(upstream.zips[("1.1.0", "linux_amd64")])
    configure(monkeypatch, REGISTRY_MIRROR_MAX_ARCHIVE_BYTES=str(size + 100))
    assert api.get(f"{PUBLIC}/index.json").status == 200  # the list is cached first
    upstream.mode = mode
    if mode == "slow":  # the upstream holds its answer until released, past this timeout
        configure(monkeypatch, REGISTRY_MIRROR_TIMEOUT="0.2")
    reply = api.get(f"{PUBLIC}/1.1.0.json")
    assert reply.status == status, reply.json
    assert reply.headers["Content-Type"] == "application/json"
    assert words in reply.json["errors"][0]
    assert mirror_objects() == []
    # Once the upstream is well again the same request succeeds.
    upstream.mode = ""
    upstream.released.set()
    configure(monkeypatch, REGISTRY_MIRROR_TIMEOUT="10")
    assert api.get(f"{PUBLIC}/1.1.0.json").status == 200


@pytest.mark.parametrize(
    ("mode", "words"),
    [
        ("forged-signature", "is not the file that was signed"),
        ("wrong-key", "not signed by a key the upstream announces"),
        ("unlisted", "does not list terraform-provider-fake_1.1.0_linux_amd64.zip"),
        ("other-archive", "is not the archive the signed SHA256SUMS lists"),
        ("no-signature", "has no SHA256SUMS.sig"),
        ("no-signature-url", "lacks shasums_url or shasums_signature_url"),
        ("garbage-key", "is not a readable OpenPGP key"),
    ],
)
def test_an_archive_is_cached_only_under_a_sha256sums_signed_by_an_announced_key(
    api: Api,
    upstream: Upstream,
    caplog: pytest.LogCaptureFixture,
    mode: str,
    words: str,
) -> None:
    """As terraform installing from a registry: the archive's shasum is not enough; the
    version's SHA256SUMS must be signed by one of the upstream's announced keys and list
    the archive. A refusal is the mirror protocol's 502, logged without links."""
    assert api.get(f"{PUBLIC}/index.json").status == 200
    upstream.mode = mode
    with caplog.at_level("WARNING", logger="registry.mirror"):
        reply = api.get(f"{PUBLIC}/1.1.0.json")
    assert reply.status == 502, reply.json
    assert reply.headers["Content-Type"] == "application/json"
    error = reply.json["errors"][0]
    assert words in error and "hashicorp/fake 1.1.0 linux_amd64" in error
    assert mirror_objects() == []
    assert store.archives("registry.terraform.io/hashicorp/fake", "1.1.0") == {}
    logged = [r.getMessage() for r in caplog.records if "refused" in r.getMessage()]
    assert logged and words in logged[0]
    assert upstream.url not in caplog.text and "/files/" not in caplog.text
    # Once the upstream signs its SHA256SUMS again the same request succeeds.
    upstream.mode = ""
    assert api.get(f"{PUBLIC}/1.1.0.json").status == 200


def test_an_unreachable_upstream_is_a_502(api: Api, monkeypatch: pytest.MonkeyPatch) -> None:
    from tests.support.admin_servers import free_port

    configure(monkeypatch, REGISTRY_MIRROR_UPSTREAM_URL=f"http://127.0.0.1:{free_port()}")
    reply = api.get(f"{PUBLIC}/index.json")
    assert reply.status == 502 and "could not be reached" in reply.json["errors"][0]


def test_unknown_providers_versions_and_files_are_404(api: Api, upstream: Upstream) -> None:
    assert api.get(f"{MIRROR}/registry.terraform.io/hashicorp/nothing/index.json").status == 404
    assert api.get(f"{PUBLIC}/9.9.9.json").status == 404
    assert api.get(f"{PUBLIC}/not-a-version.json").status == 404
    assert api.get(f"{PUBLIC}/index.html").status == 404
    assert mirror_objects() == []


def test_the_cache_is_for_authenticated_callers_only(api: Api, upstream: Upstream) -> None:
    reply = api.as_(None).get(f"{PUBLIC}/index.json")
    assert reply.status == 401 and reply.json["errors"]
    assert api.as_("not-a-token").get(f"{PUBLIC}/1.0.0.json").status == 401
    assert upstream.requests == []
    # Any authenticated caller: a member of some organization, with no rights elsewhere.
    make_org(api, "elsewhere")
    _, token = make_team(api, "elsewhere", "readers")
    assert api.as_(token).get(f"{PUBLIC}/index.json").status == 200


# ----- private providers ----------------------------------------------------------------------

ORG = "/api/v2/organizations/acme/registry-providers"
PROVIDER = f"{ORG}/private/acme/mycloud"


def _publish(api: Api, version: str, platforms: dict[str, bytes], declared: bytes | None = None):
    """A private provider version signed by the module's key, its SHA256SUMS naming each
    platform's declared archive (``declared``, else the archive itself), and each archive
    uploaded: what the providers API and its checks make of it (``providers.ingest``)."""
    body = doc("registry-provider-versions", version=version, **{"key-id": SIGNER.key_id})
    body["data"]["attributes"]["protocols"] = ["5.0"]
    created = api.post(f"{PROVIDER}/versions", body)
    assert created.status == 201, created.json
    links = created.data["links"]
    names = {p: f"terraform-provider-mycloud_{version}_{p}.zip" for p in platforms}
    sums = shasums({names[p]: declared or archive for p, archive in platforms.items()})
    uploads = {}
    for platform, archive in platforms.items():
        os_, arch = platform.split("_")
        attributes = {
            "os": os_,
            "arch": arch,
            "shasum": hashlib.sha256(declared or archive).hexdigest(),
            "filename": names[platform],
        }
        reply = api.post(
            f"{PROVIDER}/versions/{version}/platforms",
            {"data": {"type": "registry-provider-version-platforms", "attributes": attributes}},
        )
        assert reply.status == 201, reply.json
        uploads[platform] = reply.data["links"]["provider-binary-upload"]
    arrive(links["shasums-upload"], sums)
    arrive(links["shasums-sig-upload"], SIGNER.sign(sums))
    for platform, archive in platforms.items():
        arrive(uploads[platform], archive)


SIGNER = new_signing_key("Mirror Test Signer")


def private_zip(version: str) -> bytes:
    """A package of the private provider mycloud (its executable named for it)."""
    return mycloud_zip("mycloud", version)


@pytest.fixture
def acme(api: Api) -> Api:
    return provider_org(api, SIGNER)


def test_private_providers_under_any_host_name(acme: Api) -> None:
    good = private_zip("1.0.0")
    _publish(
        acme,
        "1.0.0",
        {"linux_amd64": good, "darwin_arm64": b"not what was declared"},
        declared=None,
    )
    # A version whose only archive is not there yet is not listed.
    body = doc("registry-provider-versions", version="2.0.0", **{"key-id": "ABCDEF0123456789"})
    assert acme.post(f"{PROVIDER}/versions", body).status == 201
    _, member = make_team(acme, "acme", "readers")

    for host in ("registry.example.com", "localhost:8443"):
        base = f"{MIRROR}/{host}/acme/mycloud"
        assert acme.as_(member).get(f"{base}/index.json").json == {"versions": {"1.0.0": {}}}
        archives = acme.as_(member).get(f"{base}/1.0.0.json").json["archives"]
        # The archive that is no zip is left out (its declared shasum is its own, but no
        # provider package is in it); the good one is served with both hashes.
        assert list(archives) == ["linux_amd64"]
        assert fetch(archives["linux_amd64"]["url"]) == good
        assert archives["linux_amd64"]["hashes"] == [expected_h1(good), zh(good)]


def test_a_private_archive_that_is_not_the_declared_one_is_not_served(acme: Api) -> None:
    archive = private_zip("1.0.0")
    _publish(acme, "1.0.0", {"linux_amd64": archive}, declared=b"something else")
    base = f"{MIRROR}/registry.example.com/acme/mycloud"
    assert acme.get(f"{base}/1.0.0.json").json == {"archives": {}}
    assert acme.get(f"{base}/index.json").status == 200


def test_private_providers_are_404_to_non_members(acme: Api) -> None:
    _publish(acme, "1.0.0", {"linux_amd64": private_zip("1.0.0")})
    make_org(acme, "other")
    _, outsider = make_team(acme, "other", "readers")
    base = f"{MIRROR}/registry.example.com/acme/mycloud"
    for path in (f"{base}/index.json", f"{base}/1.0.0.json"):
        reply = acme.as_(outsider).get(path)
        assert reply.status == 404 and reply.json["errors"]
        assert acme.as_(None).get(path).status == 401
    assert acme.get(f"{MIRROR}/registry.example.com/acme/nothing/index.json").status == 404


# ----- seeding from `terraform providers mirror` ------------------------------------------------


def mirror_tree(versions: dict[str, list[str]], *, lie: bool = False) -> dict[str, Any]:
    """What `terraform providers mirror` writes, for hashicorp/fake."""
    root = "registry.terraform.io/hashicorp/fake"
    files: dict[str, Any] = {
        f"{root}/index.json": json.dumps({"versions": {v: {} for v in versions}})
    }
    for version, platforms in versions.items():
        archives = {}
        for platform in platforms:
            archive = provider_zip(version, *platform.split("_"))
            name = filename(version, *platform.split("_"))
            files[f"{root}/{name}"] = archive
            h1 = expected_h1(archive if not lie else b"PK\x05\x06" + b"\0" * 18)
            archives[platform] = {"url": name, "hashes": [h1]}
        files[f"{root}/{version}.json"] = json.dumps({"archives": archives})
    return files


def site_events(resource_type: str) -> list[dict[str, Any]]:
    from chalicelib.core.audit import trail

    found, _ = trail.read_page(None, None, 1, 1000)
    return [e for e in found if e["resource"]["type"] == resource_type]


def seed(api: Api, body: bytes, token: str | None = None) -> Any:
    from tests.conftest import ADMIN_TOKEN

    headers = {"Content-Type": "application/octet-stream"}
    headers["Authorization"] = f"Bearer {token or ADMIN_TOKEN}"
    response = api.client.http.put(f"{MIRROR}/seed", headers=headers, body=body)
    return response.status_code, json.loads(response.body)


def test_a_seeded_cache_serves_an_air_gapped_site(
    api: Api, monkeypatch: pytest.MonkeyPatch
) -> None:
    configure(monkeypatch, REGISTRY_MIRROR_UPSTREAM_URL="off")
    tree = mirror_tree({"1.0.0": ["linux_amd64", "darwin_arm64"]})
    status, kept = seed(api, tar_gz({"./README": "x", **tree}))
    assert status == 200, kept
    assert sorted(a["platform"] for a in kept["archives"]) == ["darwin_arm64", "linux_amd64"]
    assert kept["skipped"] == ["README"]
    # The seed is the site admin's change: one site-wide event naming what it kept.
    (seeded,) = site_events("provider-mirror")
    assert seeded["resource"]["action"] == "seeded"
    assert seeded["auth"]["type"] == "Client" and seeded["auth"]["accessor_id"].startswith("user-")
    assert seeded["resource"]["meta"]["archive-count"] == 2
    assert (
        "registry.terraform.io/hashicorp/fake 1.0.0 linux_amd64"
        in (seeded["resource"]["meta"]["archives"])
    )

    assert api.get(f"{PUBLIC}/index.json").json == {"versions": {"1.0.0": {}}}
    archives = api.get(f"{PUBLIC}/1.0.0.json").json["archives"]
    name = "registry.terraform.io/hashicorp/fake/" + filename("1.0.0", "linux", "amd64")
    assert fetch(archives["linux_amd64"]["url"]) == tree[name]
    assert archives["linux_amd64"]["hashes"][0] == expected_h1(tree[name])


def test_seeding_is_for_site_admins_and_refuses_what_does_not_match(api: Api) -> None:
    make_org(api, "acme")
    _, owner = make_team(api, "acme", "owners-like", manage_providers=True)
    body = tar_gz(mirror_tree({"1.0.0": ["linux_amd64"]}))
    assert seed(api, body, token=owner)[0] == 404

    status, refused = seed(api, tar_gz(mirror_tree({"1.0.0": ["linux_amd64"]}, lie=True)))
    assert status == 422 and "matches none of the hashes" in refused["errors"][0]
    assert seed(api, b"not a tarball")[0] == 422
    assert mirror_objects() == []
    assert site_events("provider-mirror") == []  # a refused seed records nothing


def test_a_private_archive_gone_from_the_bucket_is_left_out(acme: Api) -> None:
    _publish(acme, "1.0.0", {"linux_amd64": private_zip("1.0.0")})
    found = client("s3").list_objects_v2(Bucket=get_settings().bucket, Prefix="providers/")
    for item in found["Contents"]:
        client("s3").delete_object(Bucket=get_settings().bucket, Key=item["Key"])
    reply = acme.get(f"{MIRROR}/registry.example.com/acme/mycloud/1.0.0.json")
    assert reply.status == 200 and reply.json == {"archives": {}}


def test_a_platform_the_upstream_lists_but_cannot_download_is_a_502(
    api: Api, upstream: Upstream
) -> None:
    del upstream.zips[("1.1.0", "linux_amd64")]
    reply = api.get(f"{PUBLIC}/1.1.0.json")
    assert reply.status == 502 and "has no download" in reply.json["errors"][0]


@pytest.mark.parametrize(
    ("link", "name", "words"),
    [
        # The archive would be the local file: refused before it is opened.
        ("file:///etc/hostname", None, "not http(s)"),
        ("ftp://127.0.0.1/x.zip", None, "not http(s)"),
        (None, "../escape.zip", "named the archive"),
        (None, "spaced name.zip", "named the archive"),
        (None, "x" * 300 + ".zip", "named the archive"),
    ],
)
def test_upstream_links_and_names_outside_the_rules_are_a_502_that_keeps_nothing(
    api: Api,
    upstream: Upstream,
    monkeypatch: pytest.MonkeyPatch,
    link: str | None,
    name: str | None,
    words: str,
) -> None:
    answer = upstream.answer

    def lying(path: str) -> tuple[int, bytes]:
        status, body = answer(path)
        if "/download/" in path:
            found = json.loads(body)
            found["download_url"] = link or found["download_url"]
            found["filename"] = name or found["filename"]
            body = json.dumps(found).encode()
        return status, body

    monkeypatch.setattr(upstream, "answer", lying)
    reply = api.get(f"{PUBLIC}/1.1.0.json")
    assert reply.status == 502, reply.json
    assert words in reply.json["errors"][0]
    assert mirror_objects() == []


def test_a_failing_upstream_leaves_what_the_cache_holds_served(
    api: Api, upstream: Upstream, monkeypatch: pytest.MonkeyPatch
) -> None:
    configure(monkeypatch, REGISTRY_MIRROR_CACHE_TTL="0")
    assert api.get(f"{PUBLIC}/1.1.0.json").status == 200
    upstream.mode = "error"
    # The list is stale (TTL 0) and the upstream fails: the stale list is served, and the
    # archive the cache holds.
    assert api.get(f"{PUBLIC}/index.json").json == {"versions": {"1.1.0": {}, "1.0.0": {}}}
    assert set(api.get(f"{PUBLIC}/1.1.0.json").json["archives"]) == {"linux_amd64"}
    # A version the cache holds nothing of needs the upstream.
    assert api.get(f"{PUBLIC}/1.0.0.json").status == 502


def test_with_the_upstream_off_only_seeded_archives_are_served(
    api: Api, monkeypatch: pytest.MonkeyPatch
) -> None:
    configure(monkeypatch, REGISTRY_MIRROR_UPSTREAM_URL="off")
    assert api.get(f"{PUBLIC}/index.json").status == 404
    assert api.get(f"{PUBLIC}/1.0.0.json").status == 404


# ----- where the cache may fetch (chalicelib.core.outbound) ---------------------------------


@pytest.fixture
def listener() -> Iterator[Listener]:
    server = Listener()
    yield server
    server.close()


def links_to(upstream: Upstream, monkeypatch: pytest.MonkeyPatch, link: str) -> None:
    """The upstream's download answers name ``link`` as the archive."""
    answer = upstream.answer

    def lying(path: str) -> tuple[int, bytes]:
        status, body = answer(path)
        if "/download/" in path:
            body = json.dumps({**json.loads(body), "download_url": link}).encode()
        return status, body

    monkeypatch.setattr(upstream, "answer", lying)


def assert_refused_untold(reply: Any, listener: Listener) -> None:
    """A 502 that says the fetch was refused, with nothing of what the port would have said,
    after no connection to it at all; nothing kept."""
    assert reply.status == 502, reply.json
    error = reply.json["errors"][0]
    assert "refused: not an allowed destination" in error, error
    assert listener.connections == []
    assert not listener.told(error), error
    assert mirror_objects() == []


def test_a_download_link_to_another_loopback_port_is_neither_fetched_nor_described(
    api: Api, upstream: Upstream, listener: Listener, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 33, finding 5: the upstream's download answer named a loopback port standing for
    the cloud's metadata service; the cache connected there and its 502 told how it answered.
    Now a link to another origin, and to a non-public address, is refused unconnected."""
    links_to(upstream, monkeypatch, f"http://127.0.0.1:{listener.port}/latest/meta-data/iam/")
    assert_refused_untold(api.get(f"{PUBLIC}/1.1.0.json"), listener)


@pytest.mark.parametrize(
    "link",
    [
        "http://10.0.0.1/x.zip",
        "http://169.254.169.254/latest/meta-data/",
        "http://[::1]:{listener}/x.zip",
        "http://[::ffff:127.0.0.1]:{listener}/x.zip",
        "http://0.0.0.0:{listener}/x.zip",
        # The upstream itself under another name: another origin.
        "http://localhost:{upstream}/files/1.1.0/linux_amd64",
    ],
)
def test_download_links_elsewhere_are_refused(
    api: Api,
    upstream: Upstream,
    listener: Listener,
    monkeypatch: pytest.MonkeyPatch,
    link: str,
) -> None:
    port = urlsplit(upstream.url).port
    links_to(upstream, monkeypatch, link.format(listener=listener.port, upstream=port))
    assert_refused_untold(api.get(f"{PUBLIC}/1.1.0.json"), listener)
    assert "/files/1.1.0/linux_amd64" not in upstream.requests


def test_a_redirect_to_another_origin_is_refused_one_within_the_upstream_followed(
    api: Api, upstream: Upstream, listener: Listener, monkeypatch: pytest.MonkeyPatch
) -> None:
    upstream.redirects["/files/1.1.0/linux_amd64"] = f"http://127.0.0.1:{listener.port}/x.zip"
    assert_refused_untold(api.get(f"{PUBLIC}/1.1.0.json"), listener)

    links_to(upstream, monkeypatch, "/moved/1.1.0/linux_amd64")
    upstream.redirects = {"/moved/1.1.0/linux_amd64": f"{upstream.url}/files/1.1.0/linux_amd64"}
    reply = api.get(f"{PUBLIC}/1.1.0.json")
    assert reply.status == 200, reply.json
    served = fetch(reply.json["archives"]["linux_amd64"]["url"])
    assert served == upstream.zips[("1.1.0", "linux_amd64")]
    assert "/moved/1.1.0/linux_amd64" in upstream.requests and listener.connections == []


@pytest.mark.parametrize(
    ("allow", "allowed"),
    [
        ("localhost", True),
        ("localhost:{port}", True),
        ("127.0.0.0/8,::1/128", True),
        ("localhost:1", False),
        ("127.0.0.2/32", False),
        ("", False),
    ],
)
def test_a_link_to_another_origin_is_fetched_when_the_operator_lists_it(
    api: Api,
    upstream: Upstream,
    monkeypatch: pytest.MonkeyPatch,
    allow: str,
    allowed: bool,
) -> None:
    port = urlsplit(upstream.url).port
    configure(monkeypatch, REGISTRY_OUTBOUND_ALLOW=allow.format(port=port))
    links_to(upstream, monkeypatch, f"http://localhost:{port}/files/1.1.0/linux_amd64")
    reply = api.get(f"{PUBLIC}/1.1.0.json")
    if allowed:
        assert reply.status == 200, reply.json
        served = fetch(reply.json["archives"]["linux_amd64"]["url"])
        assert served == upstream.zips[("1.1.0", "linux_amd64")]
    else:
        assert reply.status == 502 and "not an allowed destination" in reply.json["errors"][0]
        assert "/files/1.1.0/linux_amd64" not in upstream.requests


def test_without_a_configured_upstream_the_public_registry_and_its_download_hosts_only(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The default upstream is the public registry itself: its own origin and the hosts its
    download answers name (HashiCorp's releases, GitHub's), at public addresses only; a
    configured upstream is trusted as the operator's."""
    from chalicelib.providers.mirror import upstream

    configure(monkeypatch, REGISTRY_MIRROR_UPSTREAM_URL="")
    where = upstream.destinations("registry.terraform.io")
    assert ("https", "registry.terraform.io", 443) in where.own
    assert ("https", "releases.hashicorp.com", 443) in where.own
    assert not where.trusted
    configure(monkeypatch, REGISTRY_MIRROR_UPSTREAM_URL="http://10.1.2.3:8080/")
    where = upstream.destinations("registry.terraform.io")
    assert where.trusted == {("http", "10.1.2.3", 8080)} and not where.own
