"""Exporting: what a selection names, read through the modules' and providers' services
(the caller's rights checked as for any read), written as a bundle.

A selection names modules (``<organization>/<namespace>/<name>/<provider>`` and a version
constraint) and providers (``<organization>/<namespace>/<name>``, a constraint and, when
given, the platforms ``<os>_<arch>`` to take). Only versions whose files were accepted are
taken: a module version whose archive passed ingest, a provider version whose signature
verified and its verified platforms, with the GPG key that signed it.

The module cache's versions come through ``MODULE_SOURCES``: a source registered under an
address's first segment (``register_module_source("cache", ...)``) lists that address's
versions as ``ModuleArchive``s; every other address is a private module of an organization.
``cache/<namespace>/<name>/<provider>`` takes the cached versions of that upstream module
(``manifest.CACHED_MODULE`` entries).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import TYPE_CHECKING

from chalicelib.artifacts import constraints, objects
from chalicelib.artifacts.statuses import VersionStatus
from chalicelib.bundles import manifest
from chalicelib.bundles.manifest import Entry, File, Manifest
from chalicelib.core.api.errors import NotFound
from chalicelib.core.auth import Principal
from chalicelib.core.data.ids import iso, now
from chalicelib.core.settings import get_settings

if TYPE_CHECKING:
    from chalicelib.bundles.tarstream import TarWriter

log = logging.getLogger("registry.bundles")


class BadSelection(Exception):
    """The selection names something that cannot be exported (the message says what)."""


@dataclass(frozen=True)
class ModuleChoice:
    address: str
    constraint: str = ""


@dataclass(frozen=True)
class ProviderChoice:
    address: str
    constraint: str = ""
    platforms: tuple[str, ...] = ()  # empty: every verified platform


@dataclass(frozen=True)
class Selection:
    modules: tuple[ModuleChoice, ...] = ()
    providers: tuple[ProviderChoice, ...] = ()


@dataclass(frozen=True)
class ModuleArchive:
    """A module version to export: its archive's object and its recorded digest (None:
    none recorded; the digest read is then the manifest's)."""

    address: str
    version: str
    key: str
    sha256: str | None
    kind: str = manifest.MODULE
    identity: str | None = None  # a cached module's (``manifest.CACHED_MODULE``)
    source_host: str | None = None


# ``(principal, address, matches)``: the versions of ``address`` that ``matches`` accepts.
ModuleSource = Callable[[Principal, str, Callable[[str], bool]], list[ModuleArchive]]
MODULE_SOURCES: dict[str, ModuleSource] = {}


def register_module_source(first_segment: str, source: ModuleSource) -> None:
    """Export the module addresses starting ``<first_segment>/`` through ``source`` (the
    module cache registers ``cache``)."""
    MODULE_SOURCES[first_segment] = source


def _private_modules(
    principal: Principal, address: str, matches: Callable[[str], bool]
) -> list[ModuleArchive]:
    from chalicelib.modules import versions
    from chalicelib.modules.service import ModuleRef, get_module

    parts = address.split("/")
    if len(parts) != 4:
        raise BadSelection(
            f"module {address!r}: write <organization>/<namespace>/<name>/<provider>"
        )
    org, namespace, name, provider = parts
    try:
        module, _ = get_module(principal, ModuleRef(org, "private", namespace, name, provider))
    except NotFound:
        raise BadSelection(f"module {address} not found") from None
    return [
        ModuleArchive(address, item.version, item.archive_key, item.sha256)
        for item in versions.list_versions(module)
        if item.accepted and item.archive_key and matches(item.version)
    ]


def _cached_modules(
    principal: Principal, address: str, matches: Callable[[str], bool]
) -> list[ModuleArchive]:
    """``cache/<namespace>/<name>/<provider>``: the module cache's versions of that
    upstream module (any site admin may read them, as any token may install them)."""
    from chalicelib.modules.cache import service as cache

    parts = address.split("/")[1:]
    if len(parts) != 3:
        raise BadSelection(f"module {address!r}: write cache/<namespace>/<name>/<provider>")
    return [
        ModuleArchive(
            "/".join(parts).lower(),
            item.version,
            str(item.archive_key),
            item.sha256,
            manifest.CACHED_MODULE,
            item.identity,
            item.source_host,
        )
        for item in cache.cached_archives(*parts)
        if item.archive_key and matches(item.version)
    ]


