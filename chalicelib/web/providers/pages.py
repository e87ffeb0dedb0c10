"""What the provider pages show, gathered through ``providers.service`` (never its tables).

The same service calls as the API with the same ``Principal``: every member of the
organization reads, anyone else gets the service's 404; publishers may also have a
platform's archive checked again (``retry_platform``, the API's action). Statuses are the
checks' (``providers.ingest``): a version or platform is pending until its files have
arrived and been checked, then verified, or failed with the reason in ``error``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING

from chalicelib.artifacts.statuses import VersionStatus
from chalicelib.core.api.errors import NotFound
from chalicelib.core.api.http import host_of
from chalicelib.core.auth import Principal
from chalicelib.providers import gpgkeys
from chalicelib.providers import service as providers
from chalicelib.providers.service import ProviderRef
from chalicelib.web.pages import PAGE_SIZE, cli_configuration, constraint_for, page_window

if TYPE_CHECKING:  # the provider registry's records, read only through its service
    from chalicelib.providers.store import (
        ProviderModel,
        ProviderPlatformModel,
        ProviderVersionModel,
    )

REGISTRY = "private"  # the pages show the organization's own providers
STATUS_LABELS: dict[str, str] = {
    VersionStatus.VERIFIED: "Verified",
    VersionStatus.FAILED: "Failed",
    VersionStatus.PENDING: "Pending",
}


def provider_path(organization: str, namespace: str, name: str, version: str | None = None) -> str:
    path = f"/app/{organization}/registry/providers/{REGISTRY}/{namespace}/{name}"
    return f"{path}/{version}" if version else path


def _status(status: str | None) -> str:
    return status or VersionStatus.PENDING


# ----- the provider list ------------------------------------------------------------------


@dataclass
class ProviderRow:
    name: str
    namespace: str
    url: str
    latest: str | None  # the latest verified version (``providers.latest_verified``)
    versions: int
    failure: str | None  # "1.2.0: <reason>" for the newest failed version
    updated_at: datetime


@dataclass
class ProviderList:
    organization: str
    rows: list[ProviderRow]
    total: int
    page: int
    pages: int
    page_links: list[int | None] = field(default_factory=list)


def _row(principal: Principal, provider: ProviderModel) -> ProviderRow:
    ref = ProviderRef(provider.organization, REGISTRY, provider.namespace, provider.name)
    _, versions, _ = providers.list_versions(principal, ref)  # newest first
    latest = providers.latest_verified(versions)
    failed = next((v for v in versions if v.status == VersionStatus.FAILED), None)
    moments = [provider.updated_at, *(v.updated_at for v in versions)]
    return ProviderRow(
        name=provider.name,
        namespace=provider.namespace,
        url=provider_path(provider.organization, provider.namespace, provider.name),
        latest=latest.version if latest else None,
        versions=len(versions),
        failure=f"{failed.version}: {failed.error or 'failed'}" if failed else None,
        updated_at=max(moments),
    )


def provider_list(principal: Principal, organization: str, page: int) -> ProviderList:
    """One page of the organization's private providers (one Query of its versions per
    provider shown)."""
    found, _ = providers.list_providers(principal, organization, REGISTRY, None)
    found.sort(key=lambda p: (p.name, p.namespace))
    pages = max(1, math.ceil(len(found) / PAGE_SIZE))
    if page > pages:
        raise NotFound(f"page {page} not found: there are {pages}")
    shown = found[(page - 1) * PAGE_SIZE : page * PAGE_SIZE]
    return ProviderList(
        organization=organization,
        rows=[_row(principal, p) for p in shown],
        total=len(found),
        page=page,
        pages=pages,
        page_links=page_window(page, pages),
    )


# ----- the provider page ------------------------------------------------------------------


@dataclass
class VersionEntry:
    version: str
    status: str
    status_label: str
    error: str | None
    key_id: str
    protocols: list[str]
    shasums_uploaded: bool
    shasums_sig_uploaded: bool
    created_at: datetime
    url: str


@dataclass
class PlatformEntry:
    os: str
    arch: str
    filename: str
    shasum: str
    uploaded: bool
    status: str
    status_label: str
    error: str | None


@dataclass
class SigningKey:
    key_id: str
    armor: str | None  # None: no key of that id in the namespace


@dataclass
class ProviderPage:
    provider: ProviderModel
    versions: list[VersionEntry]
    selected: VersionEntry | None
    platforms: list[PlatformEntry]
    key: SigningKey | None
    source: str
    snippet: str
    # The CLI configuration terraform needs to reach a plain-HTTP registry; None over HTTPS.
    cli_config: str | None
    url: str
    # A publisher may have a platform that is not verified checked again.
    can_retry: bool = False


def _version(provider: ProviderModel, version: ProviderVersionModel) -> VersionEntry:
    status = _status(version.status)
    return VersionEntry(
        version=version.version,
        status=status,
        status_label=STATUS_LABELS.get(status, status),
        error=version.error,
        key_id=version.key_id.upper(),
        protocols=[str(p) for p in version.protocols or []],
        shasums_uploaded=bool(version.shasums_uploaded),
        shasums_sig_uploaded=bool(version.shasums_sig_uploaded),
        created_at=version.created_at,
        url=provider_path(
            provider.organization, provider.namespace, provider.name, version.version
        ),
    )


def _platform(platform: ProviderPlatformModel) -> PlatformEntry:
    status = _status(platform.status)
    return PlatformEntry(
        os=platform.os,
        arch=platform.arch,
        filename=platform.filename,
        shasum=platform.shasum,
        uploaded=bool(platform.provider_binary_uploaded),
        status=status,
        status_label=STATUS_LABELS.get(status, status),
        error=platform.error,
    )


def _signing_key(principal: Principal, provider: ProviderModel, key_id: str) -> SigningKey:
    """The key that verified the version (kept on the provider as it was then), else the
    namespace's key of that id, if there is one."""
    armor = provider.served_key(key_id)
    if armor is None:
        try:
            armor = gpgkeys.get_key(principal, provider.namespace, key_id).ascii_armor
        except NotFound:
            armor = None
    return SigningKey(key_id=key_id.upper(), armor=armor)


