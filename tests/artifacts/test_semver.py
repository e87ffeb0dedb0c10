"""SemVer 2.0 parsing and the sortable key DynamoDB orders versions by."""

from __future__ import annotations

import random

import pytest

from chalicelib.artifacts import semver

# Precedence examples from the SemVer 2.0 specification (section 11), plus number widths
# that string sorting gets wrong.
ORDERED = [
    "0.0.2",
    "0.0.10",
    "0.9.0",
    "1.0.0-0",
    "1.0.0-2",
    "1.0.0-10",
    "1.0.0-alpha",
    "1.0.0-alpha.1",
    "1.0.0-alpha.beta",
    "1.0.0-beta",
    "1.0.0-beta.2",
    "1.0.0-beta.11",
    "1.0.0-rc.1",
    "1.0.0",
    "1.2.0",
    "1.10.0",
    "2.0.0-alpha-1",
    "2.0.0",
    "10.0.0",
]


def test_order_key_sorts_by_semver_precedence():
    shuffled = ORDERED[:]
    random.Random(7).shuffle(shuffled)
    assert sorted(shuffled, key=lambda v: semver.parse(v).order_key) == ORDERED


def test_build_metadata_does_not_change_precedence_but_keeps_keys_distinct():
    a, b = semver.parse("1.0.0+build.1"), semver.parse("1.0.0+build.2")
    assert a.order_key != b.order_key
    assert semver.parse("1.0.0-rc.1").order_key < a.order_key < semver.parse("1.0.1").order_key


@pytest.mark.parametrize(
    "text", ["1", "1.0", "01.0.0", "1.0.0-", "1.0.0-01", "1.0.0+", "1.0.0 ", "", "x.y.z"]
)
def test_invalid_versions_are_rejected(text: str):
    assert not semver.is_valid(text)


def test_v_prefix_gets_a_hint():
    with pytest.raises(semver.InvalidVersion, match="drop the 'v' prefix"):
        semver.parse("v1.2.3")


def test_prerelease_flag():
    assert semver.parse("1.0.0-rc.1").is_prerelease
    assert not semver.parse("1.0.0+build").is_prerelease


@pytest.mark.parametrize(
    ("texts", "latest"),
    [
        (["1.0.0", "2.0.0-rc.1", "1.1.0"], "1.1.0"),  # a release before any pre-release
        (["2.0.0-rc.1", "2.0.0-beta.2"], "2.0.0-rc.1"),  # only pre-releases: the highest
        (["0.9.0", "0.10.0"], "0.10.0"),  # precedence, not text order
        ([], None),
    ],
)
def test_latest_of_is_the_highest_release_else_the_highest_pre_release(
    texts: list[str], latest: str | None
):
    found = semver.latest_of(semver.parse(t) for t in texts)
    assert (found.text if found else None) == latest
