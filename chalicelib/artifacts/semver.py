"""SemVer 2.0 parsing and a sortable string key that orders versions by precedence.

DynamoDB sorts range keys bytewise, so ``order_key`` encodes precedence into a string:
zero-padded numbers, pre-releases before the release, numeric identifiers before
alphanumeric ones, and shorter identifier lists first. Build metadata does not affect
precedence but is appended so two builds of one version still get distinct keys.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from chalicelib.core.api import bounds

_NUM = r"0|[1-9]\d*"
_PRE_ID = r"(?:0|[1-9]\d*|\d*[A-Za-z-][0-9A-Za-z-]*)"
SEMVER = re.compile(
    rf"^(?P<major>{_NUM})\.(?P<minor>{_NUM})\.(?P<patch>{_NUM})"
    rf"(?:-(?P<pre>{_PRE_ID}(?:\.{_PRE_ID})*))?"
    r"(?:\+(?P<build>[0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*))?$"
)
MAX_NUMBER_DIGITS = 20
MAX_LENGTH = bounds.VERSION
# DynamoDB's bound on a sort key, in bytes (an order key is ASCII).
MAX_ORDER_KEY = 1024
_SEPARATOR = "!"  # sorts below '-' and every alphanumeric character
_END = " "  # sorts below the separator: a shorter identifier list comes first
_RELEASE = "~"  # sorts above '-': a release comes after its pre-releases


class InvalidVersion(ValueError):
    pass


@dataclass(frozen=True)
class Version:
    text: str
    major: int
    minor: int
    patch: int
    prerelease: tuple[str, ...]
    build: str

    @property
    def is_prerelease(self) -> bool:
        return bool(self.prerelease)

    @property
    def order_key(self) -> str:
        triple = ".".join(
            f"{n:0{MAX_NUMBER_DIGITS}d}" for n in (self.major, self.minor, self.patch)
        )
        if self.prerelease:
            ids = _SEPARATOR.join(_encode(part) for part in self.prerelease)
            return f"{triple}-{ids}{_END}{self.build}"
        return f"{triple}{_RELEASE}{_END}{self.build}"


def _encode(identifier: str) -> str:
    if identifier.isdigit():
        return "0" + identifier.rjust(MAX_NUMBER_DIGITS, "0")
    return "1" + identifier


def parse(text: str) -> Version:
    """``text`` as a version: at most ``MAX_LENGTH`` characters, whose ``order_key`` fits a
    DynamoDB sort key (``MAX_ORDER_KEY`` bytes): a longer one is invalid, in a request's
    body (422) as in its path (404), and never reaches the table."""
    if text and len(text) > MAX_LENGTH:
        raise InvalidVersion(f"a version is at most {MAX_LENGTH} characters, not {len(text)}")
    match = SEMVER.match(text or "")
    if not match:
        hint = ""
        if text and text[:1] in "vV" and SEMVER.match(text[1:]):
            hint = f" (drop the 'v' prefix: {text[1:]!r})"
        raise InvalidVersion(f"{text!r} is not a valid semantic version{hint}")
    parts = match.groupdict()
    numbers = [parts["major"], parts["minor"], parts["patch"]]
    pre = tuple(parts["pre"].split(".")) if parts["pre"] else ()
    if any(len(n) > MAX_NUMBER_DIGITS for n in numbers + [p for p in pre if p.isdigit()]):
        raise InvalidVersion(f"{text!r} has a number longer than {MAX_NUMBER_DIGITS} digits")
    major, minor, patch = (int(n) for n in numbers)
    version = Version(text, major, minor, patch, pre, parts["build"] or "")
    if len(version.order_key) > MAX_ORDER_KEY:  # many short numeric pre-release identifiers
        raise InvalidVersion(f"{text!r} has too many pre-release identifiers")
    return version


def is_valid(text: str) -> bool:
    try:
        parse(text)
    except InvalidVersion:
        return False
    return True


def latest_of(versions: Iterable[Version]) -> Version | None:
    """What "latest" means for every artifact type: the highest release, else (only
    pre-releases) the highest pre-release; None for none. Precedence is ``order_key``'s."""
    found = list(versions)
    releases = [v for v in found if not v.is_prerelease]
    return max(releases or found, key=lambda v: v.order_key, default=None)
