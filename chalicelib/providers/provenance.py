"""A provider version's signed provenance, made when its SHA256SUMS signature verifies
(``ingest.verify.SignedSums.accept``) and kept beside its files (``keys.provenance_key``).

The subject is the version's SHA256SUMS, by its SHA-256: the file ``terraform init`` checks
each platform zip against (every zip the registry serves matched its line first), so the
statement covers every platform without naming each (and stays within what KMS signs). The
build definition says it was uploaded (by whom, when the version records it) and that its
signature verified with which of the namespace's GPG keys.
"""

from __future__ import annotations

import logging

from chalicelib.artifacts import objects
from chalicelib.core.data.ids import now
from chalicelib.core.settings import get_settings
from chalicelib.providers import keys
from chalicelib.providers.store import ProviderModel, ProviderVersionModel
from chalicelib.trust import provenance

log = logging.getLogger("registry.providers.provenance")


def address_of(provider: ProviderModel) -> str:
    """``<host>/<namespace>/<name>``, as a configuration's ``required_providers`` names it
    (without a host when no public address is configured)."""
    from chalicelib.core.api.http import host_of

    base = get_settings().public_base_url
    path = f"{provider.namespace}/{provider.name}"
    return f"{host_of(base)}/{path}" if base else path


def attest_version(
    provider: ProviderModel,
    version: ProviderVersionModel,
    sums_sha256: str,
    signer: provenance.Signer | None = None,
) -> None:
    """Sign and store the provenance of a version whose SHA256SUMS just verified."""
    filename = f"terraform-provider-{provider.name}_{version.version}_SHA256SUMS"
    build = provenance.Build(
        kind="provider",
        subjects=[provenance.Artifact(filename, sums_sha256)],
        address=address_of(provider),
        version=version.version,
        origin=provenance.Origin("tfe-api", principal=version.created_by),
        invocation_id=version.id,
        started_on=version.created_at,
        finished_on=now(),
        internal={"gpg-key-id": version.key_id.upper(), "shasums-signature": "verified"},
    )
    envelope = provenance.sign(provenance.statement(build), signer or provenance.KmsSigner())
    key = keys.provenance_key(provider.id, version.version)
    objects.put(key, provenance.encode(envelope), provenance.MEDIA_TYPE)


def attest_verified(
    provider: ProviderModel, version: ProviderVersionModel, sums_sha256: str
) -> None:
    """``attest_version``, where a failure must not undo the verification: the version is
    served either way, and its provenance route says none was made (logged here)."""
    try:
        attest_version(provider, version, sums_sha256)
    except Exception:  # noqa: BLE001 - evidence, not a gate: the check itself succeeded
        log.exception("provenance of provider version %s could not be made", version.id)


def read(provider: ProviderModel, version: ProviderVersionModel) -> bytes | None:
    """The stored envelope, None when none was made."""
    try:
        with objects.fetch(keys.provenance_key(provider.id, version.version), 1 << 20) as found:
            return found.read()
    except objects.Gone:
        return None
