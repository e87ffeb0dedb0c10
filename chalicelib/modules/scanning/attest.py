"""A module version's SBOM and signed provenance, made once its archive is accepted and
stored beside it (``keys.UploadKey.sbom_key`` / ``.provenance_key``); the scan function's
worker calls ``attest`` after the scan (the routes in ``evidence_routes`` serve them).

Both name the archive the registry serves by its SHA-256 (the digest ingest computed of the
bytes it validated and copied: what ``terraform init`` downloads), under the module's source
address on this registry (``<host>/<organization>/<name>/<provider>``).
"""

from __future__ import annotations

import logging
from typing import Any

from chalicelib.artifacts import objects
from chalicelib.core.api.http import host_of
from chalicelib.core.data.ids import now
from chalicelib.core.settings import get_settings
from chalicelib.modules import keys, store
from chalicelib.modules.store import ModuleVersionModel
from chalicelib.trust import provenance, sbom

log = logging.getLogger("registry.attest")
TOOL_NAME = "tfe-module-registry"


def source_address(version: ModuleVersionModel) -> str:
    """The module's address as a configuration names it: ``<host>/<org>/<name>/<provider>``
    (without a host when no public address is configured)."""
    _, namespace, name, provider = version.module_key.split("#")
    base = get_settings().public_base_url
    path = f"{namespace}/{name}/{provider}"
    return f"{host_of(base)}/{path}" if base else path


def origin_of(version: ModuleVersionModel) -> provenance.Origin:
    """How the version came: its uploader, or its module's repository at its tag/commit."""
    if version.source == "tfe-api":
        return provenance.Origin(version.source, principal=version.created_by)
    module = store.find_module(version.organization, version.module_key)
    repo = (module.vcs_repo if module is not None else None) or {}
    return provenance.Origin(
        version.source,
        repository=repo.get("repository-http-url") or repo.get("identifier") or "unknown",
        tag=version.tag,
        commit=version.commit_sha,
    )


def attest(
    version: ModuleVersionModel,
    metadata: dict[str, Any],
    signer: provenance.Signer | None = None,
) -> None:
    """Build and store the version's SBOM and its signed provenance. Needs the archive's
    digest (an accepted version); safe to run again (both are rebuilt and replaced)."""
    digest = version.sha256 or metadata.get("sha256")
    if not digest:
        raise ValueError(f"version {version.id} has no archive digest: it was not ingested")
    upload = keys.UploadKey(version.module_id, version.version, version.id)
    address = source_address(version)
    moment = now()
    settings = get_settings()
    document = sbom.build_sbom(
        sbom.ModuleSubject(address, version.version, digest),
        metadata,
        tool=sbom.Tool(TOOL_NAME, settings.app_version),
        timestamp=moment,
    )
    objects.put(upload.sbom_key, document.encode(), sbom.MEDIA_TYPE)
    build = provenance.Build(
        kind="module",
        subjects=[provenance.Artifact(f"{address}@{version.version}", digest)],
        address=address,
        version=version.version,
        origin=origin_of(version),
        invocation_id=version.id,
        started_on=version.created_at,
        finished_on=moment,
    )
    envelope = provenance.sign(provenance.statement(build), signer or provenance.KmsSigner())
    objects.put(upload.provenance_key, provenance.encode(envelope), provenance.MEDIA_TYPE)
    log.info("attested version %s of %s", version.version, address)