def usage_snippet(name: str, source: str, constraint: str) -> str:
    """A ``required_providers`` entry for the provider (its local name is its type)."""
    lines = [
        "terraform {",
        "  required_providers {",
        f"    {name} = {{",
        f'      source  = "{source}"',
    ]
    if constraint:
        lines.append(f'      version = "{constraint}"')
    return "\n".join([*lines, "    }", "  }", "}", ""])


def provider_page(
    principal: Principal, ref: ProviderRef, version: str | None, base_url: str
) -> ProviderPage:
    provider, stored, rights = providers.list_versions(principal, ref)  # newest first
    if version is None:
        chosen = providers.latest_verified(stored) or (stored[0] if stored else None)
    else:
        chosen = next((v for v in stored if v.version == version), None)
        if chosen is None:
            raise NotFound(f"version {version!r} of {ref.namespace}/{ref.name} not found")
    # The chosen version was read above, with the caller's rights: its platforms only.
    platforms = providers.platforms_read(chosen) if chosen is not None else []
    source = f"{host_of(base_url)}/{provider.namespace}/{provider.name}"
    constraint = constraint_for(chosen.version) if chosen else ""
    return ProviderPage(
        provider=provider,
        versions=[_version(provider, v) for v in stored],
        selected=_version(provider, chosen) if chosen else None,
        platforms=[_platform(p) for p in sorted(platforms, key=lambda p: (p.os, p.arch))],
        key=_signing_key(principal, provider, chosen.key_id) if chosen else None,
        source=source,
        snippet=usage_snippet(provider.name, source, constraint),
        cli_config=cli_configuration(base_url),
        url=provider_path(provider.organization, provider.namespace, provider.name),
        can_retry=rights.publish,
    )


def retry_path(ref: ProviderRef, version: str, os_: str, arch: str) -> str:
    return provider_path(ref.organization, ref.namespace, ref.name, version) + (
        f"/platforms/{os_}/{arch}/retry"
    )


def retry_target(
    principal: Principal, ref: ProviderRef, version: str, os_: str, arch: str
) -> ProviderPlatformModel:
    """The platform a publisher would have checked again; the service's 404 for anyone
    else, or for a platform that is not there."""
    _, _, platform, rights = providers.get_platform(principal, ref, version, os_, arch)
    providers.require_publish(rights, "retrying a provider platform's check")
    return platform
