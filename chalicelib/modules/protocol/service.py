"""The module registry protocol's view of the registry (what ``terraform init`` reads).

Only versions whose status is ``ok`` exist here. ``latest`` is the highest version that is
not a pre-release (Terraform only picks a pre-release when it is pinned exactly); a module
with nothing but pre-releases falls back to the highest of those. Lists return one entry per
module: its latest version.

A deprecated version is served as any other, with its ``deprecation`` (``{reason, link}``,
and ``revoke-at`` when it has a deadline; ``null`` for the others) on its ``versions`` entry
and its detail, as HCP Terraform returns it. A revoked version is left out of ``versions``
and ``latest`` (so Terraform never picks it) and its detail and download answer 404 with
the revocation message.

The hot path (``versions``, ``download``) reads the module item and, for a download, the one
version item: the number of reads never grows with the number of versions or modules. A
download also counts itself (``downloads.counter``: one UpdateItem, never a read). A module
detail reports the module's downloads (``downloads``, every version: one Query of its
download items) and the version's (``version_downloads``); lists and search report the
total their lean entries keep (``downloads.totals`` writes it from the table's stream, about
a second late), so they read nothing more.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from chalicelib.accounts import authorization
from chalicelib.artifacts import objects, semver
from chalicelib.core.api.errors import BadGateway, NotFound
from chalicelib.core.auth import Principal
from chalicelib.core.data import db
from chalicelib.core.settings import get_settings
from chalicelib.modules import store
from chalicelib.modules.downloads import counter as downloads
from chalicelib.modules.ingest.limits import MetadataTooLarge, fit_metadata
from chalicelib.modules.protocol import store as entries_store
from chalicelib.modules.statuses import (
    VersionStatus,
    is_revoked,
    latest_servable,
    servable_versions,
)
from chalicelib.modules.store import ModuleModel, ModuleVersionModel, ProtocolEntryModel, module_key

MAX_LIMIT = 100
DEFAULT_LIMIT = 15


@dataclass(frozen=True)
class Published:
    """A module with the versions the protocol may serve, newest first."""

    module: ModuleModel
    versions: list[semver.Version]
    statuses: dict[str, dict[str, Any]]  # module.statuses(), read once

    @property
    def latest(self) -> semver.Version | None:
        return latest_servable(self.statuses)

    def published_at(self, version: str) -> str | None:
        return self.statuses.get(version, {}).get("published-at")

    def deprecation(self, version: str) -> dict[str, Any] | None:
        """``{"reason", "link"}`` of a deprecated version (and ``revoke-at``, when the registry
        revokes it, if it has a deadline), else ``None``."""
        deprecation = self.statuses.get(version, {}).get("deprecation")
        if not deprecation:
            return None
        shown = {"reason": deprecation.get("reason"), "link": deprecation.get("link")}
        if deprecation.get("revoke-at"):
            shown["revoke-at"] = deprecation["revoke-at"]
        return shown


def _revocation(entry: dict[str, Any]) -> dict[str, Any] | None:
    """The revocation of a revoked version's entry (an ``Unrevoked`` one is served again)."""
    revocation = entry.get("revocation")
    return revocation if is_revoked(revocation) else None


def published(module: ModuleModel) -> Published:
    statuses = module.statuses()
    return Published(module, servable_versions(statuses), statuses)


def find_module(principal: Principal, namespace: str, name: str, provider: str) -> Published:
    """A private module by its protocol address (namespace = organization), or 404."""
    key = module_key("private", namespace, name, provider)
    # The module is read with the caller's user item when that is not cached (one call).
    readable, module = authorization.read_in_organization(
        principal, namespace, (ModuleModel, namespace, key)
    )
    # An outsider may read it when the organization shares its modules (module consumers,
    # global sharing: ``consume``): one more read, of the producer, only for callers from
    # elsewhere.
    if not readable:
        consumer = authorization.consumer_roles(principal, namespace)
        readable = authorization.allows(consumer, "consume")
        if readable and module is None:  # a team or organization token from elsewhere
            module = db.get_together((ModuleModel, namespace, key))[0]
    if not readable or module is None:
        raise NotFound(f"module {namespace}/{name}/{provider} not found")
    return published(module)


