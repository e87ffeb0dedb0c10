"""``?include=`` over the real local stack: pytfe 1.5.0 decodes a team's ``users`` and
``organization-memberships`` from ``included``, and an unknown include is a 400 naming it."""

from __future__ import annotations

import pytest

pytest.importorskip("pytfe")

from pytfe import TFEClient, TFEConfig
from pytfe.models import OrganizationCreateOptions
from pytfe.models.team import TeamIncludeOpt, TeamListOptions, TeamReadOptions

from tests.e2e.conftest import ADMIN_TOKEN, Stack

pytestmark = pytest.mark.e2e

ORG = "include-co"


def test_team_includes_through_pytfe_and_http(stack: Stack) -> None:
    client = TFEClient(
        TFEConfig(address=stack.url, token=ADMIN_TOKEN, max_retries=1, timeout=15, ca_bundle=None)
    )
    client.organizations.create(OrganizationCreateOptions(name=ORG, email="ops@include.io"))
    try:
        (owners,) = client.teams.list(ORG, TeamListOptions(names=["owners"]))
        # pytfe's list_users is GET /teams/:id?include=users, read from "included".
        (admin,) = list(client.teams.list_users(owners.id))
        assert admin.username == "admin"

        everything = [TeamIncludeOpt.TEAM_USERS, TeamIncludeOpt.TEAM_ORGANIZATION_MEMBERSHIPS]
        team = client.teams.read(owners.id, TeamReadOptions(include=everything))
        assert [u.id for u in team.users] == [admin.id]
        assert team.users[0].username == "admin"  # hydrated from "included", not a stub
        (membership,) = team.organization_memberships
        assert membership.id.startswith("ou-")
        assert membership.status == "active"

        session = stack.session()
        listed = session.get(stack.api(f"/organizations/{ORG}/teams?include=users"), timeout=30)
        assert listed.status_code == 200, listed.text
        assert [u["id"] for u in listed.json()["included"]] == [admin.id]
        refused = session.get(stack.api(f"/organizations/{ORG}/teams?include=nope"), timeout=30)
        assert refused.status_code == 400, refused.text
        assert "inclusion of 'nope'" in refused.json()["errors"][0]["detail"]
    finally:
        client.organizations.delete(ORG)
