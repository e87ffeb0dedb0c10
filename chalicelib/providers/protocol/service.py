"""The provider registry protocol's view of the registry (what ``terraform init`` reads).

Only what verified is served (``providers.ingest``): a version whose SHA256SUMS signature
verified, with the platforms whose archive was checked against that SHA256SUMS; a version
with no such platform is not listed. Namespace = organization (private providers only);
members read, anyone else gets a 404.

The hot path reads one item: the provider's, which carries what is served (versions,
platforms with filename and shasum, the signing keys; see ``providers.store``), read with
the caller's user item when that is not cached: one call for ``versions`` and ``download``
alike, however many versions and platforms there are.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from chalicelib.accounts import authorization
from chalicelib.artifacts import objects, semver
from chalicelib.core.api.errors import NotFound
from chalicelib.core.auth import Principal
from chalicelib.providers import keys, store
from chalicelib.providers.store import ProviderModel

Platform = tuple[str, str]  # os, arch


@dataclass(frozen=True)
class Served:
    """A provider's served versions: version -> its entry and its platforms' entries."""

    provider: ProviderModel
    versions: dict[str, tuple[dict[str, Any], dict[Platform, dict[str, Any]]]]


def find_provider(principal: Principal, namespace: str, type_: str) -> Served:
    """A private provider by its protocol address, with what it serves; or a 404."""
    key = store.provider_key("private", namespace, type_)
    readable, provider = authorization.read_in_organization(
        principal, namespace, (ProviderModel, namespace, key)
    )
    if not readable or provider is None:
        raise NotFound(f"provider {namespace}/{type_} not found")
    return Served(provider, _served(provider))


def _served(
    provider: ProviderModel,
) -> dict[str, tuple[dict[str, Any], dict[Platform, dict[str, Any]]]]:
    platforms: dict[str, dict[Platform, dict[str, Any]]] = {}
    for path, value in provider.served_platform_entries().items():
        version, _, pair = path.rpartition("/")
        os_, _, arch = pair.partition("_")
        sums, _, rest = value.partition(":")
        shasum, _, filename = rest.partition(":")
        filename = filename or store.conventional_filename(provider.name, version, os_, arch)
        found = {"sums": sums, "shasum": shasum, "filename": filename}
        platforms.setdefault(version, {})[(os_, arch)] = found
    out = {}
    for text, entry in provider.served_versions().items():
        # Only platforms checked against the SHA256SUMS the version verified with.
        current = {
            pair: platform
            for pair, platform in platforms.get(text, {}).items()
            if platform["sums"] == entry["sums"]
        }
        if current:
            out[text] = (entry, current)
    return out


def versions_document(found: Served) -> dict[str, Any]:
    ordered = sorted(found.versions, key=_order, reverse=True)
    return {
        "versions": [
            {
                "version": text,
                "protocols": list(found.versions[text][0].get("protocols") or []),
                "platforms": [
                    {"os": os_, "arch": arch} for os_, arch in sorted(found.versions[text][1])
                ],
            }
            for text in ordered
        ],
        "warnings": None,
    }


def _order(text: str) -> str:
    try:
        return semver.parse(text).order_key
    except semver.InvalidVersion:
        return ""


def download_document(found: Served, version: str, os_: str, arch: str) -> dict[str, Any]:
    provider = found.provider
    served = found.versions.get(version)
    platform = served[1].get((os_, arch)) if served else None
    armor = provider.served_key(served[0]["key-id"]) if served else None
    if served is None or platform is None or armor is None:
        raise NotFound(
            f"provider {provider.namespace}/{provider.name} {version} for {os_}/{arch} not found"
        )
    filename = platform["filename"]
    binary = keys.binary_key(provider.id, version, os_, arch, filename)
    return {
        "protocols": list(served[0].get("protocols") or []),
        "os": os_,
        "arch": arch,
        "filename": filename,
        "download_url": objects.presigned_download_url(binary),
        "shasums_url": objects.presigned_download_url(keys.shasums_key(provider.id, version)),
        "shasums_signature_url": objects.presigned_download_url(
            keys.shasums_sig_key(provider.id, version)
        ),
        "shasum": platform["shasum"],
        "signing_keys": {
            "gpg_public_keys": [
                {
                    "key_id": served[0]["key-id"],
                    "ascii_armor": armor,
                    "trust_signature": "",
                    "source": "",
                    "source_url": None,
                }
            ]
        },
    }
