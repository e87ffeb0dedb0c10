"""The import's first pass: the whole bundle read once and checked before anything is
created. Every file's SHA-256 and size must be the manifest's, nothing may be missing or
extra, every GPG key must be the key its entry names, and every provider version's
SHA256SUMS must be signed by its bundled key and list each platform's archive with the
digest it has. Any failure refuses the whole bundle (``Refused`` lists them all)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import IO

from chalicelib.bundles import manifest
from chalicelib.bundles.manifest import BadBundle, Entry, Manifest
from chalicelib.bundles.tarstream import digest_of, is_manifest, members

# Small files (keys, SHA256SUMS, signatures) held for the checks, in all.
MAX_SMALL_TOTAL = 64 * 1024 * 1024
SMALL_NAMES = (".asc", "/SHA256SUMS", "/SHA256SUMS.sig")
MAX_PROBLEMS = 50


class Refused(Exception):
    """The bundle failed its checks: nothing of it is imported."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__("; ".join(problems[:MAX_PROBLEMS]))
        self.problems = problems[:MAX_PROBLEMS]


@dataclass
class Checked:
    """A bundle that passed: its manifest, the digests read, and the small files' bytes."""

    manifest: Manifest
    digests: dict[str, tuple[str, int]]
    small: dict[str, bytes]

    def armor(self, namespace: str, key_id: str) -> str | None:
        data = self.small.get(manifest.key_path(namespace, key_id))
        return data.decode("utf-8", "replace") if data is not None else None


def read(stream: IO[bytes]) -> Checked:
    """Pass one over ``stream``: digests and small files; ``BadBundle`` for a bundle that
    is no bundle."""
    digests: dict[str, tuple[str, int]] = {}
    small: dict[str, bytes] = {}
    held = 0
    found: Manifest | None = None
    for member in members(stream):
        if is_manifest(member):
            found = manifest.parse(member.file.read(manifest.MAX_MANIFEST_BYTES + 1))
            continue
        keep = manifest.MAX_SMALL_FILE if member.path.endswith(SMALL_NAMES) else 0
        if held >= MAX_SMALL_TOTAL:
            keep = 0
        sha, size, data = digest_of(member.file, keep)
        digests[member.path] = (sha, size)
        if data is not None and keep:
            small[member.path] = data
            held += len(data)
    if found is None:
        raise BadBundle("the bundle has no manifest.json")
    return Checked(found, digests, small)


def _files(checked: Checked) -> Iterable[str]:
    listed = {f.path: f for e in checked.manifest.entries for f in e.files}
    for path in sorted(set(checked.digests) - set(listed)):
        yield f"{path} is in the bundle but not in its manifest"
    for path, file in listed.items():
        read_ = checked.digests.get(path)
        if read_ is None:
            yield f"{path} is in the manifest but not in the bundle"
        elif read_ != (file.sha256, file.size):
            yield (
                f"{path}: sha256 {read_[0]} ({read_[1]} bytes) is not the manifest's "
                f"{file.sha256} ({file.size} bytes)"
            )
        elif file.role in manifest.SMALL_ROLES and path not in checked.small:
            yield f"{path} is larger than {manifest.MAX_SMALL_FILE} bytes"


def _key(checked: Checked, entry: Entry) -> Iterable[str]:
    from chalicelib.providers import gpg

    namespace, key_id = entry.parts
    armor = checked.armor(namespace, key_id)
    if armor is None:
        return
    try:
        parsed = gpg.parse_public_key(armor)
    except Exception as exc:  # noqa: BLE001 - a 422 (ApiError) for any unreadable key
        yield f"{entry.label}: {exc}"
        return
    if parsed.key_id != key_id.upper():
        yield f"{entry.label}: the bundled key is {parsed.key_id}, not {key_id}"


def _provider(checked: Checked, entry: Entry, keys: set[tuple[str, str]]) -> Iterable[str]:
    from chalicelib.artifacts.pipeline import Refused as Unsigned
    from chalicelib.providers.ingest import checks

    namespace, key_id = entry.parts[1], (entry.key_id or "").upper()
    armor = checked.armor(namespace, key_id)
    if armor is None or (namespace, key_id) not in keys:
        yield f"{entry.label}: its key {key_id} of {namespace} is not in the bundle"
        return
    sums = checked.small.get(entry.file(manifest.SHASUMS).path)
    signature = checked.small.get(entry.file(manifest.SIGNATURE).path)
    if sums is None or signature is None:
        return  # said by _files
    try:
        checks.verify_signature(armor, key_id, sums, signature)
        listed = checks.parse_shasums(sums)
    except Unsigned as exc:
        yield f"{entry.label}: {exc.reason}"
        return
    for file in entry.files:
        if file.role != manifest.PLATFORM:
            continue
        if listed.get(file.filename or "") != file.sha256:
            yield f"{entry.label}: SHA256SUMS does not list {file.filename} with its sha256"


def check(checked: Checked) -> Checked:
    """``checked`` when every rule holds; ``Refused`` with every problem found."""
    problems = list(_files(checked))
    keys = {
        (e.parts[0], e.parts[1].upper())
        for e in checked.manifest.entries
        if e.kind == manifest.GPG_KEY
    }
    for entry in checked.manifest.entries:
        if entry.kind == manifest.GPG_KEY:
            problems += _key(checked, entry)
        elif entry.kind == manifest.PROVIDER:
            problems += _provider(checked, entry, keys)
    if problems:
        raise Refused(problems)
    return checked
