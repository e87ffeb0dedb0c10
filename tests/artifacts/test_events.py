"""Queue messages reach the artifact type that owns their upload prefix."""

from __future__ import annotations

import json
from typing import Any

from chalicelib.artifacts import events


def _s3_event(*keys: str, name: str = "ObjectCreated:Put") -> str:
    return json.dumps(
        {
            "Records": [
                {"eventSource": "aws:s3", "eventName": name, "s3": {"object": {"key": k}}}
                for k in keys
            ]
        }
    )


def test_uploads_go_to_the_owner_of_their_decoded_prefix_and_jobs_to_the_runner() -> None:
    seen: dict[str, list[Any]] = {"modules": [], "providers": [], "jobs": []}
    uploads = {
        "v1/object/": lambda: lambda record: seen["modules"].append(record["s3"]["object"]),
        "v1/provider/": lambda: lambda record: seen["providers"].append(record),
    }
    jobs = lambda: seen["jobs"].append  # noqa: E731

    # S3 sends keys URL-encoded: the prefix must match the decoded key.
    events.dispatch(_s3_event("v1%2Fobject%2Fmod-1%2F1.0.0%2Fv+1.tar.gz"), uploads, jobs)
    events.dispatch(_s3_event("v1/provider/p/1.0.0/x.zip"), uploads, jobs)
    events.dispatch(_s3_event("v1/archives/mod-1/v.tar.gz"), uploads, jobs)  # nobody's
    events.dispatch(_s3_event("v1/object/x", name="ObjectRemoved:Delete"), uploads, jobs)
    events.dispatch(json.dumps({"Event": "s3:TestEvent"}), uploads, jobs)
    events.dispatch(json.dumps({"kind": "vcs-sync", "module_id": "m"}), uploads, jobs)

    assert [o["key"] for o in seen["modules"]] == ["v1%2Fobject%2Fmod-1%2F1.0.0%2Fv+1.tar.gz"]
    assert len(seen["providers"]) == 1
    assert seen["jobs"] == [{"kind": "vcs-sync", "module_id": "m"}]
    assert events.uploaded_keys(json.loads(_s3_event("a%2Fb+c")))[0][0] == "a/b c"
