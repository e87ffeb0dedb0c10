"""Lists that page with keys: bytes read from DynamoDB and calls per request, at 20, 2,000 and
20,000 modules (or tags) in one organization.

Bytes are the sizes of the items DynamoDB returns, as it bills reads (attribute names
included; an index Query returns, and is billed on, the projected entries), counted at
PynamoDB's connection through the real routes on moto (in-process), with a team token of
the organization, verified once before (a warm function: the figures are the list's, plus
the rate limiter's UpdateItem and the organization's GetItem).

Times are moto's, in-process (the median of 3 runs of each request): they show what grows
with the organization, not what DynamoDB takes. ``python bench/lists_bench.py 20 2000``
measures only those sizes.

Rows: the module list's page 1 and page 50 (``page[size]`` 20), a ``q`` search, the
registry protocol's list and search (``/api/registry/v1/modules``), the tag list's page 1
and page 50. Modules have 30 versions each (their item is about 2.6 KB). Seeding writes the
items straight to the tables in batches (the lean entries and counts as the writes keep
them, straight into moto's tables), so the run takes a few minutes.
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

import os  # noqa: E402

import bench.common  # noqa: E402, F401 - moto's environment before chalicelib
from bench.reads import counting_reads  # noqa: E402

# Verified tokens are kept for the whole run: moto answers a Query of 20,000 items in
# seconds, longer than the default 5 s, and re-verifying the token is not what is measured.
os.environ["REGISTRY_TOKEN_CACHE_SECONDS"] = "3600"

# The sizes measured; ``python bench/lists_bench.py 20 2000`` measures only those.
SIZES = tuple(int(a) for a in sys.argv[1:]) or (20, 2_000, 20_000)
VERSIONS = 30
LEAN = 128  # the target: bytes per lean entry before a page
PROVIDERS = ("aws", "google", "azurerm")


def bill_index_pages_on_entries() -> None:
    """Make moto cut a Query of an index into 1 MB pages of the *entries* it returns, as
    DynamoDB does, not of the full items (moto projects after paging): otherwise reading
    20,000 lean entries takes 65 Queries under moto and 2 on DynamoDB."""
    from moto.dynamodb.models.table import Table

    original_query, original_sorted = Table.query, Table.sorted_items
    current: dict[str, Any] = {}

    def query(self: Any, *args: Any, **kwargs: Any) -> Any:
        name = args[7] if len(args) > 7 else kwargs.get("index_name")
        indexes = [i for i in self.global_indexes if i.name == name] if name else []
        current["index"] = indexes[0] if indexes else None
        try:
            return original_query(self, *args, **kwargs)
        finally:
            current["index"] = None

    def sorted_items(self: Any, *args: Any) -> Any:
        items = original_sorted(self, *args)
        index = current.get("index")
        if index is None or (index.projection or {}).get("ProjectionType") == "ALL":
            return items
        return [index.project(item) for item in items]

    Table.query, Table.sorted_items = query, sorted_items


def _put(model: Any, items: Any) -> None:
    """Write serialized items straight into moto's table (seeding 20,000 modules through
    boto3 takes minutes; what is measured afterwards goes through the routes)."""
    from moto.core import DEFAULT_ACCOUNT_ID
    from moto.dynamodb.models import dynamodb_backends

    backend = dynamodb_backends[DEFAULT_ACCOUNT_ID]["us-east-1"]
    for item in items:
        backend.put_item(model.Meta.table_name, item)


def seed_modules(org: str, count: int) -> None:
    """``count`` private modules of 30 ok versions, their protocol list entries, kept count
    and key sets, as the writes leave them."""
    from chalicelib.core.data import lists
    from chalicelib.core.data.ids import iso, new_id, now
    from chalicelib.modules import store
    from chalicelib.modules.store import ModuleModel, ProtocolEntryModel, module_key

    moment = now()
    statuses = {
        f"1.{v}.0": {
            "status": "ok",
            "published-at": iso(moment),
            "archive": f"v1/object/{new_id('modver')}.tar.gz",
        }
        for v in range(VERSIONS)
    }
    template = ModuleModel(
        org,
        "",
        id="",
        registry_name="private",
        namespace=org,
        name="",
        provider="",
        status="setup_complete",
        version_statuses=statuses,
        created_at=moment,
        updated_at=moment,
    )
    modules, entries = [], []
    for index in range(count):
        name, provider = f"mod{index:05d}", PROVIDERS[index % 3]
        template.key = module_key("private", org, name, provider)
        template.id, template.name, template.provider = new_id("mod"), name, provider
        modules.append(template.serialize())
        entries.append(store.protocol_item(template, store.protocol_entry(template)).serialize())
    _put(ModuleModel, modules)
    _put(ProtocolEntryModel, entries)
    providers = {f"provider:{p}": len(range(i, count, 3)) for i, p in enumerate(PROVIDERS)}
    lists.set_counts(store.count_scope(org), {"private": count, **providers})
    keys = [module_key("private", org, f"mod{i:05d}", PROVIDERS[i % 3]) for i in range(count)]
    lists.set_key_sets(store.count_scope(org), keys)


def seed_tags(org: str, count: int) -> None:
    from chalicelib.core.data.ids import new_id, now
    from chalicelib.tags import store as tags_store
    from chalicelib.tags.store import TagIdModel, TagModel

    moment = now()
    tags, ids = [], []
    for index in range(count):
        tag_id, name = new_id("tag"), f"tag-{index:05d}"
        tags.append(TagModel(org, name, id=tag_id, instance_count=1, created_at=moment).serialize())
        ids.append(TagIdModel(tag_id, organization=org, name=name).serialize())
    _put(TagModel, tags)
    _put(TagIdModel, ids)
    tags_store.set_count(org, count)


# Each request is timed this many times, and the median reported (the machine is shared).
REPEAT = 3


def measure(client: Any, token: str, path: str) -> tuple[int, int, str, float, Any]:
    """Bytes, calls and their detail of the request's first run; the median of its times."""
    headers = {"Authorization": f"Bearer {token}"}
    times = []
    for run in range(REPEAT):
        with counting_reads() as counted:
            started = time.perf_counter()
            reply = client.http.get(path, headers=headers)
            times.append(time.perf_counter() - started)
        assert reply.status_code == 200, (path, reply.status_code, reply.body)
        if run == 0:
            reads, body = counted, json.loads(reply.body)
    return reads.bytes, reads.total_calls, reads.detail(), sorted(times)[REPEAT // 2], body


def main() -> None:
    from chalice.test import Client
    from moto import mock_aws

    started = time.perf_counter()
    bill_index_pages_on_entries()
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
        tokens = {}
        for size in SIZES:
            org = f"org{size}"
            create_organization(admin, org, "bench@example.com", limited=False)
            team = create_team(admin, org, "readers", None, {"manage_workspaces": True})
            tokens[size] = create_team_token(admin, team.id, None)[1]
            seed_modules(org, size)
            seed_tags(org, size)
        seeded = time.perf_counter() - started
        rows = []
        with Client(app, project_dir=tempfile.mkdtemp()) as client:
            for size in SIZES:
                org, token = f"org{size}", tokens[size]
                modules = f"/api/v2/organizations/{org}/registry-modules"
                # Warm: the token verified, each table described once (PynamoDB's first use).
                for path in (
                    modules,
                    "/api/registry/v1/modules",
                    f"/api/v2/organizations/{org}/tags",
                ):
                    if size == SIZES[0]:
                        measure(client, token, path)
                measure(client, token, f"/api/v2/organizations/{org}/tags?page[size]=1")
                requests = [
                    ("module list, page 1", modules),
                    ("module list, page 50", modules + "?page[number]=50"),
                    ("module list, q=mod0001", modules + "?q=mod0001"),
                    ("protocol list, page 1", "/api/registry/v1/modules"),
                    ("protocol search, q=mod0001", "/api/registry/v1/modules/search?q=mod0001"),
                    ("tag list, page 1", f"/api/v2/organizations/{org}/tags"),
                    ("tag list, page 50", f"/api/v2/organizations/{org}/tags?page[number]=50"),
                ]
                for label, path in requests:
                    read, calls, detail, elapsed, body = measure(client, token, path)
                    rows.append((size, label, read, calls, detail, elapsed, body))

    print(f"Lists (moto; seeded in {seeded:.0f} s; bytes = items DynamoDB returns):")
    print(f"  {'size':>6}  {'request':28} {'bytes read':>11} {'calls':>5}  {'moto ms':>7}  detail")
    for size, label, read, calls, detail, elapsed, _ in rows:
        print(f"  {size:>6}  {label:28} {read:>11,} {calls:>5}  {elapsed * 1000:7.0f}  {detail}")
    page1 = {size: read for size, label, read, *_ in rows if label == "module list, page 1"}
    print(
        f"  module list page 1 at {SIZES[-1]:,} / at {SIZES[0]}: "
        f"{page1[SIZES[-1]] / page1[SIZES[0]]:.2f}x (target: at most 1.5x)"
    )
    for size, label, read, *_ in rows:
        if label == "module list, page 50" and size > 49 * 20:
            before = 49 * 20
            own = read - page1[size]
            print(
                f"  module list page 50 at {size:,}: {own / before:.0f} bytes per module before "
                f"it beyond page 1's read (target: at most {LEAN})"
            )
    timed = {(size, label): elapsed for size, label, *_, elapsed, _ in rows}
    for label in ("module list, q=mod0001", "protocol search, q=mod0001"):
        small, large = SIZES[0], SIZES[-1]
        if small != large:
            print(
                f"  {label} at {large:,} / at {small}: "
                f"{timed[(large, label)] / timed[(small, label)]:.2f}x the time (target: 1.5x)"
            )
    print(f"  (whole run {time.perf_counter() - started:.0f} s)")


if __name__ == "__main__":
    main()
