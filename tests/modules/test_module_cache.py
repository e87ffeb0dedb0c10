"""The module pull-through cache (``modules.cache``) through the registry protocol's routes
(Chalice test client + moto), against a local stand-in upstream registry and a local git
server (never the internet): versions, first fetch and serving from the cache, the upstream
down, the outbound rules, conflicts, bounds and refusals."""

from __future__ import annotations

import gzip
import hashlib
import json
from collections.abc import Iterator
from typing import Any
from urllib.parse import unquote, urlsplit

import pytest

from chalicelib.core.data.aws import client
from chalicelib.core.settings import get_settings
from chalicelib.modules.cache import detail as cache_detail
from chalicelib.modules.cache import service, store
from chalicelib.modules.cache import settings as cache_settings
from chalicelib.modules.cache import upstream as cache_upstream
from infrastructure import expiry
from tests.conftest import Api, tar_gz
from tests.support import vcs_git_server
from tests.support.mirror_upstream import Listener, Upstream

V1 = "/api/registry/v1/modules"
MODULE = "terraform-aws-modules/vpc/aws"
MAIN_TF = """
variable "cidr" {
  type        = string
  description = "The VPC's CIDR block."
}

output "vpc_id" {
  value = "vpc-1"
}
"""
ARCHIVE = tar_gz({"main.tf": MAIN_TF, "README.md": "# VPC\n\nA cached VPC.\n"})


def allow(namespaces: list[str], hosts: list[str] | None = None) -> None:
    """The site settings (Part E's API sets them; here the model, as the contract says)."""
    item = cache_settings.CacheSettingsModel(cache_settings.KEY, allowed_namespaces=namespaces)
    if hosts is not None:
        item.allowed_source_hosts = hosts
    item.save()
    cache_settings.forget()


def configure(monkeypatch: pytest.MonkeyPatch, **env: str) -> None:
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    get_settings.cache_clear()


@pytest.fixture
def upstream(monkeypatch: pytest.MonkeyPatch) -> Iterator[Upstream]:
    server = Upstream({})
    cache_upstream.forget()
    server.files["/archives/vpc-5.0.0.tar.gz"] = ARCHIVE
    server.modules[MODULE] = {
        "5.0.0": "/archives/vpc-5.0.0.tar.gz",
        "4.0.0": "/archives/vpc-4.0.0.tar.gz",  # listed, no archive
    }
    # As deployed: nothing listed; the configured upstream is allowed as such.
    configure(monkeypatch, REGISTRY_MIRROR_UPSTREAM_URL=server.url, REGISTRY_OUTBOUND_ALLOW="")
    allow(["terraform-aws-modules"])
    yield server
    server.close()
    get_settings.cache_clear()


def s3_key(url: str) -> str:
    path = unquote(urlsplit(url).path).lstrip("/")
    bucket = get_settings().bucket
    return path[len(bucket) + 1 :] if path.startswith(bucket + "/") else path


def served(url: str) -> bytes:
    assert "X-Amz-Signature" in url and url.endswith("&archive=tar.gz")
    return client("s3").get_object(Bucket=get_settings().bucket, Key=s3_key(url))["Body"].read()


def cached_objects() -> list[str]:
    found = client("s3").list_objects_v2(Bucket=get_settings().bucket, Prefix="v1/cache/")
    return sorted(o["Key"] for o in found.get("Contents", []))


def site_events(action: str) -> list[dict[str, Any]]:
    from chalicelib.core.audit import trail

    found, _ = trail.read_page(None, None, 1, 1000)
    return [
        e
        for e in found
        if e["resource"]["type"] == "cached-module" and e["resource"]["action"] == action
    ]


# ----- serving ------------------------------------------------------------------------------


def test_first_install_fetches_once_then_the_cache_answers(api: Api, upstream: Upstream) -> None:
    versions = api.get(f"{V1}/{MODULE}/versions")
    assert versions.status == 200, versions.json
    (module,) = versions.json["modules"]
    assert [v["version"] for v in module["versions"]] == ["5.0.0", "4.0.0"]
    assert "meta" not in versions.json and "Warning" not in versions.headers

    download = api.get(f"{V1}/{MODULE}/5.0.0/download")
    assert download.status == 204, download.json
    assert served(download.headers["X-Terraform-Get"]) == ARCHIVE
    digest = hashlib.sha256(ARCHIVE).hexdigest()
    assert cached_objects() == [f"v1/cache/{digest}.json.gz", f"v1/cache/{digest}.tar.gz"]
    # Ingested as an upload is: inputs, outputs and the README.
    metadata_key = f"v1/cache/{digest}.json.gz"
    body = client("s3").get_object(Bucket=get_settings().bucket, Key=metadata_key)["Body"]
    root = json.loads(gzip.decompress(body.read()))["root"]
    assert [i["name"] for i in root["inputs"]] == ["cidr"]
    assert [o["name"] for o in root["outputs"]] == ["vpc_id"]
    assert "A cached VPC." in root["readme"]
    item = store.cached_version("terraform-aws-modules/vpc/aws", "5.0.0")
    assert item is not None and item.sha256 == digest and item.size == len(ARCHIVE)
    (event,) = site_events("cached")
    assert event["auth"]["type"] == "System"
    assert event["resource"]["meta"]["sha256"] == digest

    fetched = list(upstream.requests)
    assert fetched == [
        "/.well-known/terraform.json",  # 404 here: the modules under /v1/modules/
        f"/v1/modules/{MODULE}/versions",
        f"/v1/modules/{MODULE}/5.0.0/download",
        "/archives/vpc-5.0.0.tar.gz",
    ]
    again = api.get(f"{V1}/{MODULE}/5.0.0/download")
    assert again.status == 204 and served(again.headers["X-Terraform-Get"]) == ARCHIVE
    assert api.get(f"{V1}/{MODULE}/versions").json == versions.json
    assert upstream.requests == fetched  # the versions within their TTL, the archive for good
    assert len(site_events("cached")) == 1


