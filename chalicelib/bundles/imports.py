"""The import's second pass: each entry of a checked bundle (``verify``) created, skipped
or refused, through the modules' and providers' own services (their rules, rights and
audit events), then the files of what was created written where an upload would put them.
Their S3 events run the usual checks (a module's ingest, a provider's signature and
platforms), so what a bundle brings is served exactly as what a publisher uploads.

Per entry:

* created: it was missing (the organization must exist; a module or provider record is
  made with its first version);
* skipped: the same version is there with the same content (a module archive's sha256; a
  provider version's key, SHA256SUMS and platform digests; a key's armor);
* refused: it is there with other content, or cannot be made (the reason says why);
  nothing is written for it, and a provider signed by a refused key is refused too.

A cached module (``manifest.CACHED_MODULE``) goes into this registry's module cache
(``modules.cache``), not an organization: in the second pass its archive, checked against
the manifest's digest on the way, is stored under its digest, ingested and recorded, as
the cache's own fetch does (so the cache serves it with no upstream at all); skipped when
the same archive is cached, refused when another one is (a cached version is never
replaced) or when it is no module archive.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import IO, Any

from chalicelib.artifacts import objects
from chalicelib.artifacts.statuses import VersionStatus
from chalicelib.bundles import manifest
from chalicelib.bundles.manifest import Entry
from chalicelib.bundles.tarstream import members, spooled
from chalicelib.bundles.verify import Checked
from chalicelib.core.api.errors import ApiError, NotFound
from chalicelib.core.auth import Principal

log = logging.getLogger("registry.bundles")

CREATED, SKIPPED, REFUSED = "created", "skipped", "refused"


@dataclass
class Outcome:
    entry: Entry
    result: str
    reason: str = ""

    def document(self) -> dict[str, Any]:
        out = {"kind": self.entry.kind, "address": self.entry.address, "result": self.result}
        if self.entry.version:
            out["version"] = self.entry.version
        if self.reason:
            out["reason"] = self.reason
        return out


class _Refuse(Exception):
    pass


class Importer:
    """One bundle's import, as ``principal`` (a site admin)."""

    def __init__(self, principal: Principal, checked: Checked) -> None:
        self.principal = principal
        self.checked = checked
        self.uploads: dict[str, str] = {}  # bundle path -> object key to write
        self.refused_keys: set[tuple[str, str]] = set()
        self.cached: dict[str, Entry] = {}  # bundle path -> cached module to cache
        self.late_refusals: dict[str, str] = {}  # bundle path -> why it was refused

    # ----- GPG keys ------------------------------------------------------------------------

    def key(self, entry: Entry) -> str:
        from chalicelib.providers import gpgkeys, service

        namespace, key_id = entry.parts[0], entry.parts[1].upper()
        armor = self.checked.armor(namespace, key_id) or ""
        service.rights(self.principal, namespace)  # 404: no such organization here
        try:
            there = gpgkeys.get_key(self.principal, namespace, key_id)
        except NotFound:
            gpgkeys.create_key(self.principal, namespace, armor)
            return CREATED
        if there.ascii_armor.strip() != armor.strip():
            self.refused_keys.add((namespace, key_id))
            raise _Refuse(f"key {key_id} of {namespace} exists here with another armor")
        return SKIPPED

    # ----- modules -------------------------------------------------------------------------

    def module(self, entry: Entry) -> str:
        from chalicelib.modules import versions
        from chalicelib.modules.service import ModuleRef, create_module, get_module

        org, namespace, name, provider = entry.parts
        version = entry.version or ""
        archive = entry.file(manifest.ARCHIVE)
        ref = ModuleRef(org, "private", namespace, name, provider)
        try:
            module, _ = get_module(self.principal, ref)
        except NotFound:
            module = None
        if module is not None:
            try:
                there = versions.version_of(module, version)
            except NotFound:
                there = None
            if there is not None:
                if there.accepted and there.sha256 == archive.sha256:
                    return SKIPPED
                if there.awaits_upload and (there.created_by or {}).get("id") == self.principal.id:
                    # Made by this admin (an import a crash stopped): its archive is written.
                    self.uploads[archive.path] = there.upload_key
                    return CREATED
                raise _Refuse(f"version {version} exists here with other content")
        if module is None:
            module, _ = create_module(
                self.principal,
                org,
                name=name,
                provider=provider,
                registry="private",
                namespace=namespace,
                no_code=False,
            )
        who = {"type": self.principal.kind, "id": self.principal.id}
        item = versions.insert_version(self.principal, module, version, created_by=who)
        self.uploads[archive.path] = item.upload_key
        return CREATED

    # ----- cached modules ------------------------------------------------------------------

    def cached_module(self, entry: Entry) -> str:
        from chalicelib.modules.cache import service as cache

        archive = entry.file(manifest.ARCHIVE)
        namespace, name, provider = entry.parts
        there = cache.cached_digest(namespace, name, provider, entry.version or "")
        if there == archive.sha256:
            return SKIPPED
        if there is not None:
            raise _Refuse(f"version {entry.version} is cached here with other content")
        self.cached[archive.path] = entry
        return CREATED

    def _cache(self, entry: Entry, file: IO[bytes], sha256: str, size: int) -> None:
        from chalicelib.modules.cache import fetch
        from chalicelib.modules.cache import service as cache

        namespace, name, provider = entry.parts
        found = fetch.Fetched(file, sha256, size, entry.source_host or "", entry.identity or "")
        try:
            cache.import_archive(
                self.principal, namespace, name, provider, entry.version or "", found
            )
        except cache.ImportRefused as exc:
            self.late_refusals[entry.file(manifest.ARCHIVE).path] = str(exc)

    # ----- providers -----------------------------------------------------------------------

    def provider(self, entry: Entry) -> str:
        from chalicelib.providers import keys, service

        org, namespace, name = entry.parts
        key_id = (entry.key_id or "").upper()
        if (namespace, key_id) in self.refused_keys:
            raise _Refuse(f"its signing key {key_id} was refused")
        version = entry.version or ""
        ref = service.ProviderRef(org, "private", namespace, name)
        platforms = [f for f in entry.files if f.role == manifest.PLATFORM]
        try:
            provider, _ = service.get_provider(self.principal, ref)
        except NotFound:
            provider = None
        if provider is not None:
            try:
                _, there, _ = service.get_version(self.principal, ref, version)
            except NotFound:
                there = None
            if there is not None:
                return self._same_provider_version(entry, there, platforms)
        if provider is None:
            provider, _ = service.create_provider(self.principal, org, "private", namespace, name)
        _, item = service.create_version(
            self.principal, ref, version, key_id, list(entry.protocols)
        )
        self.uploads[entry.file(manifest.SHASUMS).path] = keys.shasums_key(provider.id, version)
        self.uploads[entry.file(manifest.SIGNATURE).path] = keys.shasums_sig_key(
            provider.id, version
        )
        for file in platforms:
            service.create_platform(
                self.principal, ref, version, file.os, file.arch, file.sha256, file.filename
            )
            self.uploads[file.path] = keys.binary_key(
                provider.id, version, file.os or "", file.arch or "", file.filename or ""
            )
        return CREATED

    def _same_provider_version(self, entry: Entry, there: Any, platforms: list) -> str:
        from chalicelib.providers import service

        sums = entry.file(manifest.SHASUMS).sha256
        mine = {(f.os, f.arch): f.sha256 for f in platforms}
        theirs = {(p.os, p.arch): p.shasum for p in service.platforms_read(there)}
        same = (
            there.key_id.upper() == (entry.key_id or "").upper()
            and there.status == VersionStatus.VERIFIED
            and there.sums_sha256 == sums
            and theirs == mine
        )
        if same:
            return SKIPPED
        raise _Refuse(f"version {entry.version} exists here with other content")

    # ----- the whole bundle ----------------------------------------------------------------

    def entries(self) -> list[Outcome]:
        """Each entry decided and its records made (keys first: providers need them)."""
        order = {manifest.GPG_KEY: 0, manifest.MODULE: 1, manifest.CACHED_MODULE: 1}
        order[manifest.PROVIDER] = 2
        actions: dict[str, Callable[[Entry], str]] = {
            manifest.GPG_KEY: self.key,
            manifest.MODULE: self.module,
            manifest.CACHED_MODULE: self.cached_module,
            manifest.PROVIDER: self.provider,
        }
        outcomes = []
        for entry in sorted(self.checked.manifest.entries, key=lambda e: order[e.kind]):
            try:
                outcomes.append(Outcome(entry, actions[entry.kind](entry)))
            except _Refuse as exc:
                outcomes.append(Outcome(entry, REFUSED, str(exc)))
            except ApiError as exc:
                if entry.kind == manifest.GPG_KEY:
                    self.refused_keys.add((entry.parts[0], entry.parts[1].upper()))
                outcomes.append(Outcome(entry, REFUSED, str(exc) or exc.title))
        return outcomes

    def write_files(self, stream: IO[bytes]) -> int:
        """Pass two over the bundle: each created entry's files written to their keys, each
        checked again against the manifest's digest on the way (the object read is the one
        checked: the caller opens it by its ETag). How many were written."""
        written = 0
        wanted = {f.path: f for e in self.checked.manifest.entries for f in e.files}
        for member in members(stream):
            key = self.uploads.get(member.path)
            cached = self.cached.get(member.path)
            if key is None and cached is None:
                continue
            with spooled(member.file) as (file, sha256, size):
                if (sha256, size) != (wanted[member.path].sha256, wanted[member.path].size):
                    raise manifest.BadBundle(f"{member.path} changed since it was checked")
                if cached is not None:
                    self._cache(cached, file, sha256, size)
                else:
                    objects.upload(file, str(key), "application/octet-stream")
            written += 1
        return written


def run(principal: Principal, checked: Checked, reopen: Callable[[], IO[bytes]]) -> list[Outcome]:
    """Import a checked bundle; ``reopen`` gives its bytes again for the second pass."""
    importer = Importer(principal, checked)
    outcomes = importer.entries()
    if importer.uploads or importer.cached:
        importer.write_files(reopen())
    for outcome in outcomes:  # a cached module refused once its archive was read
        reason = importer.late_refusals.get(outcome.entry.files[0].path)
        if reason is not None:
            outcome.result, outcome.reason = REFUSED, reason
    return outcomes
