"""Terraform's version constraints, as the module cache's seed and the bundles' export read
them (one parser: ``artifacts.constraints``)."""

from __future__ import annotations

import pytest

from chalicelib.artifacts import constraints

VERSIONS = [
    "1.0.0",
    "1.0.1+build.7",
    "1.4.2",
    "1.5.0",
    "2.0.0-rc1",
    "2.0.0-rc.1",
    "2.0.0",
    "2.1.0",
    "3.0.0",
]


def allowed(constraint: str | None) -> list[str]:
    parsed = constraints.parse(constraint)
    return [v for v in VERSIONS if parsed.allows_text(v)]


@pytest.mark.parametrize(
    ("constraint", "expected"),
    [
        # Exact: a bare version is '='; missing numbers are 0.
        ("1.4.2", ["1.4.2"]),
        ("= 1.4.2", ["1.4.2"]),
        ("=1.5", ["1.5.0"]),
        ("v2", ["2.0.0"]),
        # Comparisons, combined with commas; whitespace anywhere around the parts.
        (">= 1.0, < 2.0", ["1.0.0", "1.0.1+build.7", "1.4.2", "1.5.0"]),
        ("  >=1.4.2 ,<=2.0.0  ", ["1.4.2", "1.5.0", "2.0.0"]),
        ("> 2", ["2.1.0", "3.0.0"]),
        ("!= 2.0.0", ["1.0.0", "1.0.1+build.7", "1.4.2", "1.5.0", "2.1.0", "3.0.0"]),
        ("> 1.4.2, != 2.1.0, < 3", ["1.5.0", "2.0.0"]),
        # ~>: only the rightmost number written may grow.
        ("~> 1.4", ["1.4.2", "1.5.0"]),
        ("~> 1.0", ["1.0.0", "1.0.1+build.7", "1.4.2", "1.5.0"]),
        ("~> 1.4.0", ["1.4.2"]),
        ("~> 1.0.0", ["1.0.0", "1.0.1+build.7"]),
        ("~> 1.4.3", []),
        ("~> 2", ["2.0.0", "2.1.0"]),
        ("~> 2.0.0-rc1", ["2.0.0"]),  # a pre-release bound; pre-releases still not taken
        # Pre-releases: only an exact clause naming one takes it.
        ("2.0.0-rc1", ["2.0.0-rc1"]),
        ("= 2.0.0-rc.1", ["2.0.0-rc.1"]),
        (">= 2.0.0-rc1", ["2.0.0", "2.1.0", "3.0.0"]),
        ("> 1.5.0, < 2.0.0", []),
        ("< 2.0.0-rc.1", ["1.0.0", "1.0.1+build.7", "1.4.2", "1.5.0"]),
        # Build metadata never counts for precedence.
        ("= 1.0.1", ["1.0.1+build.7"]),
        ("= 1.0.1+other", ["1.0.1+build.7"]),
        ("> 1.0.1", ["1.4.2", "1.5.0", "2.0.0", "2.1.0", "3.0.0"]),
        ("!= 1.0.1", ["1.0.0", "1.4.2", "1.5.0", "2.0.0", "2.1.0", "3.0.0"]),
        # Nothing named: every release, no pre-release.
        ("", ["1.0.0", "1.0.1+build.7", "1.4.2", "1.5.0", "2.0.0", "2.1.0", "3.0.0"]),
        (None, ["1.0.0", "1.0.1+build.7", "1.4.2", "1.5.0", "2.0.0", "2.1.0", "3.0.0"]),
        (" * ", ["1.0.0", "1.0.1+build.7", "1.4.2", "1.5.0", "2.0.0", "2.1.0", "3.0.0"]),
    ],
)
def test_a_constraint_allows_what_terraform_would(
    constraint: str | None, expected: list[str]
) -> None:
    assert allowed(constraint) == expected


def test_only_an_empty_constraint_allows_every_release() -> None:
    for empty in ("", "  ", "*", None):
        assert constraints.parse(empty).allows_every_release
    assert not constraints.parse(">= 0").allows_every_release


def test_a_text_that_is_no_version_is_never_allowed() -> None:
    for constraint in ("", ">= 0", "!= 1.0.0"):
        parsed = constraints.parse(constraint)
        assert not parsed.allows_text("latest")
        assert not parsed.allows_text("1.0")
        assert parsed.allows_text("1.2.3")


@pytest.mark.parametrize(
    ("constraint", "words"),
    [
        (">>> 1", "is not a version constraint"),
        ("~> x", "is not a version constraint"),
        ("not a constraint", "is not a version constraint"),
        ("1.0.0 2.0.0", "is not a version constraint"),
        ("1.2.3.4", "is not a version constraint"),
        (">= 1.0,", "'' is not a version constraint"),
        (", 1.0", "'' is not a version constraint"),
        ("* , 1.0", "'\\*' is not a version constraint"),
        ("=> 1.0", "is not a version constraint"),
        ("1.0.0-", "not a valid semantic version"),
        ("1.0.0-rc..1", "not a valid semantic version"),
        ("1" * 21, "longer than 20 digits"),
        ("a" * 256, "at most 255 characters"),
        ("1.0.0,\n" * 40, "at most 255 characters"),
    ],
)
def test_a_bad_constraint_is_refused_saying_why(constraint: str, words: str) -> None:
    with pytest.raises(constraints.InvalidConstraint, match=words):
        constraints.parse(constraint)


def test_the_longest_constraint_is_read() -> None:
    text = ", ".join(["!= 1.0.0"] * 25).ljust(constraints.MAX_LENGTH)
    assert len(text) == constraints.MAX_LENGTH
    assert allowed(text) == ["1.0.1+build.7", "1.4.2", "1.5.0", "2.0.0", "2.1.0", "3.0.0"]
