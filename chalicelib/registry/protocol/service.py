"""The module registry protocol's view of the registry (what ``terraform init`` reads).

Only versions whose status is ``ok`` exist here. ``latest`` is the highest version that is
not a pre-release (Terraform only picks a pre-release when it is pinned exactly); a module
with nothing but pre-releases falls back to the highest of those. Lists return one entry per
module: its latest version.

A deprecated version is served as any other, with its ``deprecation`` (``{reason, link}``,
``null`` for the others) on its ``versions`` entry and its detail, as HCP Terraform returns
it. A revoked version is left out of ``versions`` and ``latest`` (so Terraform never picks
it) and its detail and download answer 404 with the revocation message.

The hot path (``versions``, ``download``) reads the module item and, for a download, the one
version item: the number of reads never grows with the number of versions or modules.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from chalicelib.accounts import service as accounts
from chalicelib.core.auth import Principal
from chalicelib.core.errors import BadGateway, NotFound
from chalicelib.core.settings import get_settings
from chalicelib.registry import objects, semver
from chalicelib.registry.ingest.limits import MetadataTooLarge, fit_metadata
from chalicelib.registry.statuses import RevocationStatus, VersionStatus
from chalicelib.registry.store import ModuleModel, ModuleVersionModel, module_key

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
        releases = [v for v in self.versions if not v.is_prerelease]
        return (releases or self.versions or [None])[0]

    def published_at(self, version: str) -> str | None:
        return self.statuses.get(version, {}).get("published-at")

    def deprecation(self, version: str) -> dict[str, Any] | None:
        """``{"reason", "link"}`` of a deprecated version, else ``None``."""
        deprecation = self.statuses.get(version, {}).get("deprecation")
        if not deprecation:
            return None
        return {"reason": deprecation.get("reason"), "link": deprecation.get("link")}


def _revocation(entry: dict[str, Any]) -> dict[str, Any] | None:
    """The revocation of a revoked version's entry (an ``Unrevoked`` one is served again)."""
    revocation = entry.get("revocation")
    if revocation and revocation.get("status") == RevocationStatus.REVOKED:
        return revocation
    return None


def published(module: ModuleModel) -> Published:
    statuses = module.statuses()
    versions = []
    for text, entry in statuses.items():
        if entry.get("status") != VersionStatus.OK or _revocation(entry):
            continue
        if semver.is_valid(text):
            versions.append(semver.parse(text))
    versions.sort(key=lambda v: v.order_key, reverse=True)
    return Published(module, versions, statuses)


def find_module(principal: Principal, namespace: str, name: str, provider: str) -> Published:
    """A private module by its protocol address (namespace = organization), or 404."""
    if not accounts.can_read_organization(principal, namespace):
        raise NotFound(f"module {namespace}/{name}/{provider} not found")
    try:
        module = ModuleModel.get(namespace, module_key("private", namespace, name, provider))
    except ModuleModel.DoesNotExist:
        raise NotFound(f"module {namespace}/{name}/{provider} not found") from None
    return published(module)


def find_version(found: Published, version: str | None) -> ModuleVersionModel:
    """The stored version (``None`` = latest) if it is servable, or 404."""
    module = found.module
    wanted = found.latest if version is None else _servable(found, version)
    if wanted is None:
        raise NotFound(f"module {module.namespace}/{module.name}/{module.provider} has no versions")
    try:
        return ModuleVersionModel.get(module.id, wanted.order_key)
    except ModuleVersionModel.DoesNotExist:
        raise NotFound(f"version {wanted.text} not found") from None


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


def summary(found: Published, version: semver.Version) -> dict[str, Any]:
    module = found.module
    return {
        "id": f"{address(module)}/{version.text}",
        "owner": "",
        "namespace": module.namespace,
        "name": module.name,
        "version": version.text,
        "provider": module.provider,
        "provider_logo_url": "",
        "description": "",
        "source": "",
        "tag": "",
        "published_at": found.published_at(version.text),
        "downloads": 0,
        "verified": False,
    }


def detail(found: Published, version: ModuleVersionModel) -> dict[str, Any]:
    metadata = objects.get_metadata(version.metadata_key) if version.metadata_key else {}
    metadata = _fitted(metadata)
    parsed = semver.parse(version.version)
    root = metadata.get("root") or _empty_directory("", found.module.name)
    return {
        **summary(found, parsed),
        "root": root,
        "submodules": metadata.get("submodules", []),
        "examples": metadata.get("examples", []),
        "providers": [found.module.provider],
        "versions": [v.text for v in sorted(found.versions, key=lambda v: v.order_key)],
        "deprecation": found.deprecation(parsed.text),
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
) -> list[dict[str, Any]]:
    """Latest-version summaries of every readable private module matching the filters."""
    if namespace is not None:
        accounts.organization_access(principal, namespace)
        organizations = [namespace]
    else:
        organizations = accounts.readable_organization_names(principal)
    terms = [t for t in (query or "").lower().split() if t]
    out = []
    for organization in organizations:
        condition = None
        if name is not None:
            condition = ModuleModel.key.startswith(f"private#{organization}#{name}#")
        for module in ModuleModel.query(organization, condition):
            if provider and module.provider != provider:
                continue
            haystack = f"{module.namespace} {module.name} {module.provider}".lower()
            if any(term not in haystack for term in terms):
                continue
            if module.registry_name == "public":
                curated = _curated_summary(module)
                if curated is not None:
                    out.append(curated)
                continue
            found = published(module)
            if found.latest is not None:
                out.append(summary(found, found.latest))
    return out


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


def _curated_summary(module: ModuleModel) -> dict[str, Any] | None:
    """A curated public module, as the upstream describes its latest version (cached)."""
    from chalicelib.registry.protocol import public

    try:
        upstream = public.decode(public.latest(module.namespace, module.name, module.provider))
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
