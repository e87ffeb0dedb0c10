"""The audit events of the provider registry's changes (``chalicelib.core.audit``), one per
change, each written in the change's own transaction (``store``): providers, versions,
platforms and GPG keys created, updated, deleted by a publisher, and uploads accepted
(``uploaded``) or refused (``refused``) by the upload check (the registry acts: ``System``).

``meta`` names what was changed (provider address, version, platform, key id), never a key's
armor or a file's bytes.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from chalicelib.core.audit import events
from chalicelib.core.audit.events import Event

if TYPE_CHECKING:
    from chalicelib.core.auth import Principal
    from chalicelib.providers.store import (
        GpgKeyModel,
        ProviderModel,
        ProviderPlatformModel,
        ProviderVersionModel,
    )

PROVIDER = "registry-provider"
VERSION = "registry-provider-version"
PLATFORM = "registry-provider-platform"
GPG_KEY = "gpg-key"
# The upload check's outcomes.
UPLOADED = "uploaded"
REFUSED = "refused"


def _address(provider: ProviderModel) -> str:
    return f"{provider.registry_name}/{provider.namespace}/{provider.name}"


def provider_event(
    principal: Principal, provider: ProviderModel, action: str, **meta: Any
) -> Event:
    return events.event(
        principal,
        organization=provider.organization,
        resource_type=PROVIDER,
        resource_id=provider.id,
        action=action,
        meta={"provider": _address(provider), **meta},
    )


def _version_meta(provider: ProviderModel, version: ProviderVersionModel) -> dict[str, Any]:
    return {"provider": _address(provider), "version": version.version}


def version_event(
    principal: Principal | None,
    provider: ProviderModel,
    version: ProviderVersionModel,
    action: str,
    outcome: str = events.SUCCEEDED,
    **meta: Any,
) -> Event:
    """``principal`` None: the upload check's outcome (the registry acts; ``created-by``
    says whose upload links the files came through)."""
    if principal is None:
        meta["created-by"] = (version.created_by or {}).get("id")
    return events.event(
        principal,
        organization=provider.organization,
        resource_type=VERSION,
        resource_id=version.id,
        action=action,
        meta={**_version_meta(provider, version), **meta},
        outcome=outcome,
    )


def platform_event(
    principal: Principal | None,
    provider: ProviderModel,
    version: ProviderVersionModel,
    platform: ProviderPlatformModel,
    action: str,
    outcome: str = events.SUCCEEDED,
    **meta: Any,
) -> Event:
    if principal is None:
        meta["created-by"] = (version.created_by or {}).get("id")
    return events.event(
        principal,
        organization=provider.organization,
        resource_type=PLATFORM,
        resource_id=platform.id,
        action=action,
        meta={
            **_version_meta(provider, version),
            "os": platform.os,
            "arch": platform.arch,
            "filename": platform.filename,
            **meta,
        },
        outcome=outcome,
    )


def gpg_key_event(
    principal: Principal, key: GpgKeyModel, action: str, organization: str, **meta: Any
) -> Event:
    """A key's event, in ``organization``'s partition; the key id, never its armor."""
    return events.event(
        principal,
        organization=organization,
        resource_type=GPG_KEY,
        resource_id=key.id,
        action=action,
        meta={"namespace": key.namespace, "key-id": key.key_id, **meta},
    )
