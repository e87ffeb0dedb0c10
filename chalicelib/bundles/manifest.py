"""The bundle format: one tar file whose last member is ``manifest.json``.

``manifest.json``::

    {"format": "registry-bundle", "format-version": 1, "source": "<registry URL>",
     "created-at": "<ISO time>", "entries": [<entry>, ...]}

Each entry has a ``kind``, an ``address``, a ``version`` (none for a key) and ``files``,
each ``{"path", "sha256", "size", "role"}`` (the path of its tar member):

* ``gpg-key``: address ``<namespace>/<key id>``, one file (role ``armor``,
  ``gpg-keys/<namespace>/<key id>.asc``);
* ``module``: address ``<organization>/<namespace>/<name>/<provider>``, one file (role
  ``archive``, ``modules/<address>/<version>.tar.gz``);
* ``cached-module``: a version of the module cache (``modules.cache``): address
  ``<namespace>/<name>/<provider>`` (the upstream's), one file (role ``archive``,
  ``cached-modules/<address>/<version>.tar.gz``), with ``identity`` (what names the
  content at its source: the archive's SHA-256 or ``git:<commit>``) and ``source-host``
  when known. Additive: the format stays 1, and a reader without this kind refuses the
  whole bundle as one with an unknown kind;
* ``provider``: address ``<organization>/<namespace>/<name>``, with ``key-id`` and
  ``protocols``; files ``SHA256SUMS`` (role ``shasums``), ``SHA256SUMS.sig`` (``signature``)
  and one per platform (role ``platform``, with ``os``, ``arch``, ``filename``), under
  ``providers/<address>/<version>/``.

The manifest comes last so that an export streams: each file's digest is known once it is
written. An import reads the whole bundle once to check it (``verify``) before creating
anything. Every name is checked against the registry's own rules (``SAFE``), so a path can
never leave the bundle's folders.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

FORMAT = "registry-bundle"
FORMAT_VERSION = 1
MANIFEST = "manifest.json"
MAX_MANIFEST_BYTES = 8 * 1024 * 1024
MAX_ENTRIES = 5000
# SHA256SUMS, signatures and keys are read into memory to be checked: each at most this.
MAX_SMALL_FILE = 1024 * 1024

GPG_KEY, MODULE, PROVIDER = "gpg-key", "module", "provider"
CACHED_MODULE = "cached-module"
KINDS = (GPG_KEY, MODULE, PROVIDER, CACHED_MODULE)
ARMOR, ARCHIVE, SHASUMS, SIGNATURE, PLATFORM = (
    "armor",
    "archive",
    "shasums",
    "signature",
    "platform",
)
SMALL_ROLES = (ARMOR, SHASUMS, SIGNATURE)

# One path segment: what the registry allows in names, versions and file names.
SAFE = re.compile(r"^[0-9A-Za-z_+-][0-9A-Za-z._+-]{0,254}$")
DIGEST = re.compile(r"^[0-9a-f]{64}$")


class BadBundle(Exception):
    """The bundle is not one this registry reads: nothing of it is imported."""


@dataclass(frozen=True)
class File:
    path: str
    sha256: str
    size: int
    role: str
    os: str | None = None
    arch: str | None = None
    filename: str | None = None

    def document(self) -> dict[str, Any]:
        extra = {"os": self.os, "arch": self.arch, "filename": self.filename}
        return {
            "path": self.path,
            "sha256": self.sha256,
            "size": self.size,
            "role": self.role,
            **{k: v for k, v in extra.items() if v is not None},
        }


@dataclass(frozen=True)
class Entry:
    kind: str
    address: str
    version: str | None
    files: tuple[File, ...]
    key_id: str | None = None
    protocols: tuple[str, ...] = ()
    # a cached module's: what names its content at the source, and the host it came from
    identity: str | None = None
    source_host: str | None = None

    @property
    def parts(self) -> list[str]:
        return self.address.split("/")

    @property
    def label(self) -> str:
        return f"{self.kind} {self.address}" + (f" {self.version}" if self.version else "")

    def file(self, role: str) -> File:
        return next(f for f in self.files if f.role == role)

    def document(self) -> dict[str, Any]:
        out: dict[str, Any] = {"kind": self.kind, "address": self.address}
        if self.version is not None:
            out["version"] = self.version
        if self.kind == PROVIDER:
            out["key-id"] = self.key_id
            out["protocols"] = list(self.protocols)
        if self.kind == CACHED_MODULE:
            cached = {"identity": self.identity, "source-host": self.source_host}
            out.update({k: v for k, v in cached.items() if v})
        out["files"] = [f.document() for f in self.files]
        return out


@dataclass
class Manifest:
    source: str
    created_at: str
    entries: list[Entry] = field(default_factory=list)

    def document(self) -> dict[str, Any]:
        return {
            "format": FORMAT,
            "format-version": FORMAT_VERSION,
            "source": self.source,
            "created-at": self.created_at,
            "entries": [e.document() for e in self.entries],
        }

    def encode(self) -> bytes:
        return json.dumps(self.document(), indent=1).encode()


# ----- paths ------------------------------------------------------------------------------------


def _segments(*parts: str) -> str:
    for part in parts:
        if not SAFE.match(part) or part in (".", ".."):
            raise BadBundle(f"{part!r} is not a name a bundle may hold")
    return "/".join(parts)


def key_path(namespace: str, key_id: str) -> str:
    return _segments("gpg-keys", namespace, key_id.upper() + ".asc")


def module_path(address: str, version: str) -> str:
    return _segments("modules", *address.split("/"), version + ".tar.gz")


def cached_module_path(address: str, version: str) -> str:
    return _segments("cached-modules", *address.split("/"), version + ".tar.gz")


def provider_path(address: str, version: str, *rest: str) -> str:
    return _segments("providers", *address.split("/"), version, *rest)


def expected_path(entry: Entry, file: File) -> str:
    """Where ``file`` of ``entry`` must sit: a manifest naming any other path is refused."""
    if entry.kind == GPG_KEY:
        return key_path(*entry.parts)
    if entry.kind == MODULE:
        return module_path(entry.address, entry.version or "")
    if entry.kind == CACHED_MODULE:
        return cached_module_path(entry.address, entry.version or "")
    if file.role == PLATFORM:
        platform = f"{file.os}_{file.arch}"
        return provider_path(entry.address, entry.version or "", platform, file.filename or "")
    name = {SHASUMS: "SHA256SUMS", SIGNATURE: "SHA256SUMS.sig"}.get(file.role, "")
    return provider_path(entry.address, entry.version or "", name)


# ----- reading ----------------------------------------------------------------------------------

ROLES = {GPG_KEY: {ARMOR}, MODULE: {ARCHIVE}, PROVIDER: {SHASUMS, SIGNATURE, PLATFORM}}
ROLES[CACHED_MODULE] = {ARCHIVE}
ADDRESS_PARTS = {GPG_KEY: 2, MODULE: 4, PROVIDER: 3, CACHED_MODULE: 3}


def _text(value: Any, what: str) -> str:
    if not isinstance(value, str) or not value or len(value) > 255:
        raise BadBundle(f"manifest: {what} must be a non-empty string")
    return value


def _optional(raw: dict[str, Any], name: str) -> str | None:
    value = raw.get(name)
    return None if value is None else _text(value, f"an entry's {name}")


def _file(raw: Any, kind: str) -> File:
    if not isinstance(raw, dict):
        raise BadBundle("manifest: a file must be an object")
    role = _text(raw.get("role"), "a file's role")
    if role not in ROLES[kind]:
        raise BadBundle(f"manifest: a {kind} has no {role!r} file")
    digest = _text(raw.get("sha256"), "a file's sha256")
    size = raw.get("size")
    if not DIGEST.match(digest) or not isinstance(size, int) or isinstance(size, bool) or size < 0:
        raise BadBundle(f"manifest: {raw.get('path')!r} needs a hex sha256 and a size")
    platform = role == PLATFORM
    return File(
        path=_text(raw.get("path"), "a file's path"),
        sha256=digest,
        size=size,
        role=role,
        os=_text(raw.get("os"), "a platform's os") if platform else None,
        arch=_text(raw.get("arch"), "a platform's arch") if platform else None,
        filename=_text(raw.get("filename"), "a platform's filename") if platform else None,
    )


def _entry(raw: Any) -> Entry:
    if not isinstance(raw, dict):
        raise BadBundle("manifest: an entry must be an object")
    kind = raw.get("kind")
    if kind not in KINDS:
        raise BadBundle(f"manifest: unknown entry kind {kind!r}")
    address = _text(raw.get("address"), "an entry's address")
    if len(address.split("/")) != ADDRESS_PARTS[kind]:
        raise BadBundle(f"manifest: {address!r} is not a {kind} address")
    version = None if kind == GPG_KEY else _text(raw.get("version"), "an entry's version")
    files = raw.get("files")
    if not isinstance(files, list) or not files or len(files) > 200:
        raise BadBundle(f"manifest: {address} must list its files (at most 200)")
    protocols = raw.get("protocols") or []
    if kind == PROVIDER and (
        not isinstance(protocols, list)
        or len(protocols) > 10
        or not all(isinstance(p, str) and len(p) <= 8 for p in protocols)
    ):
        raise BadBundle(f"manifest: {address}'s protocols must be a short list of strings")
    entry = Entry(
        kind=kind,
        address=address,
        version=version,
        files=tuple(_file(f, kind) for f in files),
        key_id=_text(raw.get("key-id"), "a provider's key-id") if kind == PROVIDER else None,
        protocols=tuple(protocols) if kind == PROVIDER else (),
        identity=_optional(raw, "identity") if kind == CACHED_MODULE else None,
        source_host=_optional(raw, "source-host") if kind == CACHED_MODULE else None,
    )
    roles = [f.role for f in entry.files]
    single = {GPG_KEY: [ARMOR], MODULE: [ARCHIVE], CACHED_MODULE: [ARCHIVE]}.get(kind)
    if single is not None and roles != single:
        raise BadBundle(f"manifest: {entry.label} must have exactly one {single[0]} file")
    if kind == PROVIDER and (roles.count(SHASUMS) != 1 or roles.count(SIGNATURE) != 1):
        raise BadBundle(f"manifest: {entry.label} needs one SHA256SUMS and one signature")
    for file in entry.files:
        if file.path != expected_path(entry, file):
            raise BadBundle(f"manifest: {file.path!r} is not where {entry.label} keeps it")
    return entry


def parse(data: bytes) -> Manifest:
    """The manifest of a bundle, every field checked; ``BadBundle`` for anything else."""
    if len(data) > MAX_MANIFEST_BYTES:
        raise BadBundle(f"manifest.json is larger than {MAX_MANIFEST_BYTES} bytes")
    try:
        raw = json.loads(data)
    except ValueError:
        raise BadBundle("manifest.json is not JSON") from None
    if not isinstance(raw, dict) or raw.get("format") != FORMAT:
        raise BadBundle("manifest.json is not a registry bundle's manifest")
    if raw.get("format-version") != FORMAT_VERSION:
        raise BadBundle(f"format-version {raw.get('format-version')!r} is not {FORMAT_VERSION}")
    entries = raw.get("entries")
    if not isinstance(entries, list) or len(entries) > MAX_ENTRIES:
        raise BadBundle(f"manifest: entries must be a list of at most {MAX_ENTRIES}")
    manifest = Manifest(
        source=str(raw.get("source") or "")[:255],
        created_at=str(raw.get("created-at") or "")[:64],
        entries=[_entry(e) for e in entries],
    )
    paths = [f.path for e in manifest.entries for f in e.files]
    if len(paths) != len(set(paths)):
        raise BadBundle("manifest: a file is listed twice")
    return manifest


def entry_from_document(raw: Any) -> Entry:
    """An entry from its ``document()`` (an export's progress keeps those it wrote), checked
    as a manifest's are."""
    return _entry(raw)
