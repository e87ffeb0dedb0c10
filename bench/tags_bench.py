"""Organization tags: DynamoDB calls of listing an organization's 5,000 tags, and of a bulk
delete of 100 tags (each on one workspace, then each on three).

Runs the real routes through Chalice's test client on moto (in-process) and counts every
DynamoDB operation PynamoDB sends; latencies are moto's, the call counts carry over to AWS.
A team token with manage-workspaces is used, so the counts include authentication.
"""

from __future__ import annotations

import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.common import CALLS, counting_dynamodb  # noqa: E402

ORG = "bench-tags"


def seed_tags(count: int) -> None:
    """``count`` tags written directly (each as if on one workspace), and the organization's
    kept count: listing reads only the tags partition and the count."""
    from chalicelib.core.data.ids import new_id, now
    from chalicelib.tags.store import TagIdModel, TagModel, set_count, tag_count

    moment = now()
    with TagModel.batch_write() as tags, TagIdModel.batch_write() as ids:
        for index in range(count):
            tag_id, name = new_id("tag"), f"bulk-{index:05d}"
            tags.save(TagModel(ORG, name, id=tag_id, instance_count=1, created_at=moment))
            ids.save(TagIdModel(tag_id, organization=ORG, name=name))
    set_count(ORG, (tag_count(ORG) or 0) + count)  # as the writes keep it


def seed_tagged(client: Any, token: str, tags: int, workspaces: int, prefix: str) -> list[str]:
    """``tags`` tags, each on ``workspaces`` workspaces, through the API; their ids."""
    for w in range(workspaces):
        reply = call(
            client,
            token,
            "POST",
            f"/api/v2/organizations/{ORG}/workspaces",
            {"data": {"type": "workspaces", "attributes": {"name": f"{prefix}-{w}"}}},
        )
        workspace_id = json.loads(reply.body)["data"]["id"]
        body = {
            "data": [
                {"type": "tags", "attributes": {"name": f"{prefix}-{t:03d}"}} for t in range(tags)
            ]
        }
        reply = call(
            client, token, "POST", f"/api/v2/workspaces/{workspace_id}/relationships/tags", body
        )
        assert reply.status_code == 204, reply.body
    listed = call(
        client, token, "GET", f"/api/v2/organizations/{ORG}/tags?q={prefix}-&page[size]=100"
    )
    return [t["id"] for t in json.loads(listed.body)["data"]]


def call(client: Any, token: str, method: str, path: str, body: Any = None) -> Any:
    headers = {"Content-Type": "application/vnd.api+json", "Authorization": f"Bearer {token}"}
    payload = json.dumps(body) if body is not None else None
    return getattr(client.http, method.lower())(path, headers=headers, body=payload)


def measure(client: Any, token: str, method: str, path: str, body: Any = None) -> tuple:
    CALLS.clear()
    started = time.perf_counter()
    reply = call(client, token, method, path, body)
    elapsed = time.perf_counter() - started
    assert reply.status_code < 300, (path, reply.status_code, reply.body)
    detail = ", ".join(f"{op} {n}" for op, n in sorted(CALLS.items()))
    return sum(CALLS.values()), detail, elapsed


def main() -> None:
    from chalice.test import Client
    from moto import mock_aws

    with mock_aws():
        from app import app
        from chalicelib.accounts.organizations.service import create_organization
        from chalicelib.accounts.teams.service import create_team
        from chalicelib.accounts.tokens.service import create_team_token
        from chalicelib.accounts.users.service import bootstrap_admin
        from chalicelib.core.auth import Principal
        from infrastructure.resources import provision

        provision()
        admin_user, _ = bootstrap_admin("bench-admin")
        admin = Principal("user", admin_user.id, "bench")
        create_organization(admin, ORG, "bench@example.com", limited=False)
        team = create_team(admin, ORG, "ops", None, {"manage_workspaces": True})
        _, token = create_team_token(admin, team.id, None)
        rows = []
        with Client(app, project_dir=tempfile.mkdtemp()) as client, counting_dynamodb():
            base = f"/api/v2/organizations/{ORG}/tags"
            # Bulk deletes first: moto deep-copies a whole table per transaction, which is
            # slow with 5,000 tags in it (the call counts do not depend on the order).
            deletes = []
            for per_tag in (1, 3):
                ids = seed_tagged(client, token, 100, per_tag, f"del{per_tag}")
                assert len(ids) == 100
                body = {"data": [{"type": "tags", "id": i} for i in ids]}
                deletes.append(
                    (
                        f"bulk delete 100 tags, each on {per_tag} workspace(s)",
                        *measure(client, token, "DELETE", base, body),
                    )
                )
            seed_tags(5000)
            rows.append(("list 5,000 tags, page 1 (20)", *measure(client, token, "GET", base)))
            rows.append(
                (
                    "list 5,000 tags, page 50 of 100",
                    *measure(client, token, "GET", base + "?page[size]=100&page[number]=50"),
                )
            )
            rows.append(
                (
                    "list 5,000 tags, q=bulk-0499",
                    *measure(client, token, "GET", base + "?q=bulk-0499"),
                )
            )
            rows += deletes

    print(f"{'operation':46} {'calls':>6}  {'moto ms':>8}  detail")
    for name, total, detail, elapsed in rows:
        print(f"{name:46} {total:6d}  {elapsed * 1000:8.0f}  {detail}")


if __name__ == "__main__":
    main()
