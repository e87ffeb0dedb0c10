"""Publishing from VCS for the tests: a connection to the stand-in git server, a module
published from it, and ``drain``, which plays the ingest queue's SQS event source mapping."""

from __future__ import annotations

import json
from typing import Any

from chalicelib.core.data.aws import client
from chalicelib.core.settings import get_settings
from tests.conftest import Api, doc
from tests.support.vcs_git_server import TOKEN, GitServer

V2 = "/api/v2"


MODULES = f"{V2}/organizations/acme/registry-modules"


NET = f"{MODULES}/private/acme/net/aws"


def drain(limit: int = 200, *, run: bool = True) -> list[str]:
    """Run every message on the ingest queue through the ingest handler (or just drop them
    with ``run=False``, a lost event); the job kinds seen (``s3`` for upload events)."""
    from chalicelib.entry.ingest import handle_body as handle_sqs_body

    sqs = client("sqs")
    url = sqs.get_queue_url(QueueName=get_settings().ingest_queue)["QueueUrl"]
    seen: list[str] = []
    for _ in range(limit):
        messages = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10).get("Messages", [])
        if not messages:
            return seen
        for message in messages:
            body = json.loads(message["Body"])
            if "kind" in body or "Records" in body:  # not S3's one-off test event
                seen.append(body.get("kind") or "s3")
            if run:
                handle_sqs_body(message["Body"])
            sqs.delete_message(QueueUrl=url, ReceiptHandle=message["ReceiptHandle"])
    raise AssertionError("the ingest queue never emptied")


def connect(
    api: Api,
    server: GitServer,
    token: str = TOKEN,
    org: str = "acme",
    *,
    provider: str = "github_enterprise",
    api_url: str | None = None,
) -> str:
    """An OAuth client for the loopback git server (and a REST API at ``api_url``); returns
    its OAuth token id."""
    reply = api.post(
        f"{V2}/organizations/{org}/oauth-clients",
        doc(
            "oauth-clients",
            **{
                "service-provider": provider,
                "http-url": server.url,
                "api-url": api_url or server.url + "/api/v3",
                "oauth-token-string": token,
            },
        ),
    )
    assert reply.status == 201, reply.json
    return reply.data["relationships"]["oauth-tokens"]["data"][0]["id"]


def publish(api: Api, token_id: str, identifier: str, org: str = "acme", **extra: Any) -> Any:
    repo = {"identifier": identifier, "oauth-token-id": token_id, "display-identifier": identifier}
    repo.update(extra.pop("vcs_repo", {}))
    return api.post(
        f"{V2}/organizations/{org}/registry-modules/vcs",
        doc("registry-modules", **{"vcs-repo": repo}, **extra),
    )
