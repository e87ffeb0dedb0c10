"""A name's pattern covers the whole string: a trailing newline (which ``$`` lets through)
is refused like any other character the pattern does not allow."""

from __future__ import annotations

import pytest

from tests.conftest import Api, doc, make_org


@pytest.mark.parametrize("name", ["acme\n", "acme\r\n", "ac\nme"])
def test_an_organization_name_with_a_newline_is_refused(api: Api, name: str) -> None:
    reply = api.post("/api/v2/organizations", doc("organizations", name=name, email="o@x.io"))
    assert reply.status == 422, reply.json
    assert api.get("/api/v2/organizations/acme").status == 404


def test_a_team_or_module_name_with_a_trailing_newline_is_refused(api: Api) -> None:
    make_org(api, "acme")
    team = api.post("/api/v2/organizations/acme/teams", doc("teams", name="ci\n"))
    assert team.status == 422, team.json
    module = api.post(
        "/api/v2/organizations/acme/registry-modules",
        doc("registry-modules", name="vpc\n", provider="aws"),
    )
    assert module.status == 422, module.json
