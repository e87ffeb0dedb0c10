"""Terraform's version constraints (``">= 1.2, < 2.0"``, ``"~> 5.0"``, ``"= 1.0.0"``,
``"!= 1.3.0"``, a bare version), the one reading every caller shares.

A constraint is comma-separated clauses, each an operator (``=``, ``!=``, ``>``, ``>=``,
``<``, ``<=``, ``~>``; none is ``=``) and a version of one to three numbers (the missing ones
are 0), optionally ``v``-prefixed and with a pre-release or build suffix; whitespace around
either is ignored. Empty (or ``*``) constrains nothing: every release.

* ``~>`` lets only the rightmost number given grow: ``~> 1.4`` is 1.4 and later before 2,
  ``~> 1.4.2`` is 1.4.2 and later before 1.5 (``~> 1`` reads as ``~> 1.0``).
* A pre-release matches only when an exact clause (``=`` or none) names it; inexact
  operators never match one, even against a pre-release bound (Terraform's rule).
* Build metadata never counts: ``= 1.0.0`` is every build of 1.0.0, ``> 1.0.0`` none.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

from chalicelib.artifacts import semver

MAX_LENGTH = 255
ANY = ("", "*")
_CLAUSE = re.compile(
    r"\s*(?P<op>=|!=|>=|<=|>|<|~>)?\s*v?(?P<numbers>\d+(?:\.\d+){0,2})"
    r"(?P<suffix>[-+][0-9A-Za-z.+-]*)?\s*"
)


class InvalidConstraint(ValueError):
    """``str``: what is wrong, for the caller to show."""


def _precedence(version: semver.Version) -> str:
    """``order_key`` without the build metadata, which SemVer leaves out of precedence."""
    return replace(version, build="").order_key


@dataclass(frozen=True)
class Clause:
    op: str
    bound: semver.Version
    numbers: int  # how many of major, minor, patch the clause wrote

    def holds(self, version: semver.Version) -> bool:
        have, bound = _precedence(version), _precedence(self.bound)
        if self.op == "=":
            return have == bound
        if self.op == "!=":
            return have != bound
        if self.op == ">":
            return have > bound
        if self.op == ">=":
            return have >= bound
        if self.op == "<":
            return have < bound
        if self.op == "<=":
            return have <= bound
        # ~>: the numbers before the last one written stay as written.
        if self.numbers >= 3:
            fixed = (version.major, version.minor) == (self.bound.major, self.bound.minor)
        else:
            fixed = version.major == self.bound.major
        return fixed and have >= bound


@dataclass(frozen=True)
class Constraint:
    text: str
    clauses: tuple[Clause, ...]

    @property
    def allows_every_release(self) -> bool:
        """Empty or ``*``: a constraint that names nothing."""
        return not self.clauses

    def allows(self, version: semver.Version) -> bool:
        if version.is_prerelease and not any(
            c.op == "=" and _precedence(c.bound) == _precedence(version) for c in self.clauses
        ):
            return False
        return all(clause.holds(version) for clause in self.clauses)

    def allows_text(self, version: str) -> bool:
        """``allows`` for a version's text; a text that is no version is never allowed."""
        try:
            return self.allows(semver.parse(version))
        except semver.InvalidVersion:
            return False


def parse(text: str | None) -> Constraint:
    """``text`` as a constraint; ``InvalidConstraint`` (saying why) for one that is not."""
    text = text or ""
    if len(text) > MAX_LENGTH:
        raise InvalidConstraint(f"a version constraint is at most {MAX_LENGTH} characters")
    if text.strip() in ANY:
        return Constraint(text, ())
    return Constraint(text, tuple(_clause(part.strip()) for part in text.split(",")))


def _clause(part: str) -> Clause:
    match = _CLAUSE.fullmatch(part)
    if not match:
        raise InvalidConstraint(f"{part!r} is not a version constraint")
    numbers = match["numbers"].split(".")
    padded = ".".join(numbers + ["0"] * (3 - len(numbers))) + (match["suffix"] or "")
    try:
        bound = semver.parse(padded)
    except semver.InvalidVersion as exc:
        raise InvalidConstraint(f"{part!r}: {exc}") from None
    return Clause(match["op"] or "=", bound, len(numbers))
