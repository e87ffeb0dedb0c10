"""Bundles carry the module cache's versions (``cached-module`` entries): exported by
address (``cache/<namespace>/<name>/<provider>``) and constraint, imported into the target's
cache (the archive under its digest, its ingested metadata, the cache table's item), checked
by digest; identical skipped, other content refused. The imported version then installs
with the upstream down. One registry plays both sides: the cache is emptied after the
export (the two-stack test is tests/e2e/test_bundles_e2e.py)."""

from __future__ import annotations

import hashlib
import json
from typing import Any

import pytest

from chalicelib.core.data.aws import client
from chalicelib.core.settings import get_settings
from chalicelib.modules.cache import store
from tests.bundles.test_bundles import _export, _import, _members, _tar
from tests.conftest import Api, tar_gz
from tests.modules.test_module_cache import (
    ARCHIVE,
    MODULE,
    V1,
    cached_objects,
    served,
    upstream,  # noqa: F401 - the fixture, for ``origin``
)
from tests.support.mirror_upstream import Upstream

SELECTION = {"modules": [{"address": f"cache/{MODULE}", "version": ">= 5.0.0"}]}
DIGEST = hashlib.sha256(ARCHIVE).hexdigest()
PATH = f"cached-modules/{MODULE}/5.0.0.tar.gz"


@pytest.fixture
def origin(upstream: Upstream) -> Upstream:  # noqa: F811 - the imported fixture
    """The source registry's upstream (a local stand-in), the cache allowed for it."""
    return upstream


def _emptied_cache() -> None:
    """The target before the import: nothing cached, nothing kept of the upstream."""
    for item in store.CachedModel.scan():
        item.delete()
    s3 = client("s3")
    for key in cached_objects():
        s3.delete_object(Bucket=get_settings().bucket, Key=key)


def _manifest_entry(address: str, version: str, data: bytes, path: str) -> dict[str, Any]:
    file = {"path": path, "sha256": hashlib.sha256(data).hexdigest(), "size": len(data)}
    return {
        "kind": "cached-module",
        "address": address,
        "version": version,
        "files": [{**file, "role": "archive"}],
    }


def _bundle(entries: list[dict[str, Any]], files: dict[str, bytes]) -> bytes:
    manifest = {"format": "registry-bundle", "format-version": 1, "entries": entries}
    return _tar({**files, "manifest.json": json.dumps(manifest).encode()})


def test_a_cached_module_travels_and_installs_with_the_upstream_down(
    api: Api, origin: Upstream
) -> None:
    assert api.get(f"{V1}/{MODULE}/versions").status == 200
    assert api.get(f"{V1}/{MODULE}/5.0.0/download").status == 204
    shown, bundle = _export(api, SELECTION)
    members = _members(bundle)
    (entry,) = json.loads(members["manifest.json"])["entries"]
    assert (entry["kind"], entry["address"], entry["version"]) == ("cached-module", MODULE, "5.0.0")
    assert entry["identity"] == DIGEST and entry["source-host"].startswith("127.0.0.1:")
    assert entry["files"] == [
        {"path": PATH, "sha256": DIGEST, "size": len(ARCHIVE), "role": "archive"}
    ]
    assert members[PATH] == ARCHIVE
    assert [r["result"] for r in shown["attributes"]["report"]] == ["exported"]

    _emptied_cache()
    origin.close()  # the target never reaches it
    asked = len(origin.requests)
    report = _import(api, bundle)
    assert report["status"] == "finished", report
    assert [(r["kind"], r["result"]) for r in report["report"]] == [("cached-module", "created")]
    item = store.cached_version(MODULE, "5.0.0")
    assert item is not None and (item.sha256, item.size) == (DIGEST, len(ARCHIVE))
    assert item.identity == DIGEST and item.source_host == entry["source-host"]
    assert cached_objects() == [f"v1/cache/{DIGEST}.json.gz", f"v1/cache/{DIGEST}.tar.gz"]

    versions = api.get(f"{V1}/{MODULE}/versions")  # the upstream down: the cached, stale
    assert versions.status == 200, versions.json
    assert [v["version"] for v in versions.json["modules"][0]["versions"]] == ["5.0.0"]
    download = api.get(f"{V1}/{MODULE}/5.0.0/download")
    assert download.status == 204 and served(download.headers["X-Terraform-Get"]) == ARCHIVE
    detail = api.get(f"{V1}/{MODULE}/5.0.0")
    assert [i["name"] for i in detail.json["root"]["inputs"]] == ["cidr"]  # ingested
    assert len(origin.requests) == asked

    again = _import(api, bundle)
    assert [r["result"] for r in again["report"]] == ["skipped"]


def test_a_version_cached_with_other_content_is_refused_and_kept(
    api: Api, origin: Upstream
) -> None:
    assert api.get(f"{V1}/{MODULE}/5.0.0/download").status == 204
    other = tar_gz({"main.tf": 'variable "other" {}\n'})
    bundle = _bundle([_manifest_entry(MODULE, "5.0.0", other, PATH)], {PATH: other})
    report = _import(api, bundle)
    (outcome,) = report["report"]
    assert outcome["result"] == "refused"
    assert "cached here with other content" in outcome["reason"]
    item = store.cached_version(MODULE, "5.0.0")
    assert item is not None and item.sha256 == DIGEST  # never replaced
    assert f"v1/cache/{hashlib.sha256(other).hexdigest()}.tar.gz" not in cached_objects()


def test_a_cached_module_that_is_no_module_archive_is_refused(api: Api) -> None:
    junk = tar_gz({"notes.txt": "no terraform here"})
    bundle = _bundle([_manifest_entry(MODULE, "5.0.0", junk, PATH)], {PATH: junk})
    report = _import(api, bundle)
    (outcome,) = report["report"]
    assert outcome["result"] == "refused" and outcome["reason"], outcome
    assert store.cached_version(MODULE, "5.0.0") is None


def test_a_changed_cached_archive_refuses_the_whole_bundle(api: Api) -> None:
    entry = _manifest_entry(MODULE, "5.0.0", ARCHIVE, PATH)
    bundle = _bundle([entry], {PATH: ARCHIVE + b"tampered"})
    report = _import(api, bundle)
    assert report["status"] == "failed" and "sha256" in (report.get("error") or ""), report
    assert store.cached_version(MODULE, "5.0.0") is None and cached_objects() == []


def test_an_export_of_nothing_cached_fails_with_its_reason(api: Api, origin: Upstream) -> None:
    reply = api.post(
        "/api/v2/admin/bundle-exports",
        {"data": {"type": "bundle-exports", "attributes": SELECTION}},
    )
    assert reply.status == 202, reply.json
    from tests.bundles.test_bundles import _run_queue

    _run_queue()
    shown = api.get(f"/api/v2/admin/bundle-exports/{reply.data['id']}").data["attributes"]
    assert shown["status"] == "failed" and "no published version" in shown["error"], shown
