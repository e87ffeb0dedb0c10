"""Version constraints as terraform writes them: ``>= 1.2, < 2.0``, ``~> 1.4``, ``= 1.0.0``,
``!= 1.3.0``, a bare version (exactly it), or empty / ``*`` (every version). Pre-releases
match only a constraint that names them exactly, as terraform does."""

from __future__ import annotations

import re
from collections.abc import Callable

from chalicelib.artifacts import semver

PART = re.compile(r"^\s*(=|!=|>=|<=|>|<|~>)?\s*(\S+)\s*$")
MAX_LENGTH = 255


class BadConstraint(ValueError):
    pass


def _triple(v: semver.Version) -> tuple[int, int, int]:
    return (v.major, v.minor, v.patch)


def _pessimistic(bound: semver.Version, text: str) -> Callable[[semver.Version], bool]:
    """``~> 1.4`` allows 1.x from 1.4; ``~> 1.4.2`` allows 1.4.x from 1.4.2."""
    numbers = text.split("-")[0].split("+")[0].count(".") + 1
    if numbers >= 3:
        return lambda v: (v.major, v.minor) == (bound.major, bound.minor) and _ge(v, bound)
    return lambda v: v.major == bound.major and _ge(v, bound)


def _ge(v: semver.Version, bound: semver.Version) -> bool:
    return v.order_key >= bound.order_key


def _padded(text: str) -> str:
    """``1.4`` read as ``1.4.0`` (terraform lets constraints leave numbers out)."""
    core, sep, rest = text.partition("-")
    while core.count(".") < 2 and re.fullmatch(r"[0-9.]+", core):
        core += ".0"
    return core + sep + rest


def parse(constraint: str | None) -> Callable[[str], bool]:
    """A test of version texts; ``BadConstraint`` for a constraint that is not one."""
    text = (constraint or "").strip()
    if len(text) > MAX_LENGTH:
        raise BadConstraint(f"a version constraint is at most {MAX_LENGTH} characters")
    if text in ("", "*"):
        tests: list[Callable[[semver.Version], bool]] = [lambda v: not v.is_prerelease]
    else:
        tests = []
        for part in text.split(","):
            match = PART.match(part)
            if not match:
                raise BadConstraint(f"{part.strip()!r} is not a version constraint")
            op, raw = match.group(1) or "=", match.group(2)
            try:
                bound = semver.parse(_padded(raw))
            except semver.InvalidVersion as exc:
                raise BadConstraint(str(exc)) from None
            tests.append(_test(op, bound, raw))
        if not any(op_names_prerelease(p) for p in text.split(",")):
            tests.append(lambda v: not v.is_prerelease)

    def matches(version: str) -> bool:
        try:
            parsed = semver.parse(version)
        except semver.InvalidVersion:
            return False
        return all(test(parsed) for test in tests)

    return matches


def op_names_prerelease(part: str) -> bool:
    match = PART.match(part)
    return bool(match and (match.group(1) in (None, "=")) and "-" in match.group(2))


def _test(op: str, bound: semver.Version, raw: str) -> Callable[[semver.Version], bool]:
    key = bound.order_key
    tests: dict[str, Callable[[semver.Version], bool]] = {
        "=": lambda v: (
            v.order_key == key
            or (_triple(v) == _triple(bound) and not v.prerelease and not bound.prerelease)
        ),
        "!=": lambda v: v.order_key != key,
        ">": lambda v: v.order_key > key,
        ">=": lambda v: v.order_key >= key,
        "<": lambda v: v.order_key < key,
        "<=": lambda v: v.order_key <= key,
    }
    if op == "~>":
        return _pessimistic(bound, raw)
    return tests[op]
