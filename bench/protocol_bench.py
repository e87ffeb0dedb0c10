"""Registry protocol hot path: DynamoDB calls and latency of ``versions`` and ``download``
(which counts itself: one UpdateItem) and of a version's detail (which reports the counts),
for modules (``modules.v1``), and of ``versions`` and ``download`` for providers
(``providers.v1``).

A module with 200 versions in an organization of 1,000 modules, against a module with one
version in an organization of one module: the counts must not grow with either. Runs the real
routes through Chalice's test client on moto (in-process), so latencies are moto's, not
DynamoDB's; the call counts are what carries over to AWS.
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.common import CALLS, allow_bursts, counting_dynamodb  # noqa: E402


def seed(organization: str, modules: int, versions: int) -> str:
    """An organization with ``modules`` modules; the first has ``versions`` ok versions."""
    from chalicelib.accounts.organizations.service import create_organization
    from chalicelib.accounts.teams.service import create_team
    from chalicelib.accounts.tokens.service import create_team_token
    from chalicelib.artifacts.semver import parse
    from chalicelib.core.auth import Principal
    from chalicelib.core.data.ids import iso, new_id, now
    from chalicelib.modules.store import ModuleModel, ModuleVersionModel, module_key

    admin = Principal("user", _admin_id(), "bench")
    create_organization(admin, organization, "bench@example.com", limited=False)
    team = create_team(admin, organization, "ci", None, {"manage_modules": True})
    _, token = create_team_token(admin, team.id, None)
    moment = now()
    with ModuleModel.batch_write() as batch:
        for index in range(modules):
            name = "big" if index == 0 else f"mod{index:04d}"
            module = ModuleModel(
                organization,
                module_key("private", organization, name, "aws"),
                id=new_id("mod"),
                registry_name="private",
                namespace=organization,
                name=name,
                provider="aws",
                status="setup_complete",
                created_at=moment,
                updated_at=moment,
            )
            count = versions if index == 0 else 1
            for v in range(count):
                module.version_statuses[f"1.{v}.0"] = {
                    "status": "ok",
                    "published-at": iso(moment),
                    "archive": f"v1/archives/{module.id}/{v}.tar.gz",
                }
            batch.save(module)
            if index == 0:
                first = module
    with ModuleVersionModel.batch_write() as batch:
        for v in range(versions):
            text = f"1.{v}.0"
            batch.save(
                ModuleVersionModel(
                    first.id,
                    parse(text).order_key,
                    id=new_id("modver"),
                    version=text,
                    status="ok",
                    organization=organization,
                    module_key=first.key,
                    upload_key="unused",
                    archive_key=f"v1/archives/{first.id}/{v}.tar.gz",
                    created_at=moment,
                    updated_at=moment,
                )
            )
    return token


def seed_provider(organization: str, versions: int, platforms: int) -> None:
    """A private provider ``big`` in ``organization`` serving ``versions`` verified versions
    of ``platforms`` platforms each (the provider item as verification leaves it), signed by
    one key of an RSA-4096 key's armored size."""
    from chalicelib.core.data.ids import new_id, now
    from chalicelib.providers import store
    from chalicelib.providers.store import ProviderModel

    moment = now()
    provider = ProviderModel(
        organization,
        store.provider_key("private", organization, "big"),
        id=new_id("prov"),
        registry_name="private",
        namespace=organization,
        name="big",
        created_at=moment,
        updated_at=moment,
    )
    key_id = "0123456789ABCDEF"
    provider.served_keys[key_id] = "-----BEGIN PGP PUBLIC KEY BLOCK-----\n" + "A" * 3100
    systems = ("linux", "darwin", "windows", "freebsd", "openbsd")
    pairs = [(os_, arch) for os_ in systems for arch in ("amd64", "arm64")][:platforms]
    for v in range(versions):
        version, sums = f"1.{v}.0", f"{v:016x}"
        provider.served[version] = {"key-id": key_id, "protocols": ["5.0"], "sums": sums}
        for os_, arch in pairs:
            entry = f"{sums}:{'ab' * 32}"  # the conventional filename: not kept
            provider.served_platforms[store.served_platform_key(version, os_, arch)] = entry
    provider.save()


def _member_token(organization: str) -> str:
    """A user token of a member of ``organization``'s ci team (what ``terraform login`` gives)."""
    from chalicelib.accounts.teams import service as teams_service
    from chalicelib.accounts.tokens import service as tokens_service
    from chalicelib.accounts.users import service as users_service
    from chalicelib.core.auth import Principal

    admin = Principal("user", _admin_id(), "bench")
    user = users_service.create_user("member", "member@example.com")
    team = next(t for t in teams_service.list_teams(admin, organization, None) if t.name == "ci")
    teams_service.change_membership(admin, team.id, [user.username], add=True)
    _, token = tokens_service.create_user_token(
        Principal("user", user.id, "bench"), user.id, None, None
    )
    return token


def _admin_id() -> str:
    from chalicelib.accounts.users.service import bootstrap_admin

    return bootstrap_admin("bench-admin")[0].id


