"""Publishing from VCS: a repository with 30 SemVer tags of the ~80-file benchmark module,
served by a real dulwich smart-HTTP server on loopback, published through the real routes
and jobs on moto (in-process).

Prints the DynamoDB calls of the publish request, of the webhook registration job (against
the local stand-in of a VCS host's API), of the tag sync job and of a webhook delivery; the
registration's and the sync's wall time; the median time of one version's git fetch + pack (the
``vcs-fetch`` job) and of its ingest. In AWS every job is its own Lambda invocation, so the
versions of one sync are fetched and ingested in parallel; here they run one after another.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.common import CALLS, allow_bursts, counting_dynamodb  # noqa: E402
from bench.ingest_bench import generate_module  # noqa: E402

TAGS = 30
ORG = "bench-vcs"


def build_repository() -> Any:
    from tests.support.vcs_git_server import RepoBuilder

    files = dict(generate_module())
    builder = RepoBuilder()
    for minor in range(TAGS):
        files["version.tf"] = f'locals {{\n  release = "1.{minor}.0"\n}}\n'.encode()
        builder.commit(dict(files), f"release 1.{minor}.0")
        builder.tag(f"v1.{minor}.0", annotated=minor % 2 == 0)
    return builder.repo


def main() -> None:
    from chalice.test import Client
    from moto import mock_aws

    from tests.support.vcs_api_server import VcsApi
    from tests.support.vcs_git_server import TOKEN, GitServer

    repos = {"acme/terraform-aws-big": build_repository()}
    with GitServer(repos) as server, VcsApi() as host_api, mock_aws():
        from app import app
        from chalicelib.accounts.users.service import bootstrap_admin
        from chalicelib.artifacts import queue as jobs
        from chalicelib.core.data.aws import client as aws_client
        from chalicelib.core.settings import get_settings
        from chalicelib.modules.ingest.handler import handle_s3_record
        from chalicelib.modules.publishing import worker
        from infrastructure.resources import provision

        provision()
        bootstrap_admin("bench-admin")
        allow_bursts()
        sqs = aws_client("sqs")
        queue = sqs.get_queue_url(QueueName=get_settings().ingest_queue)["QueueUrl"]

        def receive_all() -> list[dict[str, Any]]:
            bodies = []
            while True:
                batch = sqs.receive_message(QueueUrl=queue, MaxNumberOfMessages=10).get(
                    "Messages", []
                )
                if not batch:
                    return bodies
                for message in batch:
                    body = json.loads(message["Body"])
                    if "kind" in body or "Records" in body:
                        bodies.append(body)
                    sqs.delete_message(QueueUrl=queue, ReceiptHandle=message["ReceiptHandle"])

        def call(token: str, method: str, path: str, body: Any = None, **headers: str) -> Any:
            head = {"Content-Type": "application/vnd.api+json", **headers}
            if token:
                head["Authorization"] = f"Bearer {token}"
            raw = body if isinstance(body, str) else json.dumps(body) if body else None
            reply = getattr(http.http, method.lower())(path, headers=head, body=raw)
            assert reply.status_code < 300, (path, reply.status_code, reply.body)
            return json.loads(reply.body) if reply.body else None

        def doc(type_: str, **attributes: Any) -> dict[str, Any]:
            return {"data": {"type": type_, "attributes": attributes}}

        with Client(app, project_dir=tempfile.mkdtemp()) as http, counting_dynamodb():
            admin = "bench-admin"
            call(
                admin, "POST", "/api/v2/organizations", doc("organizations", name=ORG, email="o@x")
            )
            connection = call(
                admin,
                "POST",
                f"/api/v2/organizations/{ORG}/oauth-clients",
                doc(
                    "oauth-clients",
                    **{
                        "service-provider": "github_enterprise",
                        "http-url": server.url,
                        "api-url": host_api.url,
                        "oauth-token-string": TOKEN,
                    },
                ),
            )
            token_id = connection["data"]["relationships"]["oauth-tokens"]["data"][0]["id"]
            receive_all()

            CALLS.clear()
            created = call(
                admin,
                "POST",
                f"/api/v2/organizations/{ORG}/registry-modules/vcs",
                doc(
                    "registry-modules",
                    **{
                        "vcs-repo": {
                            "identifier": "acme/terraform-aws-big",
                            "oauth-token-id": token_id,
                        }
                    },
                ),
            )
            publish_calls = dict(CALLS)
            queued = {job["kind"]: job for job in receive_all()}

            CALLS.clear()
            started = time.perf_counter()
            assert worker.run(queued[jobs.HOOK]) == "registered"
            hook_ms = (time.perf_counter() - started) * 1000
            hook_calls = dict(CALLS)
            sync = queued[jobs.SYNC]

            CALLS.clear()
            started = time.perf_counter()
            worker.run(sync)
            sync_ms = (time.perf_counter() - started) * 1000
            sync_calls = dict(CALLS)

            fetch_ms, ingest_ms = [], []
            for job in receive_all():
                started = time.perf_counter()
                worker.run(job)
                fetch_ms.append((time.perf_counter() - started) * 1000)
                (event,) = receive_all()
                started = time.perf_counter()
                assert handle_s3_record(event["Records"][0]) == "ok"
                ingest_ms.append((time.perf_counter() - started) * 1000)

            secret = created["data"]["attributes"]["vcs-repo"]["webhook-secret"]
            url = created["data"]["attributes"]["vcs-repo"]["webhook-url"]
            body = json.dumps({"ref": "refs/tags/v9.9.9"})
            signature = hmac.new(secret.encode(), body.encode(), hashlib.sha256).hexdigest()
            CALLS.clear()
            call(
                "",
                "POST",
                url[url.index("/webhooks/") :],
                body,
                **{
                    "Content-Type": "application/json",
                    "X-GitHub-Event": "push",
                    "X-Hub-Signature-256": f"sha256={signature}",
                },
            )
            webhook_calls = dict(CALLS)

    def show(calls: dict[str, int]) -> str:
        detail = ", ".join(f"{op} {n}" for op, n in sorted(calls.items()))
        return f"{sum(calls.values()):>3}   ({detail})"

    print(
        f"Publishing from VCS ({TAGS} tags of a {len(generate_module())}-file module, "
        "loopback git):"
    )
    print(f"  DynamoDB calls, publish request              {show(publish_calls)}")
    print(f"  DynamoDB calls, tag sync job ({TAGS} new)       {show(sync_calls)}")
    print(f"  DynamoDB calls, webhook registration job     {show(hook_calls)}")
    print(f"  DynamoDB calls, webhook delivery             {show(webhook_calls)}")
    print(f"  webhook registration job (local API)         {hook_ms:8.1f} ms")
    print(f"  tag sync job (list tags, {TAGS} versions)       {sync_ms:8.1f} ms")
    print(f"  one version: git fetch + pack + put (median) {statistics.median(fetch_ms):8.1f} ms")
    print(f"  one version: ingest (median)                 {statistics.median(ingest_ms):8.1f} ms")


if __name__ == "__main__":
    main()
