"""JSON:API documents of GPG keys, providers, versions and platforms, in TFE's shapes
(go-tfe v1.109.0's ``gpg_key.go`` and ``registry_provider*.go``).

Platforms are ``registry-provider-platforms`` in responses, the type go-tfe decodes (and
checks); requests may name them ``registry-provider-version-platforms`` as TFE's docs do.
"""

from __future__ import annotations

from typing import Any

from chalicelib.artifacts.statuses import VersionStatus
from chalicelib.core import tagbindings
from chalicelib.core.api.jsonapi import resource, to_many, to_one
from chalicelib.core.data.ids import iso
from chalicelib.providers import service
from chalicelib.providers.service import Rights
from chalicelib.providers.store import (
    GpgKeyModel,
    ProviderModel,
    ProviderPlatformModel,
    ProviderVersionModel,
)

GPG_KEYS = "gpg-keys"
PROVIDERS = "registry-providers"
VERSIONS = "registry-provider-versions"
PLATFORMS = "registry-provider-platforms"
PLATFORMS_IN_REQUESTS = "registry-provider-version-platforms"


def render_gpg_key(key: GpgKeyModel) -> dict[str, Any]:
    return resource(
        GPG_KEYS,
        key.id,
        {
            "ascii-armor": key.ascii_armor,
            "created-at": iso(key.created_at),
            "key-id": key.key_id,
            "namespace": key.namespace,
            "source": "",
            "source-url": None,
            "trust-signature": "",
            "updated-at": iso(key.updated_at),
        },
    )


def provider_path(provider: ProviderModel) -> str:
    return (
        f"/api/v2/organizations/{provider.organization}/registry-providers/"
        f"{provider.registry_name}/{provider.namespace}/{provider.name}"
    )


def tag_bindings_path(provider_id: str) -> str:
    """Where a provider's tag bindings are listed (its ``tag-bindings`` relationship)."""
    return f"/api/v2/registry-providers/{provider_id}/tag-bindings"


def render_provider(
    provider: ProviderModel, rights: Rights, versions: list[ProviderVersionModel] | None = None
) -> dict[str, Any]:
    """``versions``: the provider's, when the caller asked to include them."""
    relationships: dict[str, Any] = {
        "organization": to_one("organizations", provider.organization),
        "tag-bindings": tagbindings.relationship(tag_bindings_path(provider.id)),
    }
    if versions is not None:
        relationships[VERSIONS] = to_many(VERSIONS, (v.id for v in versions))
    return resource(
        PROVIDERS,
        provider.id,
        {
            "name": provider.name,
            "namespace": provider.namespace,
            "registry-name": provider.registry_name,
            "created-at": iso(provider.created_at),
            "updated-at": iso(provider.updated_at),
            "permissions": {"can-delete": rights.publish},
        },
        relationships=relationships,
        links={"self": provider_path(provider)},
    )


def render_version(
    provider: ProviderModel,
    version: ProviderVersionModel,
    rights: Rights,
    platforms: list[ProviderPlatformModel] | None = None,
) -> dict[str, Any]:
    relationships: dict[str, Any] = {"registry-provider": to_one(PROVIDERS, provider.id)}
    if platforms is not None:
        relationships["platforms"] = to_many(PLATFORMS, (p.id for p in platforms))
    return resource(
        VERSIONS,
        version.id,
        {
            "version": version.version,
            "created-at": iso(version.created_at),
            "updated-at": iso(version.updated_at),
            "key-id": version.key_id,
            "protocols": list(version.protocols or []),
            "permissions": {"can-delete": rights.publish, "can-upload-asset": rights.publish},
            "shasums-uploaded": version.shasums_uploaded,
            "shasums-sig-uploaded": version.shasums_sig_uploaded,
            # Not TFE's: the checks after upload (providers.ingest), as module versions
            # show theirs. pending, verified or failed (with the reason in error).
            "status": version.status or VersionStatus.PENDING,
            "error": version.error,
        },
        relationships=relationships,
        links=service.version_links(provider, version, rights),
    )


def render_platform(
    provider: ProviderModel,
    version: ProviderVersionModel,
    platform: ProviderPlatformModel,
    rights: Rights,
) -> dict[str, Any]:
    return resource(
        PLATFORMS,
        platform.id,
        {
            "os": platform.os,
            "arch": platform.arch,
            "filename": platform.filename,
            "shasum": platform.shasum,
            "permissions": {"can-delete": rights.publish, "can-upload-asset": rights.publish},
            "provider-binary-uploaded": platform.provider_binary_uploaded,
            "status": platform.status or VersionStatus.PENDING,
            "error": platform.error,
        },
        relationships={"registry-provider-version": to_one(VERSIONS, version.id)},
        links=service.platform_links(provider, version, platform, rights),
    )
