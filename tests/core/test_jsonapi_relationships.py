"""JSON:API to-many relationships are built in one place (``core.api.jsonapi.to_many`` and
``identifiers``), not by hand in each render file."""

from __future__ import annotations

import ast

from chalicelib.core.api.jsonapi import identifiers, to_many
from tests.test_layout import MODULES

HOME = "chalicelib.core.api.jsonapi"


def test_to_many_is_the_documented_shape() -> None:
    assert to_many("teams", iter(["team-1", "team-2"])) == {
        "data": [{"id": "team-1", "type": "teams"}, {"id": "team-2", "type": "teams"}]
    }
    assert list(to_many("teams", ["t"])["data"][0]) == ["id", "type"]  # to_one's key order
    assert to_many("oauth-tokens", [], links={"related": "/x"}) == {
        "data": [],
        "links": {"related": "/x"},
    }
    assert identifiers("tags", ("a",)) == [{"id": "a", "type": "tags"}]


def _identifier(node: ast.AST) -> bool:
    """A dict literal of exactly the keys ``id`` and ``type``: a resource identifier."""
    if not isinstance(node, ast.Dict):
        return False
    keys = {k.value for k in node.keys if isinstance(k, ast.Constant)}
    return keys == {"id", "type"} and len(node.keys) == 2


def _hand_built(node: ast.AST) -> bool:
    if isinstance(node, ast.ListComp):
        return _identifier(node.elt)
    return isinstance(node, ast.List) and any(_identifier(e) for e in node.elts)


def hand_built(source: str) -> list[int]:
    """Lines where ``source`` builds a list of resource identifiers by hand (a comprehension
    or a list literal of them)."""
    return [getattr(n, "lineno", 0) for n in ast.walk(ast.parse(source)) if _hand_built(n)]


def test_no_render_builds_a_to_many_relationship_by_hand() -> None:
    wrong = [
        f"{name}:{line}"
        for name, path in sorted(MODULES.items())
        if name != HOME
        for line in hand_built(path.read_text())
    ]
    assert not wrong, wrong


def test_the_check_sees_a_hand_built_relationship() -> None:
    """Not vacuous: the shapes this refactoring replaced are seen."""
    assert hand_built('r = {"data": [{"id": u, "type": "users"} for u in members]}')
    assert hand_built('r = [{"id": module.no_code_module_id, "type": "no-code-modules"}]')
    assert not hand_built('r = to_many("users", members)')
