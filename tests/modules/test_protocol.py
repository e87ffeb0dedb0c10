"""The module registry protocol (private) and the public-registry proxy (hosted edition)."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlparse

import pytest

from chalicelib.core.settings import get_settings
from tests.conftest import Api, doc, make_org, make_team
from tests.modules.helpers import (
    MAIN_TF,
    V1,
    create_module,
    create_version,
    publish,
    upload_and_ingest,
)


@pytest.fixture
def registry(api: Api) -> Api:
    make_org(api, "acme")
    create_module(api, "vpc", "aws")
    for version in ["1.0.0", "1.1.0", "2.0.0-rc.1"]:
        publish(api, version)
    create_version(api, "1.2.0")  # pending: never served
    failed = create_version(api, "1.3.0")
    assert upload_and_ingest(failed, {"../x.tf": "x"}) == "failed"  # failed: never served
    return api


def test_versions_lists_only_ok_versions(registry: Api):
    reply = registry.get(f"{V1}/acme/vpc/aws/versions")
    assert reply.status == 200
    assert reply.headers["Content-Type"] == "application/json"
    (module,) = reply.json["modules"]
    assert module["source"] == "acme/vpc/aws"
    assert [v["version"] for v in module["versions"]] == ["2.0.0-rc.1", "1.1.0", "1.0.0"]


def test_download_is_a_204_with_a_self_authorising_archive_url(registry: Api):
    reply = registry.get(f"{V1}/acme/vpc/aws/1.0.0/download")
    assert reply.status == 204 and reply.body in (b"", None)
    location = reply.headers["X-Terraform-Get"]
    parsed = urlparse(location)
    assert parsed.scheme in ("http", "https")
    assert parsed.path.endswith(".tar.gz")
    query = parse_qs(parsed.query)
    assert query["archive"] == ["tar.gz"] and "X-Amz-Signature" in query
    # Downloads of versions that are not ok do not exist.
    assert registry.get(f"{V1}/acme/vpc/aws/1.2.0/download").status == 404
    assert registry.get(f"{V1}/acme/vpc/aws/1.3.0/download").status == 404
    assert registry.get(f"{V1}/acme/vpc/aws/9.9.9/download").status == 404


def test_download_latest_redirects_to_the_highest_release(registry: Api):
    reply = registry.get(f"{V1}/acme/vpc/aws/download")
    assert reply.status == 302
    assert reply.headers["Location"].endswith(f"{V1}/acme/vpc/aws/1.1.0/download")


def test_module_detail_for_latest_and_a_version(registry: Api):
    latest = registry.get(f"{V1}/acme/vpc/aws").json
    assert latest["id"] == "acme/vpc/aws/1.1.0" and latest["version"] == "1.1.0"
    assert latest["versions"] == ["1.0.0", "1.1.0", "2.0.0-rc.1"]
    assert latest["published_at"].endswith("Z")
    assert latest["tag"] == "" and latest["downloads"] == 0 and latest["verified"] is False
    root = latest["root"]
    assert root["name"] == "vpc" and root["readme"] == ""
    inputs = {i["name"]: i for i in root["inputs"]}
    assert inputs["region"] == {
        "name": "region",
        "type": "string",
        "description": "Where to deploy",
        "default": '"eu-west-1"',
        "required": False,
    }
    assert inputs["cidr"]["required"] is True
    assert root["provider_dependencies"][0]["source"] == "hashicorp/aws"
    rc = registry.get(f"{V1}/acme/vpc/aws/2.0.0-rc.1").json
    assert rc["version"] == "2.0.0-rc.1"
    assert registry.get(f"{V1}/acme/vpc/aws/1.2.0").status == 404


def test_submodules_examples_and_readme(api: Api):
    make_org(api, "acme")
    create_module(api, "net", "aws")
    publish(
        api,
        "0.1.0",
        name="net",
        files={
            "main.tf": MAIN_TF,
            "README.md": "# Net",
            "modules/subnet/main.tf": 'variable "cidr" {}\noutput "id" { value = 1 }',
            "examples/basic/main.tf": 'module "net" {\n  source = "../.."\n}',
        },
    )
    detail = api.get(f"{V1}/acme/net/aws/0.1.0").json
    assert detail["root"]["readme"] == "# Net"
    assert [s["path"] for s in detail["submodules"]] == ["modules/subnet"]
    assert detail["submodules"][0]["inputs"][0]["name"] == "cidr"
    assert [e["path"] for e in detail["examples"]] == ["examples/basic"]
    assert detail["examples"][0]["dependencies"] == [
        {"name": "net", "source": "../..", "version": ""}
    ]


def test_list_search_and_namespace_return_latest_per_module(registry: Api):
    create_module(registry, "vpc", "google")
    publish(registry, "0.5.0", provider="google")
    create_module(registry, "dns", "aws")
    publish(registry, "3.0.0-beta", name="dns")  # only a pre-release: it is the latest
    create_module(registry, "empty", "aws")  # no version: not listed
    everything = registry.get(V1 + "/").json
    assert [m["id"] for m in everything["modules"]] == [
        "acme/dns/aws/3.0.0-beta",
        "acme/vpc/aws/1.1.0",
        "acme/vpc/google/0.5.0",
    ]
    assert everything["meta"] == {"limit": 15, "current_offset": 0}
    page = registry.get(f"{V1}/acme?limit=2").json
    assert len(page["modules"]) == 2 and page["meta"]["next_offset"] == 2
    assert page["meta"]["next_url"] == f"{V1}/acme?limit=2&offset=2"
    second = registry.get(f"{V1}/acme?limit=2&offset=2").json
    assert len(second["modules"]) == 1 and second["meta"]["prev_offset"] == 0
    assert "next_offset" not in second["meta"]
    # an offset past any list (schemathesis sent 5.6e33: islice refused it, a 500) is a page
    # of nothing, on every list
    huge = 10**34
    for path in (f"{V1}/acme", f"{V1}/acme/vpc", f"{V1}/search?q=vpc&"):
        far = registry.get(f"{path}{'&' if '?' in path else '?'}offset={huge}")
        assert far.status == 200 and far.json["modules"] == [], (path, far.json)
    found = registry.get(f"{V1}/search?q=vpc&provider=google").json["modules"]
    assert [m["id"] for m in found] == ["acme/vpc/google/0.5.0"]
    assert registry.get(f"{V1}/search?q=nothing").json["modules"] == []
    assert registry.get(f"{V1}/search").status == 422
    providers = registry.get(f"{V1}/acme/vpc").json["modules"]
    assert [m["provider"] for m in providers] == ["aws", "google"]
    assert registry.get(f"{V1}/acme/nope").status == 404


def test_empty_filters_are_the_same_as_none(registry: Api):
    """``?namespace=`` used to query DynamoDB with an empty key: a 500 (found by the
    OpenAPI fuzz test)."""
    every = registry.get(V1).json["modules"]
    assert every
    assert registry.get(f"{V1}?namespace=&provider=").json["modules"] == every
    assert registry.get(f"{V1}/search?q=vpc&namespace=&provider=").json["modules"] == every
    assert registry.get(f"{V1}/acme?provider=").json["modules"] == every


def test_chalices_own_errors_keep_the_protocols_shape(registry: Api):
    """A request body's media type Chalice refuses (415) used to be answered with a JSON:API
    error document on the protocol's routes too (found by the OpenAPI fuzz test)."""
    reply = registry.call("GET", f"{V1}/acme/vpc/aws", content_type="multipart/form-data")
    assert reply.status == 415
    assert reply.headers["Content-Type"] == "application/json"
    assert reply.json == {"errors": ["Unsupported media type: multipart/form-data"]}
    api_reply = registry.call("GET", "/api/v2/organizations", content_type="multipart/form-data")
    assert api_reply.status == 415 and api_reply.error["status"] == "415"
    assert registry.get(f"{V1}?verified=true").json["modules"] == []


