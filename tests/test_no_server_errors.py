"""Whatever a client sends to any route, the answer is never a 5xx.

Walks the whole route table (so new endpoints are covered without being listed here) with odd
path values and malformed bodies, as a site admin, and checks every answer is a well-formed
error document or a success, never a server error.
"""

from __future__ import annotations

import re

from tests.conftest import Api

BODIES = [
    "",
    "null",
    "[]",
    "5",
    '"text"',
    "{not json",
    '{"data": 5}',
    '{"data": []}',
    '{"data": {"type": 7, "attributes": []}}',
    '{"data": {"type": "x", "attributes": {"name": [1], "version": {}, "enabled": "yes",'
    ' "port": "25", "description": 1, "email": null}}}',
    # Nested past the JSON decoder's recursion limit (it used to escape as a 500).
    '{"data": ' + "[" * 5000 + "]" * 5000 + "}",
]
PATH_VALUES = ["x", "%00", "a" * 300]


def _paths(template: str) -> list[str]:
    return [re.sub(r"\{[^}]+\}", value, template) for value in PATH_VALUES]


def test_no_route_answers_5xx_to_malformed_input(api: Api):
    from app import app

    failures = []
    for template, methods in sorted(app.routes.items()):
        for method in methods:
            for path in _paths(template):
                bodies = BODIES if method in ("POST", "PATCH", "PUT", "DELETE") else [""]
                for body in bodies:
                    reply = api.call(method, path, raw=body)
                    if reply.status >= 500:
                        failures.append((method, path[:80], body, reply.status, reply.body[:200]))
                    elif reply.status >= 400 and "application/" in reply.headers.get(
                        "Content-Type", ""
                    ):
                        assert reply.json["errors"], (method, path, body)
    assert failures == []


def test_deeply_nested_bodies_are_a_400_that_changes_nothing(api: Api):
    from tests.conftest import make_org

    make_org(api, "acme")
    deep = "{" + '"a":{' * 3000 + "}" * 3001
    modules = "/api/v2/organizations/acme/registry-modules"
    for body in (deep, '{"data": {"type": "registry-modules", "attributes": ' + deep + "}}"):
        reply = api.call("POST", modules, raw=body)
        assert reply.status == 400, reply.body[:200]
        assert "nests deeper than" in reply.error["detail"]
    moderately = '{"data": {"type": "registry-modules", "attributes": {"name": "vpc", ' + (
        '"provider": "aws", "x": ' + "[" * 40 + "]" * 40 + "}}}"
    )
    assert api.call("POST", modules, raw=moderately).status == 400
    assert api.get(modules).json["data"] == []
