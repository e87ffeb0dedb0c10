"""Which of a repository's tags are versions: ``[tag-prefix][v]<semver>``, and why the
others are skipped (reported in the module's ``vcs-sync``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

from chalicelib.artifacts import semver


@dataclass(frozen=True)
class SkippedTag:
    tag: str
    reason: str


class TagVersion(NamedTuple):
    """A tag that names a version: the bare SemVer text, the commit and the tag itself."""

    version: str
    sha: str
    tag: str


def semver_tags(
    tags: dict[str, str], tag_prefix: str | None = None
) -> tuple[list[TagVersion], list[SkippedTag]]:
    """Versions from tags: ``[prefix][v]<semver>`` -> ``TagVersion``, in version order.

    Returns the versions and the skipped tags with the reason for each. Two tags naming
    the same version (``v1.0.0`` and ``1.0.0``): the first by name wins, the other is skipped.
    """
    found: dict[str, tuple[semver.Version, str, str]] = {}
    skipped: list[SkippedTag] = []
    for tag, sha in sorted(tags.items()):
        rest = tag
        if tag_prefix:
            if not tag.startswith(tag_prefix):
                skipped.append(
                    SkippedTag(tag, f"does not start with the tag prefix {tag_prefix!r}")
                )
                continue
            rest = tag[len(tag_prefix) :]
        candidate = rest[1:] if rest[:1] == "v" else rest
        try:
            version = semver.parse(candidate)
        except semver.InvalidVersion:
            skipped.append(SkippedTag(tag, f"{rest!r} is not a semantic version (v1.2.3 or 1.2.3)"))
            continue
        if version.text in found:
            skipped.append(
                SkippedTag(
                    tag,
                    f"version {version.text} is already taken by tag {found[version.text][2]!r}",
                )
            )
            continue
        found[version.text] = (version, sha, tag)
    ordered = sorted(found.values(), key=lambda item: item[0].order_key)
    return [TagVersion(v.text, sha, tag) for v, sha, tag in ordered], skipped