def test_protocol_errors_permissions_and_discovery(registry: Api):
    missing = registry.get(f"{V1}/acme/nope/aws/versions")
    assert missing.status == 404
    assert isinstance(missing.json["errors"][0], str)
    assert registry.as_(None).get(f"{V1}/acme/vpc/aws/versions").status == 401
    make_org(registry, "other")
    _, outsider = make_team(registry, "other", "readers")
    stranger = registry.as_(outsider)
    assert stranger.get(f"{V1}/acme/vpc/aws/versions").status == 404
    assert stranger.get(f"{V1}/acme/vpc/aws/1.0.0/download").status == 404
    assert stranger.get(V1).json["modules"] == []
    _, reader = make_team(registry, "acme", "readers")
    assert registry.as_(reader).get(f"{V1}/acme/vpc/aws/versions").status == 200
    assert registry.get(f"{V1}/acme/vpc/aws/1.0.0?x=1").status == 200
    assert registry.get(f"{V1}/acme/vpc/aws?offset=-1").status == 200  # ignored here
    assert registry.get(f"{V1}?offset=abc").status == 422


def test_deleted_version_is_no_longer_served(registry: Api):
    org = "/api/v2/organizations/acme/registry-modules/private/acme/vpc/aws"
    assert registry.delete(f"{org}/1.1.0").status == 204
    versions = registry.get(f"{V1}/acme/vpc/aws/versions").json["modules"][0]["versions"]
    assert [v["version"] for v in versions] == ["2.0.0-rc.1", "1.0.0"]
    assert registry.get(f"{V1}/acme/vpc/aws/1.1.0/download").status == 404
    assert registry.get(f"{V1}/acme/vpc/aws").json["version"] == "1.0.0"


