"""The web UI's pages: DynamoDB and S3 calls and server time per page, by organization size.

An organization of 20 modules and one of 2,000 (one published version each, its parsed
metadata in S3 as ingest leaves it), signed in through a real UI session. For the module list
(page 1, page 50 where there is one, a search) the calls must not grow with the organization;
the module page reads one module whatever the organization holds. Runs the real routes
through Chalice's test client on moto (in-process): the call counts carry over to AWS, the
times are moto's. *Cold* clears the per-instance caches (verified tokens, users, parsed
metadata) before each request, as a new Lambda instance would.
"""

from __future__ import annotations

import gzip
import json
import statistics
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.common import allow_bursts  # noqa: E402
from bench.reads import Reads, counting_reads  # noqa: E402

S3_CALLS: Counter[str] = Counter()
SIZES = (20, 2000)


def seed(organization: str, modules: int) -> None:
    """``modules`` modules, each with one ok version whose metadata is in S3."""
    from chalicelib.accounts.organizations.service import create_organization
    from chalicelib.accounts.users.service import bootstrap_admin
    from chalicelib.artifacts.objects import bucket
    from chalicelib.artifacts.semver import parse
    from chalicelib.core.auth import Principal
    from chalicelib.core.data import lists
    from chalicelib.core.data.aws import client
    from chalicelib.core.data.ids import iso, new_id, now
    from chalicelib.modules import store
    from chalicelib.modules.describe import summary
    from chalicelib.modules.keys import UploadKey
    from chalicelib.modules.store import ModuleModel, ModuleVersionModel, module_key

    admin = Principal("user", bootstrap_admin("bench-admin")[0].id, "bench")
    create_organization(admin, organization, "bench@example.com", limited=False)
    moment = now()
    s3 = client("s3")
    versions = []
    counts: Counter[str] = Counter()
    with ModuleModel.batch_write() as batch, store.ProtocolEntryModel.batch_write() as entries:
        for index in range(modules):
            name = f"mod{index:05d}"
            provider = ("aws", "google", "azurerm")[index % 3]
            module = ModuleModel(
                organization,
                module_key("private", organization, name, provider),
                id=new_id("mod"),
                registry_name="private",
                namespace=organization,
                name=name,
                provider=provider,
                status="setup_complete",
                created_at=moment,
                updated_at=moment,
            )
            keys = UploadKey(module.id, "1.0.0", new_id("modver"))
            module.version_statuses["1.0.0"] = {
                "status": "ok",
                "published-at": iso(moment),
                "archive": keys.archive_key,
            }
            readme = f"# {name}\n\nModule number {index}, for the benchmark.\n"
            description = summary(readme)
            module.latest_summary = {"version": "1.0.0", "description": description}
            batch.save(module)
            entries.save(store.protocol_item(module, store.protocol_entry(module)))
            counts["private"] += 1
            counts[store.provider_part(provider)] += 1
            versions.append(
                ModuleVersionModel(
                    module.id,
                    parse("1.0.0").order_key,
                    id=keys.version_id,
                    version="1.0.0",
                    status="ok",
                    organization=organization,
                    module_key=module.key,
                    upload_key=keys.key,
                    archive_key=keys.archive_key,
                    metadata_key=keys.metadata_key,
                    description=description,
                    created_at=moment,
                    updated_at=moment,
                )
            )
            metadata = {
                "root": {
                    "path": "",
                    "readme": readme,
                    "inputs": [{"name": "cidr", "type": "string", "required": True}],
                    "outputs": [{"name": "id"}],
                    "resources": [{"name": "a", "type": "null_resource"}],
                    "dependencies": [],
                    "provider_dependencies": [],
                },
                "submodules": [],
                "examples": [],
            }
            body = gzip.compress(json.dumps(metadata).encode())
            s3.put_object(Bucket=bucket(), Key=keys.metadata_key, Body=body)
    with ModuleVersionModel.batch_write() as batch:
        for version in versions:
            batch.save(version)
    # Written straight to the tables as the writes keep them (kept counts, protocol list
    # entries, the latest version's description on the module), not through the backfill:
    # under moto each of its transactions copies every table, which at 2,000 modules takes
    # gigabytes (the backfill itself is tested in tests/core/test_lists.py and
    # tests/web/test_web.py).
    lists.set_counts(store.count_scope(organization), dict(counts))


def count_s3() -> None:
    from chalicelib.core.data.aws import client

    def counted(model: Any, **_: Any) -> None:
        S3_CALLS[model.name] += 1

    client("s3").meta.events.register("before-call.s3.*", counted)


def cold_instance() -> None:
    """Forget what a warm instance remembers: verified tokens, users, parsed metadata."""
    from chalicelib.accounts.users import store as users_store
    from chalicelib.core.auth import verified
    from chalicelib.web import pages

    verified.clear()
    users_store._users.clear()
    pages._metadata.cache_clear()


def measure(client: Any, cookie: str, path: str, reads: Reads, *, cold: bool, runs: int) -> str:
    headers = {"Cookie": cookie}
    client.http.get(path, headers=headers)  # warm the instance
    samples = []
    for _ in range(runs):
        if cold:
            cold_instance()
        reads.clear()
        S3_CALLS.clear()
        started = time.perf_counter()
        response = client.http.get(path, headers=headers)
        samples.append((time.perf_counter() - started) * 1000)
        assert response.status_code == 200, (path, response.status_code)
    return (
        f"{reads.total_calls} DynamoDB ({reads.detail()}), {reads.bytes / 1024:.1f} KiB read, "
        f"{sum(S3_CALLS.values())} S3, {statistics.median(samples):.0f} ms"
    )


def main() -> None:
    from chalice.test import Client
    from moto import mock_aws

    with mock_aws():
        from app import app
        from chalicelib.accounts.users.service import bootstrap_admin
        from chalicelib.web import session
        from infrastructure.resources import provision

        provision()
        token = "bench-admin"
        bootstrap_admin(token)
        allow_bursts()
        for size in SIZES:
            seed(f"org{size}", size)
        count_s3()
        _, secret = session.start(token)
        cookie = f"{session.COOKIE_NAME}={secret}"
        print(
            "Web UI pages (moto in-process, site-admin session, median of 9 requests; warm: "
            "the instance served the page before, cold: its caches cleared):"
        )
        with Client(app, project_dir=tempfile.mkdtemp()) as client, counting_reads() as reads:
            for size in SIZES:
                base = f"/app/org{size}/registry/modules"
                pages = [("module list, page 1", base), ("search q=mod0001", f"{base}?q=mod0001")]
                if size >= 1000:
                    pages.append(("module list, page 50", f"{base}?page=50"))
                pages.append(("module page", f"{base}/private/org{size}/mod00001/google"))
                for label, path in pages:
                    for cold in (False, True):
                        state = "cold" if cold else "warm"
                        figures = measure(client, cookie, path, reads, cold=cold, runs=9)
                        print(f"  {size:>5} modules  {label:<22} {state}  {figures}")


if __name__ == "__main__":
    main()