def find_version(found: Published, version: str | None) -> ModuleVersionModel:
    """The stored version (``None`` = latest) if it is servable, or 404."""
    module = found.module
    wanted = found.latest if version is None else _servable(found, version)
    if wanted is None:
        raise NotFound(f"module {module.namespace}/{module.name}/{module.provider} has no versions")
    stored = store.find_version(module.id, wanted.order_key)
    if stored is None:
        raise NotFound(f"version {wanted.text} not found")
    return stored


def _servable(found: Published, version: str) -> semver.Version:
    for candidate in found.versions:
        if candidate.text == version:
            return candidate
    module = found.module
    entry = found.statuses.get(version, {})
    revocation = _revocation(entry) if entry.get("status") == VersionStatus.OK else None
    if revocation is not None:
        raise NotFound(revoked_message(module, version, revocation))
    raise NotFound(
        f"version {version} of {module.namespace}/{module.name}/{module.provider} not found"
    )


def revoked_message(module: ModuleModel, version: str, revocation: dict[str, Any]) -> str:
    """What a consumer of a revoked version reads (``terraform init`` prints it)."""
    text = f"version {version} of {address(module)} has been revoked"
    if revocation.get("message"):
        text += f": {revocation['message']}"
    if revocation.get("link"):
        text += f" (see {revocation['link']})"
    return text


def download_url(found: Published, version: str) -> str:
    """A short-lived presigned GET of a servable version's archive, with go-getter's archive
    hint. The archive's key is on the version's entry in the module item (written when the
    version became ok), so a download reads nothing more; versions ingested before the key
    was kept there cost one read of the version item."""
    wanted = _servable(found, version)
    archive = found.statuses.get(wanted.text, {}).get("archive")
    if not archive:
        archive = find_version(found, wanted.text).archive_key
    return objects.presigned_download_url(archive) + "&archive=tar.gz"


def address(module: ModuleModel) -> str:
    return f"{module.namespace}/{module.name}/{module.provider}"


def summary_of(
    namespace: str,
    name: str,
    provider: str,
    version: str,
    published_at: Any = None,
    downloads: int = 0,
) -> dict[str, Any]:
    """A module version's summary as the protocol shows it (the fields a private registry
    has no value for are empty, as TFE's are)."""
    return {
        "id": f"{namespace}/{name}/{provider}/{version}",
        "owner": "",
        "namespace": namespace,
        "name": name,
        "version": version,
        "provider": provider,
        "provider_logo_url": "",
        "description": "",
        "source": "",
        "tag": "",
        "published_at": published_at,
        "downloads": downloads,
        "verified": False,
    }


def summary(found: Published, version: semver.Version) -> dict[str, Any]:
    module = found.module
    published_at = found.published_at(version.text)
    return summary_of(module.namespace, module.name, module.provider, version.text, published_at)


def detail(found: Published, version: ModuleVersionModel) -> dict[str, Any]:
    metadata = objects.get_metadata(version.metadata_key) if version.metadata_key else {}
    metadata = _fitted(metadata)
    parsed = semver.parse(version.version)
    root = metadata.get("root") or _empty_directory("", found.module.name)
    counted = downloads.totals(found.module.id)
    return {
        **summary(found, parsed),
        # As the public registry: the module's total; this version's beside it.
        "downloads": sum(counted.values()),
        "version_downloads": counted.get(parsed.text, 0),
        "root": root,
        "submodules": metadata.get("submodules", []),
        "examples": metadata.get("examples", []),
        "providers": [found.module.provider],
        "versions": [v.text for v in sorted(found.versions, key=lambda v: v.order_key)],
        "deprecation": found.deprecation(parsed.text),
    }


def cached_detail(
    namespace: str, name: str, provider: str, version: str, versions: list[str], metadata: Any
) -> dict[str, Any]:
    """The detail of a version of an allowed upstream namespace's module (``modules.cache``:
    ``versions`` newest first, ``metadata`` as ingest shapes it), as ``detail`` shows a
    private module's."""
    metadata = _fitted(dict(metadata))
    return {
        **summary_of(namespace, name, provider, version),
        "root": metadata.get("root") or _empty_directory("", name),
        "submodules": metadata.get("submodules", []),
        "examples": metadata.get("examples", []),
        "providers": [provider],
        "versions": list(reversed(versions)),
        "deprecation": None,
    }


def _fitted(metadata: dict[str, Any]) -> dict[str, Any]:
    """The metadata cut to ``max_metadata_bytes`` as ingest does (READMEs truncated with a
    note), so the response stays far below Lambda's 6 MB even for versions ingested before
    the caps existed; metadata too large even without READMEs is left out entirely."""
    try:
        fit_metadata(metadata, get_settings().max_metadata_bytes)
    except MetadataTooLarge:
        return {}
    return metadata