# ----- response size: a version detail stays far below Lambda's 6 MB ------------------------

NOTE = "README truncated by the module registry"


def proxy_envelope_size(body: bytes) -> int:
    """Bytes of the Lambda proxy response: the body is escaped once more inside it."""
    return len(json.dumps({"statusCode": 200, "body": body.decode()}))


def test_version_detail_with_huge_readmes_stays_small(api: Api):
    make_org(api, "acme")
    create_module(api, "big", "aws")
    readme = "# Big\n" + '| `a` | "quoted" \\ caf\u00e9 |\n' * 100_000  # 2.7 MB, much escaped
    files = {"main.tf": MAIN_TF, "README.md": readme}
    for i in range(3):
        files[f"modules/m{i}/main.tf"] = 'variable "x" {}'
        files[f"modules/m{i}/README.md"] = readme
    publish(api, "1.0.0", name="big", files=files)
    reply = api.get(f"{V1}/acme/big/aws/1.0.0")
    assert reply.status == 200
    limit = get_settings().max_metadata_bytes
    assert len(reply.body) < limit + 4096
    assert proxy_envelope_size(reply.body) < 2 * limit + 8192 < 6_000_000
    detail = reply.json
    root = detail["root"]["readme"]
    assert root.startswith("# Big\n| `a` |") and NOTE in root  # truncated to 1 MiB, not lost
    assert root.rstrip().endswith("The complete file is in the module archive.")
    assert [s["inputs"][0]["name"] for s in detail["submodules"]] == ["x", "x", "x"]


def test_metadata_stored_before_the_caps_is_served_within_them(registry: Api):
    from chalicelib.artifacts import objects
    from chalicelib.modules.store import ModuleVersionModel

    module_id = registry.get("/api/v2/organizations/acme/registry-modules").data[0]["id"]
    stored = next(v for v in ModuleVersionModel.query(module_id) if v.version == "1.0.0")
    metadata = objects.get_metadata(stored.metadata_key)
    metadata["root"]["readme"] = "# Old\n" + "x" * (8 * 1024 * 1024)  # ingested before the caps
    objects.put_metadata(stored.metadata_key, metadata)
    reply = registry.get(f"{V1}/acme/vpc/aws/1.0.0")
    assert reply.status == 200 and len(reply.body) <= get_settings().max_metadata_bytes + 4096
    assert (
        reply.json["root"]["readme"].startswith("# Old\nxxx")
        and NOTE in reply.json["root"]["readme"]
    )
    assert reply.json["root"]["inputs"]  # the rest is as stored

    metadata["root"]["inputs"] = [
        {"name": f"v{i}", "description": "d" * 200} for i in range(20_000)
    ]
    objects.put_metadata(stored.metadata_key, metadata)
    reply = registry.get(f"{V1}/acme/vpc/aws/1.0.0")
    assert reply.status == 200 and len(reply.body) < 10_000  # too large to fit: left out
    assert reply.json["root"]["inputs"] == [] and reply.json["version"] == "1.0.0"


# ----- public proxy -------------------------------------------------------------------------