register_module_source("cache", _cached_modules)


@dataclass
class ProviderVersionFiles:
    address: str
    version: str
    key_id: str
    protocols: tuple[str, ...]
    namespace: str
    armor: str
    shasums: str
    signature: str
    # (os, arch, filename, object key, recorded shasum)
    platforms: list[tuple[str, str, str, str, str]] = field(default_factory=list)


def _providers(principal: Principal, choice: ProviderChoice) -> list[ProviderVersionFiles]:
    from chalicelib.providers import gpgkeys, keys, service

    parts = choice.address.split("/")
    if len(parts) != 3:
        raise BadSelection(f"provider {choice.address!r}: write <organization>/<namespace>/<name>")
    matches = _matcher(choice.constraint, choice.address)
    try:
        provider, found, _ = service.list_versions(
            principal, service.ProviderRef(parts[0], "private", parts[1], parts[2])
        )
    except NotFound:
        raise BadSelection(f"provider {choice.address} not found") from None
    out = []
    for version in found:
        if version.status != VersionStatus.VERIFIED or not matches(version.version):
            continue
        key = gpgkeys.get_key(principal, provider.namespace, version.key_id.upper())
        files = ProviderVersionFiles(
            address=choice.address,
            version=version.version,
            key_id=key.key_id,
            protocols=tuple(str(p) for p in version.protocols or ()),
            namespace=provider.namespace,
            armor=key.ascii_armor,
            shasums=keys.shasums_key(provider.id, version.version),
            signature=keys.shasums_sig_key(provider.id, version.version),
        )
        for platform in service.platforms_read(version):
            name = f"{platform.os}_{platform.arch}"
            if platform.status != VersionStatus.VERIFIED:
                continue
            if choice.platforms and name not in choice.platforms:
                continue
            files.platforms.append(
                (
                    platform.os,
                    platform.arch,
                    platform.filename,
                    keys.binary_key(
                        provider.id, version.version, platform.os, platform.arch, platform.filename
                    ),
                    platform.shasum,
                )
            )
        if files.platforms:
            out.append(files)
    if not out:
        raise BadSelection(
            f"provider {choice.address}: no verified version matches {choice.constraint or '*'}"
        )
    return out


def _matcher(constraint: str, address: str) -> Callable[[str], bool]:
    try:
        return constraints.parse(constraint).allows_text
    except constraints.InvalidConstraint as exc:
        raise BadSelection(f"{address}: {exc}") from None


@dataclass
class Plan:
    """What an export will write, resolved before a byte is written."""

    modules: list[ModuleArchive]
    providers: list[ProviderVersionFiles]

    @property
    def labels(self) -> list[str]:
        return [f"{m.kind} {m.address} {m.version}" for m in self.modules] + [
            f"provider {p.address} {p.version}" for p in self.providers
        ]


def plan(principal: Principal, selection: Selection) -> Plan:
    """Every version the selection names; ``BadSelection`` when a choice names nothing."""
    modules: list[ModuleArchive] = []
    for choice in selection.modules:
        source = MODULE_SOURCES.get(choice.address.split("/")[0], _private_modules)
        found = source(principal, choice.address, _matcher(choice.constraint, choice.address))
        if not found:
            raise BadSelection(
                f"module {choice.address}: no published version matches {choice.constraint or '*'}"
            )
        modules += found
    providers = [files for choice in selection.providers for files in _providers(principal, choice)]
    # A version chosen twice (two overlapping constraints) is written once.
    unique_modules = {(m.kind, m.address, m.version): m for m in modules}
    unique_providers = {(p.address, p.version): p for p in providers}
    return Plan(list(unique_modules.values()), list(unique_providers.values()))


