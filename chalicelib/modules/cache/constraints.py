"""Terraform's version constraints (``">= 1.2, < 2.0"``, ``"~> 5.0"``, ``"= 1.0.0"``), as a
seed names the versions to fetch.

Each comma-separated clause is an operator (``=``, ``!=``, ``>``, ``>=``, ``<``, ``<=``,
``~>``; none is ``=``) and a version of one to three numbers (a pre-release only in full).
``~> X.Y`` allows X.Y and later before X+1; ``~> X.Y.Z`` allows X.Y.Z and later before
X.Y+1. As terraform does, a pre-release matches only a clause that names it exactly.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from chalicelib.artifacts import semver

MAX_LENGTH = 200
CLAUSE = re.compile(
    r"^\s*(?P<op>=|!=|>=|<=|>|<|~>)?\s*v?(?P<major>\d{1,9})(?:\.(?P<minor>\d{1,9}))?"
    r"(?:\.(?P<patch>\d{1,9})(?P<rest>[-+][0-9A-Za-z.+-]*)?)?\s*$"
)
Key = tuple[int, int, int]


class InvalidConstraint(ValueError):
    """``str``: what is wrong, for the caller."""


@dataclass(frozen=True)
class Constraint:
    text: str
    clauses: tuple[tuple[str, Key, str], ...]  # (operator, numbers, the exact text)
    checks: tuple[Callable[[semver.Version], bool], ...]

    def allows(self, version: semver.Version) -> bool:
        if version.is_prerelease and not any(
            op == "=" and exact == version.text for op, _, exact in self.clauses
        ):
            return False
        return all(check(version) for check in self.checks)


def _key(version: semver.Version) -> Key:
    return (version.major, version.minor, version.patch)


def parse(text: str) -> Constraint:
    if not text.strip() or len(text) > MAX_LENGTH:
        raise InvalidConstraint(f"a version constraint is 1 to {MAX_LENGTH} characters")
    clauses = []
    checks = []
    for part in text.split(","):
        match = CLAUSE.match(part)
        if not match:
            raise InvalidConstraint(f"{part.strip()!r} is not a version constraint")
        op = match["op"] or "="
        given = [match["major"], match["minor"], match["patch"]]
        numbers = tuple(int(n or 0) for n in given)
        key: Key = (numbers[0], numbers[1], numbers[2])
        exact = part.strip().lstrip("=!<>~ ").removeprefix("v")
        if match["rest"] and op != "=":
            raise InvalidConstraint(f"{part.strip()!r}: a pre-release only with '='")
        clauses.append((op, key, exact))
        checks.append(_check(op, key, exact, sum(1 for n in given if n is not None)))
    return Constraint(text, tuple(clauses), tuple(checks))


def _check(op: str, key: Key, exact: str, parts: int) -> Callable[[semver.Version], bool]:
    if op == "=":
        return lambda v: v.text == exact if "-" in exact or "+" in exact else _key(v) == key
    if op == "!=":
        return lambda v: _key(v) != key
    if op == ">":
        return lambda v: _key(v) > key
    if op == ">=":
        return lambda v: _key(v) >= key
    if op == "<":
        return lambda v: _key(v) < key
    if op == "<=":
        return lambda v: _key(v) <= key
    # ~>: the last number given may grow, the ones before it stay
    if parts <= 2:
        upper: Key = (key[0] + 1, 0, 0)
    else:
        upper = (key[0], key[1] + 1, 0)
    return lambda v: key <= _key(v) < upper