class Upstream:
    """A local HTTP server standing in for the public registry; counts requests per path."""

    def __init__(self) -> None:
        self.hits: dict[str, int] = {}
        upstream = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802
                upstream.hits[self.path] = upstream.hits.get(self.path, 0) + 1
                if self.path.startswith("/v1/modules/hashicorp/consul/aws"):
                    body = {"versions": "/v1/modules/hashicorp/consul/aws/versions"}
                    if self.path.endswith("/versions"):
                        body = {
                            "modules": [
                                {
                                    "source": "hashicorp/consul/aws",
                                    "versions": [{"version": "0.1.0"}],
                                }
                            ]
                        }
                    else:
                        body = {
                            "id": "hashicorp/consul/aws/0.1.0",
                            "namespace": "hashicorp",
                            "name": "consul",
                            "provider": "aws",
                            "version": "0.1.0",
                            "owner": "",
                            "description": "Consul",
                            "source": "",
                            "tag": "v0.1.0",
                            "published_at": "2017-09-14T23:22:44Z",
                            "downloads": 1,
                            "verified": True,
                            "provider_logo_url": "",
                        }
                    data = json.dumps(body).encode()
                    self.send_response(200)
                elif self.path.startswith("/v1/modules/broken"):
                    data = b"oops"
                    self.send_response(503)
                else:
                    data = json.dumps({"errors": ["Not Found"]}).encode()
                    self.send_response(404)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(
            target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self.thread.start()

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def upstream(monkeypatch: pytest.MonkeyPatch) -> Iterator[Upstream]:
    server = Upstream()
    monkeypatch.setenv("REGISTRY_PUBLIC_UPSTREAM", server.url)
    get_settings.cache_clear()
    yield server
    server.stop()
    get_settings.cache_clear()


PUBLIC = "/api/registry/public/v1/modules"


def test_public_proxy_is_404_on_the_self_hosted_edition(api: Api, upstream: Upstream):
    assert api.get(f"{PUBLIC}/hashicorp/consul/aws/versions").status == 404
    assert upstream.hits == {}


def test_public_proxy_forwards_caches_and_reports_upstream_failure(
    api: Api, hosted: None, upstream: Upstream
):
    versions = api.get(f"{PUBLIC}/hashicorp/consul/aws/versions")
    assert versions.status == 200, versions.json
    assert versions.json["modules"][0]["versions"] == [{"version": "0.1.0"}]
    assert versions.headers["X-Cache"] == "miss"
    again = api.get(f"{PUBLIC}/hashicorp/consul/aws/versions")
    assert again.json == versions.json and again.headers["X-Cache"] == "hit"
    assert upstream.hits["/v1/modules/hashicorp/consul/aws/versions"] == 1
    assert api.get(f"{PUBLIC}/hashicorp/consul/aws").json["version"] == "0.1.0"
    assert api.get(f"{PUBLIC}/hashicorp/consul/aws/0.1.0").json["id"].endswith("/0.1.0")
    assert api.get(f"{PUBLIC}/nobody/nothing/aws/versions").status == 404
    assert api.as_(None).get(f"{PUBLIC}/hashicorp/consul/aws/versions").status == 401

    # Curated public modules are listed alongside private ones.
    make_org(api, "acme")
    assert (
        api.post(
            "/api/v2/organizations/acme/registry-modules",
            doc(
                "registry-modules",
                name="consul",
                provider="aws",
                namespace="hashicorp",
                **{"registry-name": "public"},
            ),
        ).status
        == 201
    )
    listed = api.get(f"{V1}/acme").json["modules"]
    assert [m["id"] for m in listed] == ["hashicorp/consul/aws/0.1.0"]

    broken = api.get(f"{PUBLIC}/broken/thing/aws/versions")
    assert broken.status == 502 and upstream.url in broken.json["errors"][0]
    upstream.stop()
    down = api.get(f"{PUBLIC}/hashicorp/consul/aws/9.9.9")
    assert down.status == 502
    assert "could not be reached" in down.json["errors"][0]
    # A cached answer is still served while the upstream is down.
    assert api.get(f"{PUBLIC}/hashicorp/consul/aws/0.1.0").status == 200


# ----- deprecated and revoked versions ------------------------------------------------------

API_MODULE = "/api/v2/organizations/acme/registry-modules/private/acme/vpc/aws"


def change_version(api: Api, version: str, **attributes) -> None:
    reply = api.patch(f"{API_MODULE}/{version}", doc("module-versions", **attributes))
    assert reply.status == 200, reply.json


def deprecate(api: Api, version: str, reason: str = "use 2.x", link: str = "https://x.io") -> None:
    change_version(
        api,
        version,
        deprecation={"deprecated-status": "Deprecated", "reason": reason, "link": link},
    )


def revoke(api: Api, version: str, message: str = "CVE-2026-1", link: str = "https://x.io/cve"):
    change_version(api, version, revocation={"status": "Revoked", "message": message, "link": link})


def test_deprecated_versions_still_resolve_and_carry_their_deprecation(registry: Api):
    deprecate(registry, "1.1.0")
    (module,) = registry.get(f"{V1}/acme/vpc/aws/versions").json["modules"]
    assert module["versions"] == [
        {"version": "2.0.0-rc.1", "deprecation": None},
        {"version": "1.1.0", "deprecation": {"reason": "use 2.x", "link": "https://x.io"}},
        {"version": "1.0.0", "deprecation": None},
    ]
    # Still the latest release, still downloadable, its detail says why it is deprecated.
    latest = registry.get(f"{V1}/acme/vpc/aws").json
    assert latest["version"] == "1.1.0"
    assert latest["deprecation"] == {"reason": "use 2.x", "link": "https://x.io"}
    assert registry.get(f"{V1}/acme/vpc/aws/1.0.0").json["deprecation"] is None
    assert registry.get(f"{V1}/acme/vpc/aws/1.1.0").json["deprecation"]["reason"] == "use 2.x"
    assert registry.get(f"{V1}/acme/vpc/aws/1.1.0/download").status == 204
    download = registry.get(f"{V1}/acme/vpc/aws/download")
    assert download.headers["Location"].endswith("/acme/vpc/aws/1.1.0/download")
    # Undeprecated: null again.
    change_version(registry, "1.1.0", deprecation={"deprecated-status": "Undeprecated"})
    (module,) = registry.get(f"{V1}/acme/vpc/aws/versions").json["modules"]
    assert all(v["deprecation"] is None for v in module["versions"])


def test_revoked_versions_are_never_offered_and_their_download_says_why(registry: Api):
    deprecate(registry, "1.1.0")
    revoke(registry, "1.1.0")
    (module,) = registry.get(f"{V1}/acme/vpc/aws/versions").json["modules"]
    assert [v["version"] for v in module["versions"]] == ["2.0.0-rc.1", "1.0.0"]
    latest = registry.get(f"{V1}/acme/vpc/aws").json
    assert latest["version"] == "1.0.0" and latest["versions"] == ["1.0.0", "2.0.0-rc.1"]
    redirect = registry.get(f"{V1}/acme/vpc/aws/download")
    assert redirect.headers["Location"].endswith("/acme/vpc/aws/1.0.0/download")
    for path in (f"{V1}/acme/vpc/aws/1.1.0/download", f"{V1}/acme/vpc/aws/1.1.0"):
        reply = registry.get(path)
        assert reply.status == 404
        assert reply.json == {
            "errors": [
                "version 1.1.0 of acme/vpc/aws has been revoked: CVE-2026-1 (see https://x.io/cve)"
            ]
        }
    listed = {m["id"] for m in registry.get(f"{V1}/acme").json["modules"]}
    assert listed == {"acme/vpc/aws/1.0.0"}
    assert registry.get(f"{V1}/search?q=vpc").json["modules"][0]["version"] == "1.0.0"

    # Un-revoked: offered (and downloadable) again, still deprecated.
    change_version(registry, "1.1.0", revocation={"status": "Unrevoked"})
    (module,) = registry.get(f"{V1}/acme/vpc/aws/versions").json["modules"]
    assert [v["version"] for v in module["versions"]] == ["2.0.0-rc.1", "1.1.0", "1.0.0"]
    assert module["versions"][1]["deprecation"] == {"reason": "use 2.x", "link": "https://x.io"}
    assert registry.get(f"{V1}/acme/vpc/aws/1.1.0/download").status == 204
    assert registry.get(f"{V1}/acme/vpc/aws").json["version"] == "1.1.0"


def test_a_module_whose_versions_are_all_revoked_has_nothing_to_offer(registry: Api):
    for version in ("1.0.0", "1.1.0", "2.0.0-rc.1"):
        change_version(registry, version, deprecation={"deprecated-status": "Deprecated"})
        change_version(registry, version, revocation={"status": "Revoked"})
    (module,) = registry.get(f"{V1}/acme/vpc/aws/versions").json["modules"]
    assert module["versions"] == []
    assert registry.get(f"{V1}/acme/vpc/aws").status == 404
    assert registry.get(f"{V1}/acme/vpc/aws/download").status == 404
    assert registry.get(f"{V1}/acme").json["modules"] == []
    # No message given: the error still says the version was revoked.
    reply = registry.get(f"{V1}/acme/vpc/aws/1.0.0/download")
    assert reply.json == {"errors": ["version 1.0.0 of acme/vpc/aws has been revoked"]}


def test_the_hot_path_reads_at_most_two_items_warm_and_three_cold(registry: Api):
    """versions and download (what every terraform init asks) cost at most 2 DynamoDB calls
    on a warm function and 3 on a cold one, for team and user tokens alike; the limiter's
    counter is one of them. Cold, a user's item is read with the module in one call. Reads
    are not audited (issue #37): neither writes an audit event, which would fit in the budget
    of a function with the limiter off."""
    from bench.reads import counting_reads
    from chalicelib.accounts.teams import service as teams_service
    from chalicelib.accounts.tokens import service as tokens_service
    from chalicelib.accounts.users import service as users_service
    from chalicelib.accounts.users import store as users_store
    from chalicelib.core.audit import check
    from chalicelib.core.audit.store import TABLE
    from chalicelib.core.auth import Principal, verified

    _, team_token = make_team(registry, "acme", "readers")
    admin = Principal("user", users_service.bootstrap_admin(None)[0].id, None)
    user = users_service.create_user("reader", "reader@example.com")
    team = next(t for t in teams_service.list_teams(admin, "acme", None) if t.name == "readers")
    teams_service.change_membership(admin, team.id, [user.username], add=True)
    _, user_token = tokens_service.create_user_token(
        Principal("user", user.id, None), user.id, None, None
    )
    for token in (team_token, user_token):
        caller = registry.as_(token)
        for path in (f"{V1}/acme/vpc/aws/versions", f"{V1}/acme/vpc/aws/1.0.0/download"):
            for cold, most in ((False, 2), (True, 3)):
                caller.get(path)  # warm
                if cold:  # a new instance: nothing verified, no user kept
                    verified.clear()
                    users_store._users.clear()
                with counting_reads() as reads:
                    reply = caller.get(path)
                assert reply.status in (200, 204), reply.json
                assert reads.total_calls <= most, (path, cold, reads.detail())
                # Reads are not audited: no event (a round trip) on the hot path; what it
                # writes is bookkeeping (the download counter), never a change.
                prefix = get_settings().table_name("")
                written = {table.removeprefix(prefix) for table in reads.written}
                assert written <= check.BOOKKEEPING - {TABLE}, (path, cold, written)
    # a reader of another organization still gets 404, warm or cold
    make_org(registry, "other")
    _, outsider = make_team(registry, "other", "outsiders")
    users_store._users.clear()
    assert registry.as_(outsider).get(f"{V1}/acme/vpc/aws/versions").status == 404


def test_latest_is_one_rule_for_the_protocol_the_lists_and_the_pages():
    """``statuses.latest_servable``: the highest ok, unrevoked release, else the highest such
    pre-release; the module (lists, pages), the protocol and its list entry all ask it."""
    from chalicelib.modules import store
    from chalicelib.modules.protocol.service import published
    from chalicelib.modules.statuses import latest_servable
    from chalicelib.modules.store import ModuleModel

    ok = {"status": "ok", "published-at": "2026-11-28T10:00:00Z"}
    statuses = {
        "1.0.0": ok,
        "1.1.0": ok,
        "1.2.0": {**ok, "revocation": {"status": "Revoked"}},
        "1.3.0": {"status": "reg_ingress_failed"},
        "2.0.0-rc.1": ok,
    }
    assert latest_servable(statuses).text == "1.1.0"
    assert latest_servable({"1.0.0-beta": ok, "2.0.0-rc.1": ok}).text == "2.0.0-rc.1"
    assert latest_servable({"1.0.0": {"status": "pending"}}) is None
    module = ModuleModel("acme", "private#acme#vpc#aws", registry_name="private")
    module.version_statuses = statuses
    assert module.latest_servable() == "1.1.0"
    assert published(module).latest.text == "1.1.0"
    assert store.protocol_entry(module) == ("1.1.0", ok["published-at"])