def versions_document(found: Published) -> dict[str, Any]:
    return {
        "modules": [
            {
                "source": address(found.module),
                "versions": [
                    {"version": v.text, "deprecation": found.deprecation(v.text)}
                    for v in found.versions
                ],
            }
        ]
    }


def listing(
    principal: Principal,
    *,
    namespace: str | None = None,
    name: str | None = None,
    provider: str | None = None,
    query: str | None = None,
    want: int = 16,
) -> Iterator[dict[str, Any]]:
    """Latest-version summaries of every readable module matching the filters, lazily, in
    the protocol's order (namespace, name, provider).

    Read from the protocol's list (``store.ProtocolEntryModel``): its entries hold the
    address, the latest servable version and when it was published, all a summary shows,
    so no module item is read. Each organization's entries are read only as far as the
    caller consumes them (``want``: an offset and a page, plus one to know whether there is
    a next one; more in growing Queries when filters skip entries), and merged across
    organizations. A search (``query``) matches the organization's kept module keys
    instead, then reads only the matching entries (``_searched``). A curated public
    module's summary is the upstream's (cached); one the upstream does not answer for is
    left out, as before."""
    if namespace is not None:
        authorization.organization_access(principal, namespace)
        organizations = [namespace]
    else:
        organizations = authorization.readable_organization_names(principal)
    terms = [t for t in (query or "").lower().split() if t]

    def wanted(address: tuple[str, str, str, str]) -> bool:
        registry, ns, module_name, module_provider = address
        if name is not None and (registry != "private" or module_name != name):
            return False
        if provider and module_provider != provider:
            return False
        haystack = f"{ns} {module_name} {module_provider}".lower()
        return all(term in haystack for term in terms)

    streams = []
    for rank, organization in enumerate(organizations):
        entries = _searched(organization, wanted, want) if terms else None
        if entries is None:
            prefix = f"{organization}#{name}#" if name is not None else None
            entries = entries_store.protocol_entries(organization, prefix, want)
        streams.append(
            ((entry.protocol_key, rank), entry) for entry in entries if wanted(entry.address)
        )
    for _, entry in heapq.merge(*streams, key=lambda pair: pair[0]):
        found = _entry_summary(entry)
        if found is not None:
            yield found


def _searched(
    organization: str, wanted: Callable[[tuple[str, str, str, str]], bool], want: int
) -> Iterator[ProtocolEntryModel] | None:
    """A search's entries of one organization: the modules' kept keys (``store.kept_keys``:
    two Queries of small items, however many modules it holds) matched by address, then
    only the matching entries, by key; None before the keys are kept (the backfill), when
    the caller reads the entries themselves."""
    keys = store.kept_keys(organization)
    if keys is None:
        return None
    addresses = (store.parse_key(key) for key in keys)
    matched = sorted(store.protocol_key(*address) for address in addresses if wanted(address))
    return entries_store.protocol_entries_of(organization, matched, want)


def _entry_summary(entry: ProtocolEntryModel) -> dict[str, Any] | None:
    registry, namespace, name, provider = entry.address
    if registry == "public":
        return _curated_summary(namespace, name, provider)
    downloads = int(entry.downloads or 0)
    return summary_of(namespace, name, provider, entry.version, entry.published_at, downloads)


SUMMARY_KEYS = (
    "id",
    "owner",
    "namespace",
    "name",
    "version",
    "provider",
    "provider_logo_url",
    "description",
    "source",
    "tag",
    "published_at",
    "downloads",
    "verified",
)


def _curated_summary(namespace: str, name: str, provider: str) -> dict[str, Any] | None:
    """A curated public module, as the upstream describes its latest version (cached)."""
    from chalicelib.modules.protocol import public

    try:
        upstream = public.decode(public.latest(namespace, name, provider))
    except (NotFound, BadGateway):
        return None
    return {key: upstream.get(key) for key in SUMMARY_KEYS}


def _empty_directory(path: str, name: str) -> dict[str, Any]:
    return {
        "path": path,
        "name": name,
        "readme": "",
        "empty": True,
        "inputs": [],
        "outputs": [],
        "dependencies": [],
        "provider_dependencies": [],
        "resources": [],
    }
