"""Tag counts under concurrency, through the real local stack (threaded API + moto server).

Many parallel tag/untag requests against the same few tags and workspaces; afterwards every
tag's ``instance-count`` must equal the number of (tag, workspace) pair items and the number
of workspaces whose ``tag-names`` carry it, and no tag may be listed with a count of 0.
"""

from __future__ import annotations

import random
from collections import Counter
from concurrent.futures import ThreadPoolExecutor

import boto3
import pytest

from tests.e2e.conftest import Stack

pytestmark = pytest.mark.e2e

ORG = "concurrent-co"
TAGS = ["hot", "warm", "cold", "env:prod"]
WORKSPACES = 6
REQUESTS = 80


def _body(names: list[str]) -> dict:
    return {"data": [{"type": "tags", "attributes": {"name": n}} for n in names]}


def test_parallel_tagging_keeps_counts_exact(stack: Stack) -> None:
    admin = stack.session()
    reply = admin.post(
        stack.api("/organizations"),
        json={"data": {"type": "organizations", "attributes": {"name": ORG, "email": "o@x.io"}}},
    )
    assert reply.status_code == 201, reply.text
    ids = []
    for index in range(WORKSPACES):
        reply = admin.post(
            stack.api(f"/organizations/{ORG}/workspaces"),
            json={"data": {"type": "workspaces", "attributes": {"name": f"ws-{index}"}}},
        )
        assert reply.status_code == 201, reply.text
        ids.append(reply.json()["data"]["id"])

    rng = random.Random(4)
    plan = [
        (rng.choice(("POST", "DELETE")), rng.choice(ids), rng.sample(TAGS, rng.randint(1, 2)))
        for _ in range(REQUESTS)
    ]

    def run(step: tuple[str, str, list[str]]) -> int:
        method, workspace_id, names = step
        session = stack.session()
        path = stack.api(f"/workspaces/{workspace_id}/relationships/tags")
        return session.request(method, path, json=_body(names), timeout=60).status_code

    with ThreadPoolExecutor(max_workers=12) as pool:
        statuses = Counter(pool.map(run, plan))
    assert set(statuses) <= {204, 409}, statuses  # 409 only if retries ran out
    assert statuses[204] >= REQUESTS * 0.9, statuses

    listed = admin.get(stack.api(f"/organizations/{ORG}/tags?page[size]=100")).json()["data"]
    counts = {t["attributes"]["name"]: t["attributes"]["instance-count"] for t in listed}
    tag_ids = {t["attributes"]["name"]: t["id"] for t in listed}
    assert all(count >= 1 for count in counts.values()), counts

    carried: Counter[str] = Counter()
    for workspace_id in ids:
        names = admin.get(stack.api(f"/workspaces/{workspace_id}")).json()["data"]["attributes"][
            "tag-names"
        ]
        assert len(names) == len(set(names))
        related = admin.get(stack.api(f"/workspaces/{workspace_id}/relationships/tags")).json()
        assert [t["attributes"]["name"] for t in related["data"]] == names
        carried.update(names)
    assert counts == dict(carried)

    dynamodb = boto3.client(
        "dynamodb",
        endpoint_url=stack.moto_url,
        region_name="us-east-1",
        aws_access_key_id="local",
        aws_secret_access_key="local",
    )
    for name, tag_id in tag_ids.items():
        pairs = dynamodb.query(
            TableName="registry-dev-tag-workspaces",
            KeyConditionExpression="tag_id = :t",
            ExpressionAttributeValues={":t": {"S": tag_id}},
            ConsistentRead=True,
        )["Items"]
        assert len(pairs) == counts[name], name

    # Deleting the workspaces in parallel leaves no tag behind.
    with ThreadPoolExecutor(max_workers=len(ids)) as pool:
        codes = list(pool.map(lambda i: stack.session().delete(stack.api(f"/workspaces/{i}")), ids))
    assert {c.status_code for c in codes} == {204}
    assert admin.get(stack.api(f"/organizations/{ORG}/tags")).json()["data"] == []
