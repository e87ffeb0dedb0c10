"""Benchmarks for the foundation: ``python bench/run.py`` (or ``make bench``).

Prints
- DynamoDB calls per request for the main operations (counted at PynamoDB's connection, under
  moto, through the real routes),
- cold import time of the app module against a bare ``import chalice, boto3, pynamodb.models,
  pydantic`` (fresh interpreters, median of several runs),
- ingest time for a module of ~80 .tf files (bench/ingest_bench.py),
- the registry protocol hot path (bench/protocol_bench.py), publishing 30 tags from a git
  repository (bench/vcs_bench.py), organization tags (bench/tags_bench.py), bytes read by
  the lists at 20, 2,000 and 20,000 modules or tags (bench/lists_bench.py), the audit
  trail's cost per change and per million events kept (bench/audit_bench.py), the web UI's
  pages at 20 and 2,000 modules (bench/web_bench.py) and
  ``terraform get`` of 20 modules from the local stack (bench/terraform_bench.py),
- the deployment zip's size and each function's entry-module import time
  (bench/package_bench.py).
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.common import CALLS, allow_bursts, counting_dynamodb  # noqa: E402


def measure(client: Any, token: str, method: str, path: str, body: Any = None) -> tuple[int, str]:
    CALLS.clear()
    headers = {"Content-Type": "application/vnd.api+json", "Authorization": f"Bearer {token}"}
    response = getattr(client.http, method.lower())(
        path, headers=headers, body=json.dumps(body) if body is not None else None
    )
    assert response.status_code < 300, (path, response.status_code, response.body)
    detail = ", ".join(f"{op} {n}" for op, n in sorted(CALLS.items()))
    return sum(CALLS.values()), detail


def dynamodb_calls() -> list[tuple[str, int, str]]:
    from chalice.test import Client
    from moto import mock_aws

    with mock_aws():
        from app import app
        from chalicelib.accounts.users.service import bootstrap_admin
        from infrastructure.resources import provision

        provision()
        bootstrap_admin("bench-admin")
        allow_bursts()

        def doc(type_: str, **attributes: Any) -> dict:
            return {"data": {"type": type_, "attributes": attributes}}

        rows = []
        with Client(app, project_dir=tempfile.mkdtemp()) as client, counting_dynamodb():
            admin = "bench-admin"
            measure(
                client,
                admin,
                "POST",
                "/api/v2/organizations",
                doc("organizations", name="acme", email="a@acme.io"),
            )
            team = client.http.post(
                "/api/v2/organizations/acme/teams",
                headers={
                    "Authorization": f"Bearer {admin}",
                    "Content-Type": "application/vnd.api+json",
                },
                body=json.dumps(
                    doc("teams", name="ci", **{"organization-access": {"manage-modules": True}})
                ),
            )
            team_id = json.loads(team.body)["data"]["id"]
            minted = client.http.post(
                f"/api/v2/teams/{team_id}/authentication-token",
                headers={"Authorization": f"Bearer {admin}"},
            )
            ci = json.loads(minted.body)["data"]["attributes"]["token"]
            base = "/api/v2/organizations/acme/registry-modules"
            for i in range(50):
                measure(
                    client,
                    ci,
                    "POST",
                    base,
                    doc("registry-modules", name=f"mod{i}", provider="aws"),
                )
            for v in range(20):
                measure(
                    client,
                    ci,
                    "POST",
                    "/api/v2/registry-modules/acme/mod0/aws/versions",
                    doc("registry-module-versions", version=f"1.{v}.0"),
                )
            operations = [
                ("ping", ci, "GET", "/api/v2/ping", None),
                (
                    "create module (team token)",
                    ci,
                    "POST",
                    base,
                    doc("registry-modules", name="bench", provider="aws"),
                ),
                (
                    "create version (team token)",
                    ci,
                    "POST",
                    "/api/v2/registry-modules/acme/bench/aws/versions",
                    doc("registry-module-versions", version="1.0.0"),
                ),
                ("get module (team token)", ci, "GET", f"{base}/private/acme/mod0/aws", None),
                ("list modules, 51 in org (team token)", ci, "GET", base, None),
                (
                    "version lookup (team token)",
                    ci,
                    "GET",
                    f"{base}/private/acme/mod0/aws/version?module_version=1.5.0",
                    None,
                ),
                (
                    "get module (site-admin user token)",
                    admin,
                    "GET",
                    f"{base}/private/acme/mod0/aws",
                    None,
                ),
                (
                    "delete version (admin)",
                    admin,
                    "DELETE",
                    f"{base}/private/acme/mod0/aws/1.0.0",
                    None,
                ),
                (
                    "delete module with 19 versions (admin)",
                    admin,
                    "DELETE",
                    f"{base}/private/acme/mod0",
                    None,
                ),
            ]
            for label, token, method, path, body in operations:
                total, detail = measure(client, token, method, path, body)
                rows.append((label, total, detail))
    return rows


def import_times(runs: int = 7) -> tuple[float, float]:
    def median_ms(code: str) -> float:
        samples = []
        for _ in range(runs):
            out = subprocess.run(
                [
                    sys.executable,
                    "-c",
                    f"import time; t=time.perf_counter(); {code}; print(time.perf_counter()-t)",
                ],
                cwd=ROOT,
                capture_output=True,
                text=True,
                check=True,
                env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"},
            )
            samples.append(float(out.stdout.strip()) * 1000)
        return statistics.median(samples)

    bare = median_ms("import chalice, boto3, pynamodb.models, pydantic")
    full = median_ms("import app")
    return bare, full


def main() -> None:
    print("DynamoDB calls per request (moto, through the routes):")
    for label, total, detail in dynamodb_calls():
        print(f"  {label:<42} {total:>3}   ({detail})")
    bare, full = import_times()
    print("Cold import (fresh interpreter, median of 7):")
    print(f"  import chalice, boto3, pynamodb.models, pydantic   {bare:7.1f} ms")
    print(
        f"  import app (every route group + ingest handler)    {full:7.1f} ms"
        f"   (+{full - bare:.1f} ms)"
    )
    scripts = (
        "ingest_bench.py",
        "protocol_bench.py",
        "ratelimit_bench.py",
        "vcs_bench.py",
        "tags_bench.py",
        "audit_bench.py",
        "lists_bench.py",
        "web_bench.py",
        "terraform_bench.py",
        "package_bench.py",
        "cost_bench.py",
    )
    for script in scripts:
        subprocess.run([sys.executable, str(ROOT / "bench" / script)], check=True)


if __name__ == "__main__":
    main()