def test_a_json_location_is_followed_as_the_header_is(api: Api, upstream: Upstream) -> None:
    upstream.json_locations = True
    download = api.get(f"{V1}/{MODULE}/5.0.0/download")
    assert download.status == 204, download.json
    assert served(download.headers["X-Terraform-Get"]) == ARCHIVE


def test_the_upstream_down_cached_versions_keep_installing_and_the_list_says_stale(
    api: Api, upstream: Upstream, monkeypatch: pytest.MonkeyPatch
) -> None:
    configure(monkeypatch, REGISTRY_PUBLIC_CACHE_TTL="0")
    assert api.get(f"{V1}/{MODULE}/5.0.0/download").status == 204
    upstream.close()

    versions = api.get(f"{V1}/{MODULE}/versions")
    assert versions.status == 200, versions.json
    assert [v["version"] for v in versions.json["modules"][0]["versions"]] == ["5.0.0"]
    assert versions.json["meta"] == {"stale": True}
    assert versions.headers["Warning"].startswith("110 ")
    download = api.get(f"{V1}/{MODULE}/5.0.0/download")
    assert download.status == 204 and served(download.headers["X-Terraform-Get"]) == ARCHIVE
    # Not cached and the upstream down: a clean protocol error.
    missing = api.get(f"{V1}/{MODULE}/4.0.0/download")
    assert missing.status == 502 and list(missing.json) == ["errors"]


def test_nothing_kept_and_the_upstream_failing_is_a_502(api: Api, upstream: Upstream) -> None:
    upstream.mode = "error"
    reply = api.get(f"{V1}/{MODULE}/versions")
    assert reply.status == 502
    assert reply.headers["Content-Type"] == "application/json"
    assert reply.json == {"errors": ["the upstream registry answered 500"]}


def test_the_versions_are_fetched_again_after_their_ttl(
    api: Api, upstream: Upstream, monkeypatch: pytest.MonkeyPatch
) -> None:
    configure(monkeypatch, REGISTRY_PUBLIC_CACHE_TTL="0")
    assert api.get(f"{V1}/{MODULE}/versions").status == 200
    upstream.modules[MODULE]["6.0.0"] = "/archives/vpc-6.0.0.tar.gz"
    listed = api.get(f"{V1}/{MODULE}/versions").json["modules"][0]["versions"]
    assert [v["version"] for v in listed] == ["6.0.0", "5.0.0", "4.0.0"]


def test_unknown_modules_and_versions_are_404(api: Api, upstream: Upstream) -> None:
    assert api.get(f"{V1}/terraform-aws-modules/nope/aws/versions").status == 404
    assert api.get(f"{V1}/{MODULE}/9.9.9/download").status == 404
    assert api.get(f"{V1}/{MODULE}/not-a-version/download").status == 404
    assert cached_objects() == []


def test_a_negative_entry_expires_and_is_fetched_again(api: Api, upstream: Upstream) -> None:
    """A name the upstream does not have is kept as such while fresh, then DynamoDB's TTL
    deletes it (expiry.sweep does locally what DynamoDB does): such names never pile up."""
    nope = "terraform-aws-modules/nope/aws"
    assert api.get(f"{V1}/{nope}/versions").status == 404
    kept = store.kept_versions(nope)
    assert kept is not None and kept.expires is not None
    assert kept.expires.timestamp() == kept.fresh_until
    upstream.modules[nope] = {"1.0.0": "/archives/vpc-5.0.0.tar.gz"}
    assert api.get(f"{V1}/{nope}/versions").status == 404  # fresh: not asked again
    assert expiry.sweep(now=kept.fresh_until + 1) == {store.CachedModel.Meta.table_name: 1}
    assert store.kept_versions(nope) is None
    listed = api.get(f"{V1}/{nope}/versions")
    assert listed.status == 200, listed.json
    assert upstream.requests.count(f"/v1/modules/{nope}/versions") == 2
    # A list with versions is kept for good (the TTL is only for negative entries).
    kept = store.kept_versions(nope)
    assert kept is not None and kept.expires is None


