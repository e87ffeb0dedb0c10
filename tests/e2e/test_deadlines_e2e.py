"""A deprecation's deadline through the real local stack: nobody acts, the stack's sweep
(the ``DeprecationDeadlines`` function's handler, on a thread every
REGISTRY_DEADLINE_SWEEP_SECONDS) revokes the version, records it as the registry, and the
protocol stops serving it with the owner's message."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
import requests

from tests.conftest import doc, tar_gz
from tests.e2e.conftest import Stack, wait_for

pytestmark = pytest.mark.e2e

ORG = "deadlines"


def test_a_deadline_in_the_past_minute_is_revoked_by_the_stack(stack: Stack):
    admin = stack.session()
    made = admin.post(
        stack.api("/organizations"), json=doc("organizations", name=ORG, email="ops@deadline.io")
    )
    assert made.status_code == 201, made.text
    modules = stack.api(f"/organizations/{ORG}/registry-modules")
    assert admin.post(modules, json=doc("registry-modules", name="vpc", provider="aws")).ok
    for version in ("1.0.0", "1.1.0"):
        reply = admin.post(
            stack.api(f"/registry-modules/{ORG}/vpc/aws/versions"),
            json=doc("registry-module-versions", version=version),
        )
        assert reply.status_code == 201, reply.text
        put = requests.put(
            reply.json()["data"]["links"]["upload"],
            data=tar_gz({"main.tf": 'variable "cidr" {}\n'}),
            headers={"Content-Type": "application/octet-stream"},
        )
        assert put.status_code == 200, put.text
    version_url = f"{modules}/private/{ORG}/vpc/aws/version"

    def attributes(version: str) -> dict:
        return admin.get(version_url, params={"module_version": version}).json()["data"][
            "attributes"
        ]

    for version in ("1.0.0", "1.1.0"):
        settled = wait_for(lambda v=version: attributes(v), lambda a: a["status"] == "ok", 120)
        assert settled["status"] == "ok", settled

    protocol = f"{stack.url}/api/registry/v1/modules/{ORG}/vpc/aws/versions"

    def served() -> list[str]:
        reply = admin.get(protocol)
        return [v["version"] for v in reply.json()["modules"][0]["versions"]]

    assert sorted(served()) == ["1.0.0", "1.1.0"]
    revoke_at = (datetime.now(UTC) - timedelta(seconds=30)).strftime("%Y-%m-%dT%H:%M:%SZ")
    deprecation = {
        "deprecated-status": "Deprecated",
        "reason": "Move to 1.1.0 by the deadline.",
        "revoke-at": revoke_at,
    }
    patched = admin.patch(
        f"{modules}/private/{ORG}/vpc/aws/1.0.0",
        json={"data": {"type": "module-versions", "attributes": {"deprecation": deprecation}}},
    )
    assert patched.status_code == 200, patched.text
    assert patched.json()["data"]["attributes"]["deprecation"]["revoke-at"] == revoke_at

    # Nobody acts: the stack's sweep revokes it (polled; the cap is generous, not a timing).
    revoked = wait_for(
        lambda: attributes("1.0.0"),
        lambda a: (a.get("revocation") or {}).get("status") == "Revoked",
        timeout=120,
    )
    assert revoked["revocation"] == {
        "status": "Revoked",
        "message": "Move to 1.1.0 by the deadline.",
        "link": None,
    }
    assert served() == ["1.1.0"]
    download = admin.get(f"{stack.url}/api/registry/v1/modules/{ORG}/vpc/aws/1.0.0/download")
    assert download.status_code == 404 and "Move to 1.1.0" in download.text
    # The organization's audit trail (read with the organization's token, as HCP's is) names
    # the registry as the actor of the revocation.
    minted = admin.post(stack.api(f"/organizations/{ORG}/authentication-token"))
    assert minted.status_code == 201, minted.text
    org_token = stack.session(minted.json()["data"]["attributes"]["token"])
    trail = org_token.get(
        stack.api("/organization/audit-trail"),
        params={"filter[action]": "revoked", "filter[resource-type]": "registry-module-version"},
    )
    assert trail.status_code == 200, trail.text
    (event,) = trail.json()["data"]
    assert event["auth"]["type"] == "System"
    assert event["resource"]["meta"]["by"] == "deadline"
    assert event["resource"]["meta"]["revoke-at"] == revoke_at
    # The sweep ran clean: nothing failed, every change it made was recorded with its event.
    log = stack.log()
    assert "the deadline sweep failed" not in log and "could not be settled" not in log
    assert "unexplained change" not in log
