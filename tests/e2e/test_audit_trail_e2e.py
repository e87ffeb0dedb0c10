"""The audit trail through the real local stack (HTTP server, moto): a policy change made
over HTTP is read back by the organization's token in HCP's shape, with the caller's address
and user agent as the server saw them; another organization's token sees none of it."""

from __future__ import annotations

import pytest

from tests.conftest import doc
from tests.e2e.conftest import Stack

pytestmark = pytest.mark.e2e

ORG = "auditorg"


def _org_token(stack: Stack, org: str) -> str:
    made = stack.session().post(stack.api(f"/organizations/{org}/authentication-token"))
    assert made.status_code == 201, made.text
    return str(made.json()["data"]["attributes"]["token"])


def test_a_change_over_http_is_in_the_organizations_trail(stack: Stack) -> None:
    admin = stack.session()
    for name in (ORG, f"{ORG}-other"):
        made = admin.post(
            stack.api("/organizations"), json=doc("organizations", name=name, email="o@x.io")
        )
        assert made.status_code == 201, made.text
    admin.headers["User-Agent"] = "audit-e2e/1.0"
    change = doc("registry-policies", **{"block-severity": "critical"})
    assert admin.patch(stack.api(f"/organizations/{ORG}/registry-policy"), json=change).ok

    reader = stack.session(_org_token(stack, ORG))
    listed = reader.get(stack.api("/organization/audit-trail"), params={"page[size]": "10"})
    assert listed.status_code == 200, listed.text
    body = listed.json()
    # The organization's creation and its token's record theirs beside the policy's.
    created, event, token = body["data"]
    assert [created["resource"]["action"], token["resource"]["action"]] == ["created"] * 2
    assert event["resource"]["type"] == "registry-policy"
    assert event["resource"]["meta"] == {"changed": ["block-severity"], "outcome": "succeeded"}
    assert event["auth"]["organization_id"] == ORG
    assert event["request"]["user_agent"] == "audit-e2e/1.0"
    assert event["request"]["source_address"] == "127.0.0.1"
    assert body["pagination"]["total_count"] == 3

    other = stack.session(_org_token(stack, f"{ORG}-other"))
    theirs = other.get(stack.api("/organization/audit-trail")).json()["data"]
    assert {e["auth"]["organization_id"] for e in theirs} == {f"{ORG}-other"}