def test_any_valid_token_may_install_none_may_not(api: Api, upstream: Upstream) -> None:
    assert api.as_(None).get(f"{V1}/{MODULE}/versions").status == 401
    assert api.as_(None).get(f"{V1}/{MODULE}/5.0.0/download").status == 401
    assert api.as_("not-a-token").get(f"{V1}/{MODULE}/5.0.0/download").status == 401
    assert upstream.requests == []


def test_a_namespace_not_allowed_is_a_private_one(api: Api, upstream: Upstream) -> None:
    allow([])
    assert api.get(f"{V1}/{MODULE}/versions").status == 404
    assert api.get(f"{V1}/{MODULE}/5.0.0/download").status == 404
    assert upstream.requests == []


def test_namespaces_compare_case_insensitively(api: Api, upstream: Upstream) -> None:
    reply = api.get(f"{V1}/Terraform-AWS-Modules/vpc/aws/5.0.0/download")
    assert reply.status == 204, reply.json
    assert store.cached_version("terraform-aws-modules/vpc/aws", "5.0.0") is not None


# ----- the detail routes -------------------------------------------------------------------

UPSTREAM_DETAIL = {
    "id": f"{MODULE}/4.0.0",
    "version": "4.0.0",
    "root": {
        "path": "",
        "name": "vpc",
        "readme": "# VPC 4\n",
        "empty": False,
        "inputs": [{"name": "name", "type": "string", "required": True}],
        "outputs": [{"name": "arn"}],
        "dependencies": [],
        "provider_dependencies": [],
        "resources": [],
        "unknown": "dropped",
    },
    "submodules": [{"path": "modules/a", "name": "a", "readme": 7}, "not a directory"],
    "examples": "not a list",
}


def test_a_cached_versions_detail_is_what_its_ingest_found(api: Api, upstream: Upstream) -> None:
    assert api.get(f"{V1}/{MODULE}/versions").status == 200
    assert api.get(f"{V1}/{MODULE}/5.0.0/download").status == 204
    before = list(upstream.requests)
    for path in (f"{V1}/{MODULE}/5.0.0", f"{V1}/{MODULE}"):  # the version, the latest
        reply = api.get(path)
        assert reply.status == 200, reply.json
        body = reply.json
        assert (body["id"], body["version"], body["versions"]) == (
            f"{MODULE}/5.0.0",
            "5.0.0",
            ["4.0.0", "5.0.0"],
        )
        assert [i["name"] for i in body["root"]["inputs"]] == ["cidr"]
        assert [o["name"] for o in body["root"]["outputs"]] == ["vpc_id"]
        assert "A cached VPC." in body["root"]["readme"]
        assert "meta" not in body and "Warning" not in reply.headers
    assert upstream.requests == before  # the list within its TTL, the detail from S3


def test_a_detail_not_cached_is_the_upstreams_kept_for_the_ttl_then_stale(
    api: Api, upstream: Upstream
) -> None:
    upstream.module_details[f"{MODULE}/4.0.0"] = UPSTREAM_DETAIL
    reply = api.get(f"{V1}/{MODULE}/4.0.0")
    assert reply.status == 200, reply.json
    root = reply.json["root"]
    assert [i["name"] for i in root["inputs"]] == ["name"] and root["readme"] == "# VPC 4\n"
    assert "unknown" not in root
    # Only directories are kept, a README that is no string is empty.
    assert reply.json["submodules"] == [{"path": "modules/a", "name": "a", "readme": ""}]
    assert reply.json["examples"] == []
    assert reply.json["versions"] == ["4.0.0", "5.0.0"]
    detail_path = f"/v1/modules/{MODULE}/4.0.0"
    assert upstream.requests.count(detail_path) == 1
    assert api.get(f"{V1}/{MODULE}/4.0.0").json == reply.json
    assert upstream.requests.count(detail_path) == 1  # kept for the TTL
    assert cached_objects() == []  # a detail caches no archive

    for item in store.CachedModel.query(MODULE):  # the list and the detail past their TTL
        item.update(actions=[store.CachedModel.fresh_until.set(0)])
    upstream.close()
    stale = api.get(f"{V1}/{MODULE}/4.0.0")
    assert stale.status == 200, stale.json
    assert stale.json["meta"] == {"stale": True} and stale.headers["Warning"].startswith("110 ")
    assert stale.json["root"] == reply.json["root"]


