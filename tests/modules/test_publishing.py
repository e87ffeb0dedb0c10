"""Publishing modules from VCS: a real git smart-HTTP server on loopback, the jobs on the
(moto) ingest queue, the same ingest as uploaded archives, and signed webhooks.

``drain`` plays the SQS event source mapping: it hands every queued message (publishing
jobs and the S3 events the fetched archives raise) to the ingest function's handler until
the queue is empty.
"""

from __future__ import annotations

import hashlib
import hmac
import json
from collections.abc import Iterator
from typing import Any

import pytest

from chalicelib.core.data.aws import client
from chalicelib.core.settings import get_settings
from tests.conftest import Api, doc, make_org, make_team, tar_gz
from tests.modules.publishing import MODULES, NET, V2, connect, drain, publish
from tests.support.vcs_api_server import VcsApi
from tests.support.vcs_git_server import TOKEN, GitServer, serve


@pytest.fixture
def git_server() -> Iterator[tuple[GitServer, dict[str, str]]]:
    yield from serve()


@pytest.fixture
def acme(api: Api) -> Api:
    make_org(api, "acme")
    return api


def statuses(api: Api, path: str = NET) -> dict[str, dict[str, str]]:
    module = api.get(path)
    assert module.status == 200, module.json
    return {s["version"]: s for s in module.data["attributes"]["version-statuses"]}


def deliver(api: Api, path: str, payload: Any, event: str, secret: str | None) -> Any:
    """A GitHub delivery of ``payload`` (signed with ``secret`` unless None) to ``path``."""
    body = json.dumps(payload)
    headers = {"X-GitHub-Event": event}
    if secret is not None:
        digest = hmac.new(secret.encode(), body.encode(), hashlib.sha256).hexdigest()
        headers["X-Hub-Signature-256"] = f"sha256={digest}"
    return api.as_(None).call(
        "POST", path, raw=body, content_type="application/json", headers=headers
    )


# ----- tag-based publishing -----------------------------------------------------------------


def test_tags_become_versions_through_the_same_ingest(
    acme: Api, git_server: tuple[GitServer, dict[str, str]]
) -> None:
    server, shas = git_server
    token_id = connect(acme, server)
    created = publish(acme, token_id, "acme/terraform-aws-net")
    assert created.status == 201, created.json
    module = created.data
    attrs = module["attributes"]
    # Name and provider come from terraform-<provider>-<name>; nothing is published yet.
    assert (attrs["name"], attrs["provider"], attrs["namespace"]) == ("net", "aws", "acme")
    assert attrs["status"] == "pending" and attrs["version-statuses"] == []
    assert attrs["publishing-mechanism"] == "git_tag"
    repo = attrs["vcs-repo"]
    assert repo["identifier"] == repo["display-identifier"] == "acme/terraform-aws-net"
    assert repo["oauth-token-id"] == token_id and repo["branch"] == "" and repo["tags"] is True
    assert repo["service-provider"] == "github_enterprise" and repo["ingress-submodules"] is True
    assert repo["repository-http-url"] == f"{server.url}/acme/terraform-aws-net"
    assert repo["webhook-url"].startswith("http") and "/webhooks/vcs/" in repo["webhook-url"]
    assert len(repo["webhook-secret"]) >= 32
    assert attrs["permissions"] == {"can-delete": True, "can-resync": True, "can-retry": True}
    # Readable at once (the provider reads right after create), secret shown only once.
    again = acme.get(NET)
    assert again.status == 200 and "webhook-secret" not in again.data["attributes"]["vcs-repo"]
    assert again.data["attributes"]["vcs-sync"] == {"status": "queued"}

    drain()

    found = statuses(acme)
    assert {v: s["status"] for v, s in found.items()} == {
        "1.0.0": "ok",
        "1.1.0-rc.1": "ok",
        "1.1.0": "ok",
        "1.2.0": "reg_ingress_failed",
    }
    # The broken tag fails visibly, with the parser's reason.
    assert "main.tf" in found["1.2.0"]["error"]
    module = acme.get(NET).data["attributes"]
    assert module["status"] == "setup_complete"
    report = module["vcs-sync"]
    assert report["status"] == "synced" and report["error"] is None
    assert sorted(report["published"]) == ["1.0.0", "1.1.0", "1.1.0-rc.1", "1.2.0"]
    assert [s["tag"] for s in report["skipped-tags"]] == ["not-a-version"]
    assert "not a semantic version" in report["skipped-tags"][0]["reason"]

    # Versions record the tag's commit; downloads serve the parsed archive.
    versions = acme.get(f"{NET}/versions").data
    by_version = {v["attributes"]["version"]: v for v in versions}
    assert by_version["1.0.0"]["attributes"]["commit-sha"] == shas["net-1.0.0"]
    assert by_version["1.0.0"]["attributes"]["source"] == "github_enterprise"
    assert "links" not in by_version["1.0.0"] or not by_version["1.0.0"]["links"].get("upload")
    detail = acme.get("/api/registry/v1/modules/acme/net/aws/1.0.0")
    assert detail.status == 200, detail.json
    inputs = {i["name"] for i in detail.json["root"]["inputs"]}
    assert inputs == {"cidr"}
    later = acme.get("/api/registry/v1/modules/acme/net/aws/1.1.0").json
    assert {i["name"] for i in later["root"]["inputs"]} == {"cidr", "extra"}
    listed = acme.get("/api/registry/v1/modules/acme/net/aws/versions").json
    assert sorted(v["version"] for v in listed["modules"][0]["versions"]) == [
        "1.0.0",
        "1.1.0",
        "1.1.0-rc.1",
    ]

    # A resync publishes nothing twice; tag-based modules take no create-version.
    resync = acme.post(f"{V2}/registry-modules/{created.data['id']}/actions/resync")
    assert resync.status == 200, resync.json
    drain()
    assert acme.get(NET).data["attributes"]["vcs-sync"]["published"] == []
    refused = acme.post(f"{NET}/versions", doc("registry-module-versions", version="9.0.0"))
    assert refused.status == 422 and "tags" in refused.error["detail"]