def cold_instance() -> None:
    """Forget what a warm instance remembers (verified tokens, users): a new instance."""
    from chalicelib.accounts.users import store as users_store
    from chalicelib.core.auth import verified
    from chalicelib.modules.downloads import store as downloads_store

    verified.clear()
    users_store._users.clear()
    downloads_store.written.clear()  # a new instance writes each consumer's item once more


def measure(
    client: Any, token: str, path: str, runs: int = 50, *, cold: bool = False
) -> tuple[int, str, float, int]:
    headers = {"Authorization": f"Bearer {token}"}
    samples = []
    client.http.get(path, headers=headers)  # warm the instance
    for _ in range(runs):
        if cold:
            cold_instance()
        CALLS.clear()
        started = time.perf_counter()
        response = client.http.get(path, headers=headers)
        samples.append((time.perf_counter() - started) * 1000)
        assert response.status_code in (200, 204), (path, response.body)
    detail = ", ".join(f"{op} {n}" for op, n in sorted(CALLS.items()))
    return sum(CALLS.values()), detail, statistics.median(samples), response.status_code


def totals_of_downloads(app: Any, token: str) -> None:
    """What keeping the modules' totals costs, off the download path: the stream's records
    of 100 downloads (10 versions of one module) through the same handler as the
    DownloadTotals function (stream reads are free for Lambda; the handler's calls count)."""
    from chalice.test import Client

    from infrastructure.streams import download_totals_reader

    reader = download_totals_reader("LATEST")
    reader.open()
    headers = {"Authorization": f"Bearer {token}"}
    with Client(app, project_dir=tempfile.mkdtemp()) as client:
        for index in range(100):
            path = f"/api/registry/v1/modules/big-org/big/aws/1.{index % 10}.0/download"
            assert client.http.get(path, headers=headers).status_code == 204
    batches: list[int] = []
    handle = reader.handle
    reader.handle = lambda records: (batches.append(len(records)), handle(records))[1]
    with counting_dynamodb():
        CALLS.clear()
        started = time.perf_counter()
        reader.drain()
        elapsed = (time.perf_counter() - started) * 1000
    detail = ", ".join(f"{op} {n}" for op, n in sorted(CALLS.items()))
    print(
        "Module download totals from the module-downloads stream (DownloadTotals function):\n"
        f"  100 downloads of 10 versions of one module: {sum(batches)} stream records in "
        f"{len(batches)} batches, {sum(CALLS.values())} DynamoDB calls ({detail}), "
        f"{elapsed:.0f} ms; the download path itself: 0 calls more"
    )


# DynamoDB on-demand, us-east-1 list prices: per million write / read request units since
# November 2024, and before (the prices the table used).
WRU_PRICE, RRU_PRICE = 0.625, 0.125
WRU_PRICE_BEFORE, RRU_PRICE_BEFORE = 1.25, 0.25


def download_counter(app: Any, token: str) -> None:
    """What a download's count costs, for a version downloaded daily by 100 consumers for a
    year (365 day items and 100 consumer items, seeded): the calls and the size of each item
    the download writes (WRU = ceil(size / 1 KB)), what the stream's total reads, and the
    0.11 design's single item of the same history, sized from its shape."""
    import math
    from datetime import timedelta

    from chalice.test import Client
    from pynamodb.connection.base import Connection

    from bench.reads import counting_reads, item_size
    from chalicelib.core.data import db
    from chalicelib.core.data.ids import iso, now
    from chalicelib.modules import store as modules_store
    from chalicelib.modules.downloads import store

    module = modules_store.find_module(
        "big-org", modules_store.module_key("private", "big-org", "big", "aws")
    )
    assert module is not None
    today = now()
    days = [today.replace(hour=0) - timedelta(days=d) for d in range(1, 366)]
    consumers = [f"team-{index:016d}" for index in range(100)]
    table = store.DownloadsModel.Meta.table_name
    requests = [
        {
            "module_id": {"S": module.id},
            "version": {"S": store.day_key("1.1.0", day)},
            "n": {"N": "100"},
        }
        for day in days
    ] + [
        {
            "module_id": {"S": module.id},
            "version": {"S": store.consumer_key("1.1.0", "team", team)},
            "at": {"S": iso(days[0])},
        }
        for team in consumers
    ]
    for start in range(0, len(requests), 25):
        db.connection().dispatch(
            "BatchWriteItem",
            {
                "RequestItems": {
                    table: [{"PutRequest": {"Item": i}} for i in requests[start : start + 25]]
                }
            },
        )
    sent: list[dict[str, Any]] = []
    original = Connection._make_api_call

    def spied(self: Any, operation: str, kwargs: dict[str, Any]) -> Any:
        if operation == "UpdateItem" and kwargs.get("TableName") == table:
            sent.append(kwargs)
        return original(self, operation, kwargs)

    path = "/api/registry/v1/modules/big-org/big/aws/1.1.0/download"
    headers = {"Authorization": f"Bearer {token}"}
    rows = []
    Connection._make_api_call = spied  # type: ignore[method-assign]
    try:
        with Client(app, project_dir=tempfile.mkdtemp()) as client:
            store.written.clear()  # a new instance
            for label in ("first of the day on the instance", "later that day"):
                sent.clear()
                assert client.http.get(path, headers=headers).status_code == 204
                sizes = []
                for request in sent:
                    item = db.connection().dispatch(
                        "GetItem", {"TableName": table, "Key": request["Key"]}
                    )["Item"]
                    sizes.append(item_size(item))
                units = sum(math.ceil(size / 1024) for size in sizes)
                rows.append((label, len(sent), sizes, units))
    finally:
        Connection._make_api_call = original  # type: ignore[method-assign]
    with counting_reads() as reads:
        total = store.version_total(module.id, "1.1.0")
    read_units = math.ceil(reads.bytes / 4096)
    old_item = {
        "module_id": {"S": module.id},
        "version": {"S": "1.1.0"},
        "total": {"N": str(total)},
        **{store.BASE_DAY_PREFIX + f"{day:%Y-%m-%d}": {"N": "100"} for day in days},
        **{f"c#team#{team}": {"S": iso(today)} for team in consumers},
    }
    old_units = math.ceil(item_size(old_item) / 1024)
    print(
        "Download counter, a version downloaded daily by 100 consumers for a year "
        "(365 day items, 100 consumer items):"
    )
    for label, calls, sizes, units in rows:
        print(
            f"  download, {label:<33} module-downloads UpdateItem {calls}, items written "
            f"{sizes} bytes: {units} WRU"
        )
    warm = rows[-1][3]
    print(
        f"  0.11's one item per version for the same history: {item_size(old_item):,} bytes: "
        f"{old_units} WRU per download\n"
        f"  per million downloads (later in the day): ${warm * WRU_PRICE:.3f} now "
        f"(${warm * WRU_PRICE_BEFORE:.2f} at $1.25/M WRU), 0.11 ${old_units * WRU_PRICE:.2f} "
        f"(${old_units * WRU_PRICE_BEFORE:.2f}); plus 1 WRU per consumer, version, day and "
        "instance\n"
        f"  the stream's total of that version (DownloadTotals, per batch that touches it): "
        f"1 Query, {reads.bytes:,} bytes, {read_units} RRU consistent "
        f"(${read_units * RRU_PRICE:.3f} per million batches; days older than 400 are folded "
        "by the backfill)"
    )