def test_a_detail_with_nothing_kept_and_the_upstream_failing_is_a_clean_error(
    api: Api, upstream: Upstream, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert api.get(f"{V1}/{MODULE}/versions").status == 200
    # Listed, but the upstream has no detail for it: 404.
    missing = api.get(f"{V1}/{MODULE}/4.0.0")
    assert missing.status == 404 and list(missing.json) == ["errors"]
    upstream.mode = "error"
    failed = api.get(f"{V1}/{MODULE}/4.0.0")
    assert failed.status == 502 and list(failed.json) == ["errors"]
    upstream.mode = "slow"
    monkeypatch.setattr(service, "FETCH_SECONDS", 0.1)
    slow = api.get(f"{V1}/{MODULE}/4.0.0")
    assert slow.status == 504 and list(slow.json) == ["errors"]
    upstream.released.set()


def test_a_large_upstream_readme_is_cut_to_the_kept_bound(api: Api, upstream: Upstream) -> None:
    big = {**UPSTREAM_DETAIL, "root": {**UPSTREAM_DETAIL["root"], "readme": "x" * 400_000}}
    upstream.module_details[f"{MODULE}/4.0.0"] = big
    reply = api.get(f"{V1}/{MODULE}/4.0.0")
    assert reply.status == 200, reply.json
    readme = reply.json["root"]["readme"]
    assert readme.startswith("xxx") and len(readme) < cache_detail.DETAIL_BYTES
    kept = store.kept_detail(MODULE, "4.0.0")
    assert kept is not None and len(json.dumps(kept.body)) <= cache_detail.DETAIL_BYTES


def test_the_latest_download_redirects_to_the_latest_versions_download(
    api: Api, upstream: Upstream
) -> None:
    upstream.modules[MODULE]["6.0.0-rc1"] = "/archives/vpc-6.0.0-rc1.tar.gz"
    reply = api.get(f"{V1}/{MODULE}/download")
    assert reply.status == 302, reply.json
    assert reply.headers["Location"].endswith(f"{V1}/{MODULE}/5.0.0/download")
    assert cached_objects() == []  # the redirect's target fetches, not the redirect
    # Only pre-releases: the highest of those, as for a private module.
    upstream.modules["terraform-aws-modules/beta/aws"] = {"1.0.0-a": "", "1.0.0-b": ""}
    beta = api.get(f"{V1}/terraform-aws-modules/beta/aws/download")
    assert beta.headers["Location"].endswith("/terraform-aws-modules/beta/aws/1.0.0-b/download")


def test_unknown_modules_and_versions_are_404_on_every_detail_route(
    api: Api, upstream: Upstream
) -> None:
    nope = "terraform-aws-modules/nope/aws"
    for path in (f"{V1}/{nope}", f"{V1}/{nope}/1.0.0", f"{V1}/{nope}/download"):
        reply = api.get(path)
        assert reply.status == 404 and list(reply.json) == ["errors"], path
    assert api.get(f"{V1}/{MODULE}/9.9.9").status == 404
    assert api.get(f"{V1}/{MODULE}/not-a-version").status == 404
    assert not any(p.endswith("/9.9.9") or "not-a-version" in p for p in upstream.requests)


def test_the_detail_routes_want_a_token_and_an_allowed_namespace(
    api: Api, upstream: Upstream
) -> None:
    paths = (f"{V1}/{MODULE}", f"{V1}/{MODULE}/5.0.0", f"{V1}/{MODULE}/download")
    for path in paths:
        assert api.as_(None).get(path).status == 401
        assert api.as_("not-a-token").get(path).status == 401
    allow([])
    for path in paths:
        assert api.get(path).status == 404  # a private namespace that does not exist
    assert upstream.requests == []


# ----- what the cache may fetch ------------------------------------------------------------


@pytest.fixture
def listener() -> Iterator[Listener]:
    found = Listener()
    yield found
    found.close()


def test_a_source_on_a_host_not_allowed_is_refused_unfetched(
    api: Api, upstream: Upstream, listener: Listener
) -> None:
    upstream.modules[MODULE]["5.0.0"] = f"http://127.0.0.1:{listener.port}/vpc.tar.gz"
    reply = api.get(f"{V1}/{MODULE}/5.0.0/download")
    assert reply.status == 502
    assert "is not an allowed source host" in reply.json["errors"][0]
    assert listener.connections == [] and cached_objects() == []


def test_a_redirect_to_another_host_is_refused(
    api: Api, upstream: Upstream, listener: Listener
) -> None:
    upstream.redirects["/archives/vpc-5.0.0.tar.gz"] = f"http://127.0.0.1:{listener.port}/x.tgz"
    reply = api.get(f"{V1}/{MODULE}/5.0.0/download")
    assert reply.status == 502
    assert "AKIA" not in json.dumps(reply.json)
    assert listener.connections == [] and cached_objects() == []


def test_an_allowed_host_at_a_private_address_is_refused(
    api: Api, upstream: Upstream, listener: Listener
) -> None:
    allow(["terraform-aws-modules"], [f"localhost:{listener.port}"])
    upstream.modules[MODULE]["5.0.0"] = f"http://localhost:{listener.port}/vpc.tar.gz"
    reply = api.get(f"{V1}/{MODULE}/5.0.0/download")
    assert reply.status == 502
    assert "not an allowed destination" in reply.json["errors"][0]
    assert listener.connections == [] and cached_objects() == []


@pytest.mark.parametrize(
    "location",
    [
        "s3::https://bucket.s3.amazonaws.com/vpc.zip",
        "https://github.com/terraform-aws-modules/terraform-aws-vpc/archive/v5.zip",
        "git::https://github.com/terraform-aws-modules/terraform-aws-vpc//modules/x?ref=v5",
        "git::https://user:pass@github.com/terraform-aws-modules/terraform-aws-vpc?ref=v5",
        "file:///etc/passwd",
    ],
)
def test_sources_the_cache_does_not_fetch_are_refused(
    api: Api, upstream: Upstream, location: str
) -> None:
    upstream.modules[MODULE]["5.0.0"] = location
    reply = api.get(f"{V1}/{MODULE}/5.0.0/download")
    assert reply.status == 502, reply.json
    assert "pass" not in reply.json["errors"][0]
    assert cached_objects() == []


def test_an_archive_past_the_upload_limit_is_refused(
    api: Api, upstream: Upstream, monkeypatch: pytest.MonkeyPatch
) -> None:
    configure(monkeypatch, REGISTRY_MAX_ARCHIVE_BYTES=str(len(ARCHIVE) - 1))
    reply = api.get(f"{V1}/{MODULE}/5.0.0/download")
    assert reply.status == 502
    assert f"larger than {len(ARCHIVE) - 1} bytes" in reply.json["errors"][0]
    assert cached_objects() == []


def test_an_archive_that_is_no_module_is_refused(api: Api, upstream: Upstream) -> None:
    upstream.files["/archives/vpc-5.0.0.tar.gz"] = b"not a tarball at all"
    reply = api.get(f"{V1}/{MODULE}/5.0.0/download")
    assert reply.status == 502
    assert reply.json["errors"][0].startswith(f"the upstream's archive of {MODULE} 5.0.0: ")
    assert cached_objects() == []


def test_a_slow_first_fetch_answers_504_in_time_and_serves_the_next_try(
    api: Api, upstream: Upstream, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert api.get(f"{V1}/{MODULE}/versions").status == 200
    upstream.mode = "slow"  # holds every answer until released
    monkeypatch.setattr(service, "FETCH_SECONDS", 0.1)
    reply = api.get(f"{V1}/{MODULE}/5.0.0/download")
    assert reply.status == 504
    assert list(reply.json) == ["errors"]
    monkeypatch.setattr(service, "FETCH_SECONDS", 60.0)
    upstream.released.set()
    again = api.get(f"{V1}/{MODULE}/5.0.0/download")  # joins the running fetch
    assert again.status == 204, again.json
    assert served(again.headers["X-Terraform-Get"]) == ARCHIVE
    assert upstream.requests.count("/archives/vpc-5.0.0.tar.gz") == 1


def _transfers() -> list[dict[str, Any]]:
    """The transfers queue's messages, taken off it."""
    sqs = client("sqs")
    url = sqs.get_queue_url(QueueName=get_settings().transfers_queue)["QueueUrl"]
    found = []
    while messages := sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10).get("Messages"):
        for message in messages:
            found.append(json.loads(message["Body"]))
            sqs.delete_message(QueueUrl=url, ReceiptHandle=message["ReceiptHandle"])
    return found


def test_a_fetch_past_the_bound_is_queued_for_the_transfers_function(
    api: Api, upstream: Upstream, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The instance that answered 504 may be frozen before its fetch ends (here: it never
    ends): the fetch was queued, the Transfers function caches the version, and the next try
    is served from the cache. A second delivery finds it cached and fetches nothing."""
    from concurrent.futures import Future

    from chalicelib.entry import transfers

    assert api.get(f"{V1}/{MODULE}/versions").status == 200
    monkeypatch.setattr(service, "FETCH_SECONDS", 0.1)
    with monkeypatch.context() as frozen:
        frozen.setattr(service, "_started", lambda key, work: Future())
        reply = api.get(f"{V1}/{MODULE}/5.0.0/download")
    assert reply.status == 504
    (queued,) = _transfers()
    assert queued == {
        "kind": "module-cache-fetch",
        "address": "terraform-aws-modules/vpc/aws",
        "version": "5.0.0",
    }
    assert upstream.requests.count("/archives/vpc-5.0.0.tar.gz") == 0
    assert transfers.handle_body(json.dumps(queued)) == "fetched"
    assert transfers.handle_body(json.dumps(queued)) == "cached"  # delivered twice
    assert upstream.requests.count("/archives/vpc-5.0.0.tar.gz") == 1
    again = api.get(f"{V1}/{MODULE}/5.0.0/download")
    assert again.status == 204, again.json
    assert served(again.headers["X-Terraform-Get"]) == ARCHIVE
    assert upstream.requests.count("/archives/vpc-5.0.0.tar.gz") == 1
    assert _transfers() == []  # served from the cache: nothing queued
    assert len(site_events("cached")) == 1


@pytest.mark.parametrize(
    ("address", "version", "outcome"),
    [
        ("hashicorp/consul/aws", "1.0.0", "not-allowed"),  # no longer (or never) allowed
        ("terraform-aws-modules/vpc", "5.0.0", "dropped"),
        ("terraform-aws-modules/vpc/aws", "../5.0.0", "dropped"),
        ("terraform-aws-modules/vpc/aws", "4.0.0", "failed"),  # listed, no archive upstream
    ],
)
def test_a_queued_fetch_that_cannot_be_done_is_dropped_not_retried(
    api: Api, upstream: Upstream, address: str, version: str, outcome: str
) -> None:
    from chalicelib.entry import transfers

    body = {"kind": "module-cache-fetch", "address": address, "version": version}
    assert transfers.handle_body(json.dumps(body)) == outcome
    assert cached_objects() == []


# ----- git sources --------------------------------------------------------------------------


@pytest.fixture
def git_host(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[str, dict[str, str]]]:
    repos, shas = vcs_git_server.build_repos()
    with vcs_git_server.GitServer(repos, anonymous=True) as server:
        # The git host is on loopback: listed, as an operator lists an internal host.
        configure(monkeypatch, REGISTRY_OUTBOUND_ALLOW="127.0.0.1")
        yield server.url, shas


def test_a_git_source_is_cloned_at_its_ref_and_packed(
    api: Api, upstream: Upstream, git_host: tuple[str, dict[str, str]]
) -> None:
    url, shas = git_host
    host = urlsplit(url).netloc
    allow(["terraform-aws-modules"], [host])
    upstream.modules[MODULE]["1.1.0"] = f"git::{url}/acme/terraform-aws-net.git?ref=1.1.0"
    reply = api.get(f"{V1}/{MODULE}/1.1.0/download")
    assert reply.status == 204, reply.json
    archive = served(reply.headers["X-Terraform-Get"])
    import io
    import tarfile

    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        main = tar.extractfile("main.tf")
        assert main is not None and b'variable "extra"' in main.read()
    item = store.cached_version("terraform-aws-modules/vpc/aws", "1.1.0")
    assert item is not None and item.identity == f"git:{shas['net-1.1.0']}"
    assert item.source_host == host


def test_a_git_source_on_a_host_not_allowed_is_refused(
    api: Api, upstream: Upstream, git_host: tuple[str, dict[str, str]]
) -> None:
    url, _ = git_host
    upstream.modules[MODULE]["1.1.0"] = f"git::{url}/acme/terraform-aws-net.git?ref=1.1.0"
    reply = api.get(f"{V1}/{MODULE}/1.1.0/download")
    assert reply.status == 502
    assert "is not an allowed source host" in reply.json["errors"][0]


# ----- conflicts ---------------------------------------------------------------------------


def test_other_content_for_a_cached_version_is_refused_and_reported(
    api: Api, upstream: Upstream
) -> None:
    assert api.get(f"{V1}/{MODULE}/5.0.0/download").status == 204
    changed = tar_gz({"main.tf": MAIN_TF + "# changed in place\n"})
    upstream.files["/archives/vpc-5.0.0.tar.gz"] = changed

    kept = service.cache_version("terraform-aws-modules", "vpc", "aws", "5.0.0", None)
    assert kept.sha256 == hashlib.sha256(ARCHIVE).hexdigest()
    item = store.cached_version("terraform-aws-modules/vpc/aws", "5.0.0")
    assert item is not None and item.conflict is not None
    assert item.conflict["sha256"] == hashlib.sha256(changed).hexdigest()
    (event,) = site_events("conflict")
    assert event["resource"]["meta"]["outcome"] == "refused"
    # Still the first archive, and only it, is stored and served.
    reply = api.get(f"{V1}/{MODULE}/5.0.0/download")
    assert served(reply.headers["X-Terraform-Get"]) == ARCHIVE
    assert len(cached_objects()) == 2


def test_the_same_content_again_is_no_conflict(api: Api, upstream: Upstream) -> None:
    assert api.get(f"{V1}/{MODULE}/5.0.0/download").status == 204
    service.cache_version("terraform-aws-modules", "vpc", "aws", "5.0.0", None)
    item = store.cached_version("terraform-aws-modules/vpc/aws", "5.0.0")
    assert item is not None and item.conflict is None
    assert site_events("conflict") == []


def test_last_use_is_written_at_most_once_an_hour_per_instance(
    api: Api, upstream: Upstream
) -> None:
    assert api.get(f"{V1}/{MODULE}/5.0.0/download").status == 204
    first = store.cached_version("terraform-aws-modules/vpc/aws", "5.0.0")
    assert first is not None and first.last_used is not None
    assert api.get(f"{V1}/{MODULE}/5.0.0/download").status == 204
    second = store.cached_version("terraform-aws-modules/vpc/aws", "5.0.0")
    assert second is not None and second.last_used is not None
    marked = second.last_used
    assert api.get(f"{V1}/{MODULE}/5.0.0/download").status == 204
    third = store.cached_version("terraform-aws-modules/vpc/aws", "5.0.0")
    assert third is not None and third.last_used == marked  # within the hour: not written


# ----- the site admins' list and seed -------------------------------------------------------

ADMIN_CACHE = "/api/v2/admin/module-cache"


def seed_body(constraint: str, **names: str) -> dict[str, Any]:
    attributes = {
        "namespace": "terraform-aws-modules",
        "name": "vpc",
        "provider": "aws",
        "version-constraint": constraint,
        **names,
    }
    return {"data": {"type": "module-cache-seeds", "attributes": attributes}}


def test_a_seed_fetches_the_versions_a_constraint_allows(api: Api, upstream: Upstream) -> None:
    upstream.files["/archives/vpc-4.0.0.tar.gz"] = tar_gz({"main.tf": MAIN_TF})
    upstream.modules[MODULE]["5.1.0-beta.1"] = "/archives/vpc-5.0.0.tar.gz"
    reply = api.post(f"{ADMIN_CACHE}/actions/seed", seed_body(">= 4.0, < 6"))
    assert reply.status == 200, reply.json
    outcomes = {v["version"]: v["outcome"] for v in reply.data["attributes"]["versions"]}
    assert outcomes == {"5.0.0": "cached", "4.0.0": "cached"}  # no pre-release
    (event,) = site_events("seeded")
    assert event["auth"]["type"] != "System"
    assert event["resource"]["id"] == "terraform-aws-modules/vpc/aws"
    assert site_events("cached") == []  # the seed's one event, not one per version
    # Installs are served from the cache with no fetch.
    before = len(upstream.requests)
    assert api.get(f"{V1}/{MODULE}/4.0.0/download").status == 204
    assert len(upstream.requests) == before

    # Seeding again re-fetches, finds them unchanged, records nothing.
    again = api.post(f"{ADMIN_CACHE}/actions/seed", seed_body("~> 5.0"))
    assert [v["outcome"] for v in again.data["attributes"]["versions"]] == ["unchanged"]
    assert len(site_events("seeded")) == 1


def test_a_seed_reports_a_version_changed_in_place(api: Api, upstream: Upstream) -> None:
    assert api.get(f"{V1}/{MODULE}/5.0.0/download").status == 204
    upstream.files["/archives/vpc-5.0.0.tar.gz"] = tar_gz({"main.tf": MAIN_TF + "# other\n"})
    reply = api.post(f"{ADMIN_CACHE}/actions/seed", seed_body("= 5.0.0"))
    assert reply.status == 200, reply.json
    (outcome,) = reply.data["attributes"]["versions"]
    assert outcome["outcome"] == "conflict"
    listed = api.get(ADMIN_CACHE)
    (row,) = listed.data
    assert row["attributes"]["conflict"]["sha256"] != row["attributes"]["sha256"]
    assert row["attributes"]["sha256"] == hashlib.sha256(ARCHIVE).hexdigest()


def test_the_list_shows_what_is_cached_page_by_page(api: Api, upstream: Upstream) -> None:
    upstream.files["/archives/vpc-4.0.0.tar.gz"] = tar_gz({"main.tf": MAIN_TF})
    for version in ("4.0.0", "5.0.0"):
        assert api.get(f"{V1}/{MODULE}/{version}/download").status == 204
    seen: list[str] = []
    page = api.get(f"{ADMIN_CACHE}?page%5Bsize%5D=1")
    while True:
        assert page.status == 200, page.json
        seen += [row["id"] for row in page.data]
        for row in page.data:
            attributes = row["attributes"]
            assert attributes["size"] > 0 and attributes["fetched-at"].endswith("Z")
            assert attributes["last-used-at"] and attributes["source-host"]
        following = page.json["links"]["next"]
        if not following:
            break
        page = api.get(following[following.index("/api/") :])
    assert sorted(seen) == [f"{MODULE}/4.0.0", f"{MODULE}/5.0.0"]
    bad = api.get(f"{ADMIN_CACHE}?page%5Bafter%5D=not-a-cursor")
    assert bad.status == 422


@pytest.mark.parametrize(
    ("body", "status"),
    [
        (seed_body("~> 5.0", namespace="hashicorp"), 422),  # not an allowed namespace
        (seed_body("not a constraint"), 422),
        (seed_body(""), 422),
        (seed_body(" "), 422),  # a seed names its versions: no constraint is refused
        (seed_body("*"), 422),
        (seed_body(">= 6.0.0, ~> x"), 422),
        (seed_body("~> 5.0", name="../x"), 422),
        (seed_body("~> 5.0", name="x" * 65), 422),
        (seed_body("> 99"), 404),  # nothing matches
    ],
)
def test_a_seed_is_refused_before_any_fetch(
    api: Api, upstream: Upstream, body: dict[str, Any], status: int
) -> None:
    reply = api.post(f"{ADMIN_CACHE}/actions/seed", body)
    assert reply.status == status, reply.json
    assert cached_objects() == [] and site_events("seeded") == []
    assert not any("/download" in r or "/archives/" in r for r in upstream.requests)


@pytest.mark.parametrize("constraint", ["*", " ", ">= 6.0.0, ~> x", "1.0.0-"])
def test_a_seed_without_a_usable_constraint_names_the_constraint(
    api: Api, upstream: Upstream, constraint: str
) -> None:
    reply = api.post(f"{ADMIN_CACHE}/actions/seed", seed_body(constraint))
    assert reply.status == 422, reply.json
    assert reply.error["source"]["pointer"] == "/data/attributes/version-constraint"
    assert upstream.requests == []


def test_too_many_versions_at_once_are_refused(api: Api, upstream: Upstream) -> None:
    upstream.modules[MODULE] = {f"1.0.{n}": "/x.tar.gz" for n in range(11)}
    reply = api.post(f"{ADMIN_CACHE}/actions/seed", seed_body(">= 1.0.0"))
    assert reply.status == 422 and "at most 10" in reply.json["errors"][0]["detail"]
    assert cached_objects() == []


def test_only_site_admins_see_and_seed_the_cache(api: Api, upstream: Upstream) -> None:
    from tests.conftest import make_org, make_team

    make_org(api, "acme")
    _, token = make_team(api, "acme", "owners-ish", manage_modules=True)
    outsider = api.as_(token)
    assert outsider.get(ADMIN_CACHE).status == 404
    assert outsider.post(f"{ADMIN_CACHE}/actions/seed", seed_body("~> 5.0")).status == 404
    assert api.as_(None).get(ADMIN_CACHE).status in (401, 404)
    assert upstream.requests == [] and cached_objects() == []


# ----- service discovery: where the upstream serves modules --------------------------------

DISCOVERY = "/.well-known/terraform.json"
TFE_MODULES = "/api/registry/v1/modules/"


def test_modules_are_read_where_the_discovery_document_says(api: Api, upstream: Upstream) -> None:
    upstream.discovery = {"modules.v1": TFE_MODULES, "providers.v1": "/api/registry/v1/providers/"}
    versions = api.get(f"{V1}/{MODULE}/versions")
    assert versions.status == 200, versions.json
    assert [v["version"] for v in versions.json["modules"][0]["versions"]] == ["5.0.0", "4.0.0"]
    download = api.get(f"{V1}/{MODULE}/5.0.0/download")
    assert download.status == 204, download.json
    assert served(download.headers["X-Terraform-Get"]) == ARCHIVE
    # The document read once, kept for the next reads.
    assert upstream.requests == [
        DISCOVERY,
        f"{TFE_MODULES}{MODULE}/versions",
        f"{TFE_MODULES}{MODULE}/5.0.0/download",
        "/archives/vpc-5.0.0.tar.gz",
    ]


def test_an_absolute_modules_url_on_the_upstreams_origin_is_followed(
    api: Api, upstream: Upstream
) -> None:
    upstream.discovery = {"modules.v1": upstream.url + TFE_MODULES}
    assert api.get(f"{V1}/{MODULE}/versions").status == 200
    assert upstream.requests == [DISCOVERY, f"{TFE_MODULES}{MODULE}/versions"]


@pytest.mark.parametrize(
    "where", ["http://localhost:{port}/v1/modules/", "http://127.0.0.1:1/v1/modules/"]
)
def test_a_modules_url_on_another_origin_is_refused_unfetched(
    api: Api, upstream: Upstream, where: str
) -> None:
    port = upstream.url.rsplit(":", 1)[1]
    upstream.discovery = {"modules.v1": where.format(port=port)}
    reply = api.get(f"{V1}/{MODULE}/versions")
    assert reply.status == 502
    assert reply.json == {"errors": ["the upstream's modules.v1 is on another origin: refused"]}
    assert upstream.requests == [DISCOVERY]
    assert cached_objects() == []


def test_a_failing_discovery_is_a_502_not_a_guess(api: Api, upstream: Upstream) -> None:
    upstream.mode = "error"
    reply = api.get(f"{V1}/{MODULE}/versions")
    assert reply.status == 502
    assert reply.json == {"errors": ["the upstream registry answered 500"]}
    assert upstream.requests == [DISCOVERY]


def test_a_fetch_done_before_it_is_watched_does_not_hang_the_request(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A fetch that fails at once (no upstream configured: ``off``) may be done before its
    bookkeeping callback is added; the callback then runs in the caller's thread, which
    must not hold the lock the callback takes (it did: every such request hung)."""
    import threading
    from concurrent.futures import Future

    class AtOnce:
        def submit(self, work: Any) -> Future[Any]:
            done: Future[Any] = Future()
            try:
                done.set_result(work())
            except Exception as exc:  # noqa: BLE001 - the work's failure, as a pool keeps it
                done.set_exception(exc)
            return done

    def unavailable() -> None:
        raise cache_upstream.Unavailable("no upstream registry is configured")

    monkeypatch.setattr(service, "_pool", AtOnce())
    outcome: list[BaseException] = []

    def call() -> None:
        try:
            service.bounded(("versions", "x"), unavailable)
        except cache_upstream.Unavailable as exc:
            outcome.append(exc)

    caller = threading.Thread(target=call, daemon=True)
    caller.start()
    caller.join(timeout=60)  # a bound on a deadlock, not on speed: it ends at once or never
    assert not caller.is_alive(), "the request hung on the module cache's lock"
    assert len(outcome) == 1 and service._running == {}


def test_no_upstream_at_all_serves_what_is_cached_as_stale(
    api: Api, upstream: Upstream, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert api.get(f"{V1}/{MODULE}/5.0.0/download").status == 204
    configure(monkeypatch, REGISTRY_MIRROR_UPSTREAM_URL="off", REGISTRY_PUBLIC_CACHE_TTL="0")
    versions = api.get(f"{V1}/{MODULE}/versions")
    assert versions.status == 200, versions.json
    assert versions.json["meta"] == {"stale": True}
    assert api.get(f"{V1}/{MODULE}/5.0.0").status == 200
    missing = api.get(f"{V1}/terraform-aws-modules/nope/aws/versions")
    assert missing.status == 502 and list(missing.json) == ["errors"]