class Changed(Exception):
    """A stored file does not match the digest recorded when it was accepted."""


def _add(
    writer: TarWriter, path: str, key: str, role: str, recorded: str | None, **extra: str
) -> File:
    """Copy the object ``key`` into the bundle at ``path`` (spooled: one at a time), at
    most as large as its kind's upload may be."""
    settings = get_settings()
    limit = (
        settings.max_archive_bytes
        if role == manifest.ARCHIVE
        else settings.provider_max_archive_bytes
    )
    with objects.fetch(key, limit) as fetched:
        if recorded and fetched.sha256 != recorded.lower():
            raise Changed(f"{path}: the stored file's sha256 is not the one recorded")
        writer.add(path, fetched.file, fetched.size)
        return File(path, fetched.sha256, fetched.size, role, **extra)


def _small(writer: TarWriter, path: str, data: bytes, role: str) -> File:
    import hashlib

    writer.add_bytes(path, data)
    return File(path, hashlib.sha256(data).hexdigest(), len(data), role)


def _steps(the_plan: Plan) -> Iterator[Callable[[TarWriter], Entry]]:
    """What ``write`` writes, one entry a step, in the same order for the same plan (each
    signing key once, before the first provider it signed)."""
    for module in the_plan.modules:
        yield partial(_module, module)
    keys_written: set[tuple[str, str]] = set()
    for p in the_plan.providers:
        if (p.namespace, p.key_id) not in keys_written:
            keys_written.add((p.namespace, p.key_id))
            yield partial(_key, p)
        yield partial(_provider, p)


def _module(module: ModuleArchive, writer: TarWriter) -> Entry:
    cached = module.kind == manifest.CACHED_MODULE
    where = manifest.cached_module_path if cached else manifest.module_path
    path = where(module.address, module.version)
    file = _add(writer, path, module.key, manifest.ARCHIVE, module.sha256)
    return Entry(
        module.kind,
        module.address,
        module.version,
        (file,),
        identity=module.identity,
        source_host=module.source_host,
    )


def _key(p: ProviderVersionFiles, writer: TarWriter) -> Entry:
    path = manifest.key_path(p.namespace, p.key_id)
    armor = _small(writer, path, p.armor.encode(), manifest.ARMOR)
    return Entry(manifest.GPG_KEY, f"{p.namespace}/{p.key_id}", None, (armor,))


def _provider(p: ProviderVersionFiles, writer: TarWriter) -> Entry:
    files = [
        _add(
            writer,
            manifest.provider_path(p.address, p.version, "SHA256SUMS"),
            p.shasums,
            manifest.SHASUMS,
            None,
        ),
        _add(
            writer,
            manifest.provider_path(p.address, p.version, "SHA256SUMS.sig"),
            p.signature,
            manifest.SIGNATURE,
            None,
        ),
    ]
    for os_, arch, filename, key, shasum in p.platforms:
        path = manifest.provider_path(p.address, p.version, f"{os_}_{arch}", filename)
        files.append(
            _add(
                writer,
                path,
                key,
                manifest.PLATFORM,
                shasum,
                os=os_,
                arch=arch,
                filename=filename,
            )
        )
    return Entry(manifest.PROVIDER, p.address, p.version, tuple(files), p.key_id, p.protocols)


def write(
    the_plan: Plan,
    writer: TarWriter,
    source: str,
    created_at: str | None = None,
    written: Sequence[Entry] = (),
) -> Iterator[Entry]:
    """Write every file of ``the_plan`` and, last, the manifest; yields each entry once
    written (progress). ``written``: the entries an earlier run of the same plan wrote
    already (the writer continues after them: they are listed, not written again)."""
    found = Manifest(source=source, created_at=created_at or iso(now()))
    found.entries += written
    for index, step in enumerate(_steps(the_plan)):
        if index < len(written):
            continue
        entry = step(writer)
        found.entries.append(entry)
        yield entry
    writer.add_bytes(manifest.MANIFEST, found.encode())