def main() -> None:
    from chalice.test import Client
    from moto import mock_aws

    with mock_aws():
        from app import app
        from infrastructure.resources import provision

        provision()
        _admin_id()
        allow_bursts()
        big_token = seed("big-org", modules=1000, versions=200)
        small_token = seed("small-org", modules=1, versions=1)
        user_token = _member_token("big-org")
        print(
            "Registry protocol hot path (moto in-process, median of 50 requests; warm: the "
            "instance verified the token before, cold: a new instance):"
        )
        with Client(app, project_dir=tempfile.mkdtemp()) as client, counting_dynamodb():
            for label, org, token, cold in (
                ("1 version, org of 1 module, team token", "small-org", small_token, False),
                ("200 versions, 1,000 modules, team token", "big-org", big_token, False),
                ("200 versions, 1,000 modules, team token", "big-org", big_token, True),
                ("200 versions, 1,000 modules, user token", "big-org", user_token, False),
                ("200 versions, 1,000 modules, user token", "big-org", user_token, True),
            ):
                base = f"/api/registry/v1/modules/{org}/big/aws"
                for op, path in (
                    ("versions", f"{base}/versions"),
                    ("download", f"{base}/1.0.0/download"),
                    ("detail", f"{base}/1.0.0"),
                ):
                    calls, detail, latency, _ = measure(client, token, path, cold=cold)
                    state = "cold" if cold else "warm"
                    print(
                        f"  {op:<9} {state} {label:<42} {calls} DynamoDB calls ({detail}), "
                        f"{latency:.1f} ms"
                    )
        totals_of_downloads(app, big_token)
        download_counter(app, big_token)
        seed_provider("small-org", versions=1, platforms=1)
        seed_provider("big-org", versions=200, platforms=10)
        print("Provider registry protocol (providers.v1), the same way:")
        with Client(app, project_dir=tempfile.mkdtemp()) as client, counting_dynamodb():
            for label, org, token, cold in (
                ("1 version of 1 platform, team token", "small-org", small_token, False),
                ("200 versions x 10 platforms, team token", "big-org", big_token, False),
                ("200 versions x 10 platforms, team token", "big-org", big_token, True),
                ("200 versions x 10 platforms, user token", "big-org", user_token, False),
                ("200 versions x 10 platforms, user token", "big-org", user_token, True),
            ):
                base = f"/api/registry/v1/providers/{org}/big"
                for op, path in (
                    ("versions", f"{base}/versions"),
                    ("download", f"{base}/1.0.0/download/linux/amd64"),
                ):
                    calls, detail, latency, _ = measure(client, token, path, cold=cold)
                    state = "cold" if cold else "warm"
                    print(
                        f"  {op:<9} {state} {label:<42} {calls} DynamoDB calls ({detail}), "
                        f"{latency:.1f} ms"
                    )


if __name__ == "__main__":
    main()