def test_a_large_import_continues_in_follow_up_jobs(
    acme: Api, git_server: tuple[GitServer, dict[str, str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    from chalicelib.modules.publishing import sync

    monkeypatch.setattr(sync, "MAX_VERSIONS_PER_SYNC", 3)
    server, _ = git_server
    publish(acme, connect(acme, server), "acme/terraform-aws-net")
    assert drain().count("vcs-sync") == 2
    assert set(statuses(acme)) == {"1.0.0", "1.1.0-rc.1", "1.1.0", "1.2.0"}
    report = acme.get(NET).data["attributes"]["vcs-sync"]
    assert report["status"] == "synced" and report["published"] == ["1.2.0"]


def test_monorepo_with_tag_prefix_and_source_directory(
    acme: Api, git_server: tuple[GitServer, dict[str, str]]
) -> None:
    server, shas = git_server
    token_id = connect(acme, server)
    unnamed = publish(acme, token_id, "acme/infra", vcs_repo={"tag-prefix": "net/"})
    assert unnamed.status == 422
    assert unnamed.error["source"]["pointer"] == "/data/attributes/name"
    assert "terraform-<provider>-<name>" in unnamed.error["detail"]

    created = publish(
        acme,
        token_id,
        "acme/infra",
        name="net",
        provider="aws",
        vcs_repo={"tag-prefix": "net/", "source-directory": "modules/net"},
    )
    assert created.status == 201, created.json
    repo = created.data["attributes"]["vcs-repo"]
    assert repo["tag-prefix"] == "net/" and repo["source-directory"] == "modules/net"
    drain()
    assert {v: s["status"] for v, s in statuses(acme).items()} == {"0.1.0": "ok"}
    skipped = acme.get(NET).data["attributes"]["vcs-sync"]["skipped-tags"]
    assert {s["tag"] for s in skipped} == {"dns/v0.2.0", "v9.9.9"}
    detail = acme.get("/api/registry/v1/modules/acme/net/aws/0.1.0").json
    assert "net module" in detail["root"]["readme"]
    assert [i["name"] for i in detail["root"]["inputs"]] == ["cidr"]


def test_import_failures_are_visible_and_retryable(
    acme: Api, git_server: tuple[GitServer, dict[str, str]]
) -> None:
    server, _ = git_server
    # No SemVer tag at all.
    good_token = connect(acme, server)
    untagged = publish(acme, good_token, "acme/terraform-aws-untagged")
    assert untagged.status == 201
    drain()
    module = acme.get(f"{MODULES}/private/acme/untagged/aws").data["attributes"]
    assert module["status"] == "no_version_tags"
    assert "no tag of acme/terraform-aws-untagged is a version" in module["vcs-sync"]["error"]
    assert module["vcs-sync"]["skipped-tags"][0]["tag"] == "release-one"

    # A connection whose token the git host refuses: the sync fails with the host's answer.
    bad_token = connect(acme, server, token="revoked-token")
    created = publish(acme, bad_token, "acme/terraform-aws-net")
    assert created.status == 201
    drain()
    module = acme.get(NET).data["attributes"]
    assert module["status"] == "setup_failed"
    assert module["vcs-sync"]["status"] == "failed"
    assert "authentication failed" in module["vcs-sync"]["error"]
    assert "revoked-token" not in json.dumps(module)

    # Point the module at the good connection; a retry then publishes.
    patched = acme.patch(
        NET, doc("registry-modules", **{"vcs-repo": {"oauth-token-id": good_token}})
    )
    assert patched.status == 200, patched.json
    assert patched.data["attributes"]["vcs-repo"]["oauth-token-id"] == good_token
    drain()
    module = acme.get(NET).data["attributes"]
    assert module["status"] == "setup_complete"
    assert statuses(acme)["1.0.0"]["status"] == "ok"

    # A version whose fetch failed is fetched again by retry.
    from chalicelib.modules import service, versions
    from chalicelib.modules.store import ModuleModel

    record = next(ModuleModel.by_id.query(created.data["id"]))
    version = next(v for v in versions.list_versions(record) if v.version == "1.1.0")
    service.mark_version(version, "clone_failed", error="the server hung up")
    assert statuses(acme)["1.1.0"] == {
        "version": "1.1.0",
        "status": "clone_failed",
        "error": "the server hung up",
    }
    retried = acme.post(f"{V2}/registry-modules/{created.data['id']}/actions/retry")
    assert retried.status == 200, retried.json
    assert drain()[:1] == ["vcs-fetch"]
    assert statuses(acme)["1.1.0"] == {"version": "1.1.0", "status": "ok"}


def test_retry_ingests_an_upload_whose_event_was_lost(acme: Api) -> None:
    from tests.modules.helpers import MAIN_TF, upload_key

    plain = acme.post(MODULES, doc("registry-modules", name="plain", provider="aws"))
    assert plain.data["attributes"]["permissions"]["can-retry"] is True
    created = acme.post(
        f"{MODULES}/private/acme/plain/aws/versions",
        doc("registry-module-versions", version="1.0.0"),
    )
    client("s3").put_object(
        Bucket=get_settings().bucket, Key=upload_key(created), Body=tar_gz({"main.tf": MAIN_TF})
    )
    assert drain(run=False) == ["s3"]  # the S3 event is lost
    path = f"{MODULES}/private/acme/plain/aws"
    assert statuses(acme, path)["1.0.0"]["status"] == "pending"
    retried = acme.post(f"{V2}/registry-modules/{plain.data['id']}/actions/retry")
    assert retried.status == 200, retried.json
    assert drain() == ["s3"]
    assert statuses(acme, path)["1.0.0"] == {"version": "1.0.0", "status": "ok"}
    # Nothing left to retry: no message at all.
    acme.post(f"{V2}/registry-modules/{plain.data['id']}/actions/retry")
    assert drain() == []


# ----- branch-based publishing and switching ------------------------------------------------


def test_branch_based_publishing_and_switching_to_tags(
    acme: Api, git_server: tuple[GitServer, dict[str, str]]
) -> None:
    server, shas = git_server
    token_id = connect(acme, server)
    created = publish(
        acme,
        token_id,
        "acme/terraform-aws-net",
        vcs_repo={"branch": "main"},
        **{"initial-version": "0.9.0", "test-config": {"tests-enabled": True}},
    )
    assert created.status == 201, created.json
    attrs = created.data["attributes"]
    assert attrs["publishing-mechanism"] == "branch"
    assert attrs["vcs-repo"]["branch"] == "main" and attrs["vcs-repo"]["tags"] is False
    assert attrs["test-config"]["tests-enabled"] is True
    drain()
    assert statuses(acme) == {"0.9.0": {"version": "0.9.0", "status": "ok"}}

    # create-version takes the branch head; no upload link (the registry fetches).
    version = acme.post(
        f"{V2}/registry-modules/acme/net/aws/versions",
        doc("registry-module-versions", version="1.0.0"),
    )
    assert version.status == 201, version.json
    assert not (version.data.get("links") or {}).get("upload")
    drain()
    found = acme.get(f"{NET}/version?module_version=1.0.0").data["attributes"]
    assert found["status"] == "ok" and found["commit-sha"] == shas["net-main"]
    readme = acme.get("/api/registry/v1/modules/acme/net/aws/1.0.0").json["root"]["readme"]
    assert "(main)" in readme
    bad_sha = acme.post(
        f"{NET}/versions", doc("registry-module-versions", version="1.0.1", **{"commit-sha": "x"})
    )
    assert bad_sha.status == 422 and bad_sha.error["source"]["pointer"].endswith("commit-sha")

    # Branch and tags together are refused and change nothing; tags: true switches.
    both = acme.patch(
        NET, doc("registry-modules", **{"vcs-repo": {"branch": "main", "tags": True}})
    )
    assert both.status == 422 and acme.get(NET).data["attributes"]["vcs-repo"]["branch"] == "main"
    switched = acme.patch(NET, doc("registry-modules", **{"vcs-repo": {"tags": True}}))
    assert switched.status == 200, switched.json
    attrs = switched.data["attributes"]
    assert attrs["publishing-mechanism"] == "git_tag" and attrs["vcs-repo"]["branch"] == ""
    drain()
    assert set(statuses(acme)) == {"0.9.0", "1.0.0", "1.1.0-rc.1", "1.1.0", "1.2.0"}
    # The tag v1.0.0 points elsewhere than the branch-made 1.0.0: reported, never replaced.
    report = acme.get(NET).data["attributes"]["vcs-sync"]
    moved = [s for s in report["skipped-tags"] if s["tag"] == "v1.0.0"]
    assert moved and "never change" in moved[0]["reason"]
    back = acme.patch(NET, doc("registry-modules", **{"vcs-repo": {"branch": "release"}}))
    assert back.status == 200 and back.data["attributes"]["publishing-mechanism"] == "branch"

    # The branch's newest commits, on go-tfe's and pytfe's paths; a missing branch is the
    # VCS host's answer (502), not ours.
    missing = acme.get(f"{NET}/commits")
    assert missing.status == 502 and "no branch 'release'" in missing.error["detail"]
    acme.patch(NET, doc("registry-modules", **{"vcs-repo": {"branch": "main"}}))
    commits = acme.get(f"{NET}/commits")
    assert commits.status == 200, commits.json
    assert [c["attributes"]["sha"] for c in commits.data] == [
        shas["net-main"],
        shas["net-1.2.0"],
        shas["net-1.1.0"],
        shas["net-1.0.0"],
    ]
    newest = commits.data[0]
    assert newest["type"] == "commits" and newest["attributes"]["message"] == "unreleased"
    assert newest["attributes"]["author"] == "Test"
    assert newest["attributes"]["url"].endswith(
        f"/acme/terraform-aws-net/commit/{shas['net-main']}"
    )
    assert newest["attributes"]["date"].endswith("Z")
    same = acme.get(f"{V2}/registry-modules/acme/net/aws/commits")
    assert same.status == 200 and same.data == commits.data


# ----- webhooks -----------------------------------------------------------------------------


def test_webhook_publishes_a_new_tag_and_refuses_forgeries(
    acme: Api, git_server: tuple[GitServer, dict[str, str]]
) -> None:
    server, shas = git_server
    token_id = connect(acme, server)
    created = publish(acme, token_id, "acme/terraform-aws-net")
    repo = created.data["attributes"]["vcs-repo"]
    secret, url = repo["webhook-secret"], repo["webhook-url"]
    path = url[url.index("/webhooks/") :]
    drain()
    assert "1.3.0" not in statuses(acme)

    # A new tag on the host, then its push delivery.
    git_repo = server.repos["acme/terraform-aws-net"]
    git_repo.refs[b"refs/tags/v1.3.0"] = shas["net-main"].encode()
    tag_push = {"ref": "refs/tags/v1.3.0", "after": shas["net-main"]}

    forged = deliver(acme, path, tag_push, "push", "not-the-secret")
    assert forged.status == 401, forged.json
    assert deliver(acme, path, tag_push, "push", None).status == 401
    assert drain() == [] and "1.3.0" not in statuses(acme)

    ignored = deliver(acme, path, {"ref": "refs/heads/main"}, "push", secret)
    assert ignored.status == 200 and ignored.json["status"] == "ignored"
    assert drain() == []

    accepted = deliver(acme, path, tag_push, "push", secret)
    assert accepted.status == 202, accepted.json
    drain()
    assert statuses(acme)["1.3.0"] == {"version": "1.3.0", "status": "ok"}

    unknown = "/webhooks/vcs/00000000-0000-0000-0000-000000000000"
    assert deliver(acme, unknown, tag_push, "push", secret).status == 404

    # Signed junk is acknowledged and ignored, never a server error.
    for content_type, junk in [
        ("application/json", "{not json"),
        ("application/json", "[1, 2]"),
        ("application/x-www-form-urlencoded", "payload=%ZZ&x"),
        ("application/x-www-form-urlencoded", ""),
    ]:
        digest = hmac.new(secret.encode(), junk.encode(), hashlib.sha256).hexdigest()
        headers = {"X-GitHub-Event": "push", "X-Hub-Signature-256": f"sha256={digest}"}
        reply = acme.as_(None).call(
            "POST", path, raw=junk, content_type=content_type, headers=headers
        )
        assert reply.status == 200 and reply.json["status"] == "ignored", (junk, reply.body)

    # A regenerated secret replaces the old one.
    fresh = acme.post(
        f"{V2}/registry-modules/{created.data['id']}/actions/regenerate-webhook-secret"
    )
    assert fresh.status == 200, fresh.json
    assert deliver(acme, path, {}, "ping", secret).status == 401
    ping = deliver(acme, path, {}, "ping", fresh.data["attributes"]["secret"])
    assert ping.status == 200 and ping.json["status"] == "ok"


def test_webhooks_are_added_and_removed_at_the_vcs_host(
    acme: Api, git_server: tuple[GitServer, dict[str, str]]
) -> None:
    server, _ = git_server
    with VcsApi() as host:
        token_id = connect(acme, server, api_url=host.url + "/api/v3")
        created = publish(acme, token_id, "acme/terraform-aws-net")
        repo = created.data["attributes"]["vcs-repo"]
        assert repo["webhook-registration"] == {"status": "pending", "detail": None}
        drain()
        registration = acme.get(NET).data["attributes"]["vcs-repo"]["webhook-registration"]
        assert registration == {"status": "registered", "detail": None}
        (added,) = host.requests
        assert (added.method, added.path) == ("POST", "/api/v3/repos/acme/terraform-aws-net/hooks")
        assert added.headers["authorization"] == f"Bearer {TOKEN}"
        assert added.body["config"]["url"] == repo["webhook-url"]
        assert added.body["config"]["secret"] == repo["webhook-secret"]
        assert set(added.body["events"]) == {"push", "create"}

        # A new secret replaces the hook; deleting the module removes it.
        module_id = created.data["id"]
        fresh = acme.post(f"{V2}/registry-modules/{module_id}/actions/regenerate-webhook-secret")
        drain()
        removed, replaced = host.requests[1:]
        assert (removed.method, removed.path) == ("DELETE", added.path + "/1")
        assert replaced.body["config"]["secret"] == fresh.data["attributes"]["secret"]
        assert list(host.hooks) == ["2"]
        assert acme.delete(f"{MODULES}/private/acme/net").status == 204
        drain()
        assert host.requests[-1].method == "DELETE" and host.hooks == {}

        # A host that refuses: visible, and retry adds it once the host accepts.
        host.refuse = 403
        again = publish(acme, token_id, "acme/terraform-aws-net")
        drain()
        registration = acme.get(NET).data["attributes"]["vcs-repo"]["webhook-registration"]
        assert registration["status"] == "failed" and "answered 403" in registration["detail"]
        assert TOKEN not in registration["detail"]
        host.refuse = None
        acme.post(f"{V2}/registry-modules/{again.data['id']}/actions/retry")
        drain()
        registration = acme.get(NET).data["attributes"]["vcs-repo"]["webhook-registration"]
        assert registration["status"] == "registered"

        # GitLab: the project path URL-encoded, the secret as the token, tag pushes only.
        gitlab = connect(acme, server, provider="gitlab_enterprise_edition", api_url=host.url)
        publish(acme, gitlab, "acme/terraform-aws-untagged")
        drain()
        added = host.requests[-1]
        assert added.path == "/projects/acme%2Fterraform-aws-untagged/hooks"
        assert added.body["tag_push_events"] is True and added.body["push_events"] is False
        assert added.body["token"]

    # Azure DevOps: added by hand, and the module says how.
    ado = connect(acme, server, provider="ado_server", api_url=server.url)
    publish(acme, ado, "acme/infra/_git/net", name="net", provider="azurerm")
    drain()
    module = acme.get(f"{MODULES}/private/acme/net/azurerm").data["attributes"]
    assert module["vcs-repo"]["webhook-registration"]["status"] == "manual"
    assert "Code pushed" in module["vcs-repo"]["webhook-registration"]["detail"]


def test_deleting_an_organization_removes_its_webhooks_at_the_vcs_host(
    api: Api, git_server: tuple[GitServer, dict[str, str]]
) -> None:
    """The organization's connections go in the same delete: the removal job must not need
    them (it once gave up with "oauth token not found" and left the hook at the host)."""
    server, _ = git_server
    make_org(api, "doomed")
    with VcsApi() as host:
        token_id = connect(api, server, org="doomed", api_url=host.url + "/api/v3")
        assert publish(api, token_id, "acme/terraform-aws-net", org="doomed").status == 201
        drain()
        assert list(host.hooks) == ["1"]
        assert api.delete(f"{V2}/organizations/doomed").status == 204
        drain()
        assert host.hooks == {}
        removed = host.requests[-1]
        assert (removed.method, removed.path) == (
            "DELETE",
            "/api/v3/repos/acme/terraform-aws-net/hooks/1",
        )
        assert removed.headers["authorization"] == f"Bearer {TOKEN}"


def test_bitbucket_hook_paths_and_bodies() -> None:
    from chalicelib.vcs import hooks

    token = "bb-access-token-7d1"

    with VcsApi() as host:
        cloud = hooks.register(
            "bitbucket_hosted", host.url, token, "team/terraform-aws-net", "https://r/w/1", "s1"
        )
        server = hooks.register(
            "bitbucket_data_center", host.url + "/", token, "PROJ/net", "https://r/w/2", "s2"
        )
        first, second = host.requests
        assert first.path == "/2.0/repositories/team/terraform-aws-net/hooks"
        assert first.body["events"] == ["repo:push"] and first.body["secret"] == "s1"
        assert second.path == "/rest/api/1.0/projects/PROJ/repos/net/webhooks"
        assert second.body["events"] == ["repo:refs_changed"]
        assert second.body["configuration"] == {"secret": "s2"}
        assert (cloud, server) == ("1", "2")
        hooks.unregister("bitbucket_hosted", host.url, token, "team/terraform-aws-net", cloud)
        assert host.requests[-1].path == first.path + "/1"
        # Already gone counts as removed; other refusals are errors without the token.
        hooks.unregister("bitbucket_hosted", host.url, token, "team/terraform-aws-net", cloud)
        host.refuse = 500
        with pytest.raises(hooks.HookError, match="answered 500") as refused:
            hooks.unregister("bitbucket_data_center", host.url, token, "PROJ/net", server)
        assert token not in str(refused.value)


def test_provider_signature_schemes() -> None:
    from chalicelib.vcs import deliveries

    body = b'{"ref": "refs/tags/v1.0.0"}'
    mac = hmac.new(b"s3cret", body, hashlib.sha256).hexdigest()
    assert deliveries.verify("github", "s3cret", {"X-Hub-Signature-256": f"sha256={mac}"}, body)
    assert not deliveries.verify("github", "s3cret", {"X-Hub-Signature-256": f"sha256={mac}"}, b"x")
    assert deliveries.verify(
        "bitbucket_server", "s3cret", {"X-Hub-Signature": f"sha256={mac}"}, body
    )
    assert deliveries.verify("gitlab_hosted", "s3cret", {"X-Gitlab-Token": "s3cret"}, body)
    assert not deliveries.verify("gitlab_hosted", "s3cret", {"X-Gitlab-Token": "guess"}, body)
    import base64

    basic = "Basic " + base64.b64encode(b"hook:s3cret").decode()
    assert deliveries.verify("ado_services", "s3cret", {"Authorization": basic}, body)
    assert not deliveries.verify("ado_services", "s3cret", {"Authorization": "Basic !!"}, body)

    def kind(provider: str, headers: dict[str, str], payload: Any) -> str:
        return deliveries.classify(provider, headers, json.dumps(payload).encode()).kind

    assert kind("gitlab_hosted", {"X-Gitlab-Event": "Tag Push Hook"}, {}) == deliveries.TAGS
    assert kind("gitlab_hosted", {"X-Gitlab-Event": "Push Hook"}, {}) == deliveries.IGNORED
    cloud = {"push": {"changes": [{"new": {"type": "tag", "name": "v1.0.0"}}]}}
    assert kind("bitbucket_hosted", {"X-Event-Key": "repo:push"}, cloud) == deliveries.TAGS
    server = {"changes": [{"ref": {"type": "TAG", "id": "refs/tags/v1.0.0"}}]}
    assert kind("bitbucket_data_center", {"X-Event-Key": "repo:refs_changed"}, server) == "tags"
    ado = {"eventType": "git.push", "resource": {"refUpdates": [{"name": "refs/tags/v2.0.0"}]}}
    assert kind("ado_server", {}, ado) == deliveries.TAGS
    assert kind("github", {"X-GitHub-Event": "create"}, {"ref_type": "tag"}) == deliveries.TAGS
    assert kind("github", {"X-GitHub-Event": "issues"}, {}) == deliveries.IGNORED
    form = deliveries.classify(
        "github",
        {"X-GitHub-Event": "push", "Content-Type": "application/x-www-form-urlencoded"},
        b"payload=%7B%22ref%22%3A%22refs%2Ftags%2Fv1.0.0%22%7D",
    )
    assert form.kind == deliveries.TAGS


# ----- requests that are refused ------------------------------------------------------------


def test_invalid_publish_requests_are_422_and_create_nothing(
    acme: Api, git_server: tuple[GitServer, dict[str, str]]
) -> None:
    server, _ = git_server
    token_id = connect(acme, server)
    make_org(acme, "other")
    foreign = connect(acme, server, org="other")
    net = "acme/terraform-aws-net"
    cases: list[tuple[dict[str, Any], str, str]] = [
        ({"vcs-repo": {"oauth-token-id": token_id}}, "vcs-repo/identifier", "required"),
        ({"vcs-repo": {"identifier": net}}, "vcs-repo/oauth-token-id", "required"),
        ({"vcs-repo": {"identifier": net, "oauth-token-id": "ot-nope"}}, "oauth-token-id", ""),
        ({"vcs-repo": {"identifier": net, "oauth-token-id": foreign}}, "oauth-token-id", ""),
        (
            {"vcs-repo": {"identifier": net, "github-app-installation-id": "ghain-1"}},
            "vcs-repo/github-app-installation-id",
            "GitHub App",
        ),
        (
            {"vcs-repo": {"identifier": "acme/my repo", "oauth-token-id": token_id}},
            "vcs-repo/identifier",
            "no spaces",
        ),
        (
            {"vcs-repo": {"identifier": net, "oauth-token-id": token_id, "branch": "a..b"}},
            "vcs-repo/branch",
            "branch name",
        ),
        (
            {
                "vcs-repo": {
                    "identifier": net,
                    "oauth-token-id": token_id,
                    "branch": "main",
                    "tags": True,
                }
            },
            "vcs-repo/tags",
            "cannot be combined",
        ),
        (
            {"vcs-repo": {"identifier": net, "oauth-token-id": token_id, "source-directory": ".."}},
            "vcs-repo/source-directory",
            "source directory",
        ),
        (
            {"vcs-repo": {"identifier": net, "oauth-token-id": token_id}, "initial-version": "1"},
            "initial-version",
            "branch-based",
        ),
        (
            {
                "vcs-repo": {"identifier": net, "oauth-token-id": token_id},
                "test-config": {"tests-enabled": True},
            },
            "test-config/tests-enabled",
            "branch",
        ),
        ({"vcs-repo": {"identifier": 7, "oauth-token-id": token_id}}, "identifier", ""),
        ({"vcs-repo": "acme/net"}, "vcs-repo", ""),
    ]
    for attributes, pointer, words in cases:
        reply = acme.post(f"{MODULES}/vcs", doc("registry-modules", **attributes))
        assert reply.status == 422, (attributes, reply.json)
        assert reply.error["source"]["pointer"].endswith(pointer), (attributes, reply.error)
        assert words in reply.error["detail"], (attributes, reply.error)
    assert acme.get(MODULES).data == []
    assert drain() == []

    # Publishing needs manage-modules; a second publish of the same module is a 422.
    _, reader = make_team(acme, "acme", "readers")
    hidden = publish(acme.as_(reader), token_id, net)
    assert hidden.status == 404
    assert publish(acme, token_id, net).status == 201
    duplicate = publish(acme, token_id, net)
    assert duplicate.status == 422 and "already exists" in duplicate.error["detail"]

    # Non-VCS modules take no vcs-repo PATCH and have no resync.
    plain = acme.post(MODULES, doc("registry-modules", name="plain", provider="aws"))
    assert "vcs-repo" not in plain.data["attributes"]
    refused = acme.patch(
        f"{MODULES}/private/acme/plain/aws", doc("registry-modules", **{"vcs-repo": {"tags": True}})
    )
    assert refused.status == 422
    assert acme.post(f"{V2}/registry-modules/{plain.data['id']}/actions/resync").status == 422
    assert acme.get(f"{MODULES}/private/acme/plain/aws/commits").status == 404


def test_deprecated_path_takes_the_organization_from_the_token(
    acme: Api, git_server: tuple[GitServer, dict[str, str]]
) -> None:
    server, _ = git_server
    token_id = connect(acme, server)
    body = doc(
        "registry-modules",
        **{
            "vcs-repo": {
                "identifier": "acme/terraform-aws-net",
                "oauth-token-id": token_id,
                "display_identifier": "Acme / net",
            }
        },
    )
    created = acme.post(f"{V2}/registry-modules", body)
    assert created.status == 201, created.json
    assert created.data["relationships"]["organization"]["data"]["id"] == "acme"
    assert created.data["attributes"]["vcs-repo"]["display-identifier"] == "Acme / net"
    assert acme.get(NET).status == 200


def test_deprecated_path_does_not_tell_whose_an_oauth_token_is(
    acme: Api, git_server: tuple[GitServer, dict[str, str]]
) -> None:
    """Another organization's ``ot-`` id and a made-up one get the same answer."""
    server, _ = git_server
    make_org(acme, "rival")
    rivals = connect(acme, server, org="rival")
    _, outsider = make_team(acme, "acme", "ci", manage_modules=True)

    def attempt(token_id: str) -> Any:
        repo = {"identifier": "acme/terraform-aws-net", "oauth-token-id": token_id}
        reply = acme.as_(outsider).post(
            f"{V2}/registry-modules", doc("registry-modules", **{"vcs-repo": repo})
        )
        assert reply.status == 422, reply.json
        return reply.error

    foreign, unknown = attempt(rivals), attempt("ot-doesNotExist0000")
    assert "rival" not in json.dumps(foreign)
    assert foreign["detail"].replace(rivals, "ID") == unknown["detail"].replace(
        "ot-doesNotExist0000", "ID"
    )
    assert foreign["source"] == unknown["source"]
