"""Checks after upload, run by the upload's S3 event (``providers.uploads``) through the
upload pipeline every artifact shares (``artifacts.pipeline``), as a module's archive is: a
version's SHA256SUMS signature once both files are there (``SignedSums``), a platform's
archive once its version verified (``PlatformArchive``, under
``REGISTRY_PROVIDER_MAX_ARCHIVE_BYTES``). The outcome is ``status`` and ``error`` on the
version or platform and, when verified, an entry of what the protocol serves
(``store.serve_*``).

Order makes concurrent events safe: a version is written ``verified`` *before* its platforms
are listed, and an archive's flag is written *before* its version is read (both strongly
consistent), so whichever of the two events comes second checks the platform: none is left
pending with both files there. A re-uploaded SHA256SUMS or signature is verified again and
every uploaded platform re-checked against it; until then the platforms' served entries name
the old SHA256SUMS, which the protocol no longer serves.

Whatever the bytes are, a check ends ``verified`` or ``failed`` with a reason: an unforeseen
exception from a parser is a refusal too. S3 or DynamoDB failing is not the upload's fault:
it propagates, and SQS delivers the event again.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Sequence
from dataclasses import dataclass

from chalicelib.artifacts import objects, pipeline
from chalicelib.artifacts.objects import Fetched
from chalicelib.artifacts.pipeline import Outcome, Refused, Subject, Wanted
from chalicelib.artifacts.statuses import VersionStatus
from chalicelib.core.settings import get_settings
from chalicelib.providers import audited, keys, provenance, store
from chalicelib.providers.ingest import checks
from chalicelib.providers.store import ProviderModel, ProviderPlatformModel, ProviderVersionModel

log = logging.getLogger("registry.providers.verify")
# Counts ``verified`` and ``failed`` by Outcome.
METRIC = "ProviderCheck"


def _subject(item: ProviderVersionModel | ProviderPlatformModel) -> Subject:
    return Subject(log, METRIC, f"provider check of {item.id}", {"item": item.id})


def _shasums(provider: ProviderModel, version: ProviderVersionModel) -> Wanted:
    key = keys.shasums_key(provider.id, version.version)
    return Wanted(key, checks.MAX_SHASUMS_BYTES, "SHA256SUMS")


# ----- a version: its SHA256SUMS signature --------------------------------------------------


def check_version(provider: ProviderModel, version: ProviderVersionModel) -> str:
    """Verify the version's signature once both files are there, then check its uploaded
    platforms against the SHA256SUMS; returns the version's outcome."""
    if not (version.shasums_uploaded and version.shasums_sig_uploaded):
        return Outcome.WAITING
    signed = SignedSums(provider, version)
    outcome = pipeline.run(signed)
    if outcome == Outcome.VERIFIED:
        for platform in store.platforms_of(version.id, consistent=True):
            if platform.provider_binary_uploaded:
                pipeline.run(PlatformArchive(provider, version, platform, signed.shasums))
    return outcome


@dataclass(frozen=True)
class Verified:
    shasums: bytes
    armor: str  # the key that verified the signature, as it was then


@dataclass
class SignedSums:
    """A version's SHA256SUMS and its detached signature, checked together."""

    provider: ProviderModel
    version: ProviderVersionModel
    shasums: bytes = b""  # once verified: what its platforms are checked against

    @property
    def subject(self) -> Subject:
        return _subject(self.version)

    def wanted(self) -> Sequence[Wanted]:
        signature = keys.shasums_sig_key(self.provider.id, self.version.version)
        return [
            _shasums(self.provider, self.version),
            Wanted(signature, checks.MAX_SIGNATURE_BYTES, "SHA256SUMS.sig"),
        ]

    def check(self, files: Sequence[Fetched]) -> Verified:
        shasums, signature = (found.read() for found in files)
        namespace, key_id = self.provider.namespace, self.version.key_id.upper()
        key = store.gpg_key(namespace, key_id, consistent=True)
        if key is None:
            raise Refused(
                f"GPG key {key_id} is not a key of namespace {namespace}: add it "
                "(POST /api/registry/private/v2/gpg-keys) and upload SHA256SUMS.sig again"
            )
        with pipeline.unforeseen("SHA256SUMS.sig could not be read"):
            checks.verify_signature(key.ascii_armor, key.key_id, shasums, signature)
            checks.parse_shasums(shasums)
        return Verified(shasums, key.ascii_armor)

    def accept(self, result: Verified) -> str:
        sums = hashlib.sha256(result.shasums).hexdigest()
        key_id = {"key-id": self.version.key_id.upper()}
        event = audited.version_event(None, self.provider, self.version, audited.UPLOADED, **key_id)
        if not store.set_status(self.version, VersionStatus.VERIFIED, event, sums_sha256=sums):
            return Outcome.GONE
        store.serve_version(self.provider, self.version, sums, result.armor)
        provenance.attest_verified(self.provider, self.version, sums)
        self.shasums = result.shasums
        return Outcome.VERIFIED

    def refuse(self, reason: str) -> None:
        event = audited.version_event(
            None, self.provider, self.version, audited.REFUSED, audited.REFUSED, reason=reason
        )
        store.set_status(self.version, VersionStatus.FAILED, event, error=reason)
        store.unserve_version(self.provider, self.version.version)


# ----- a platform: its archive --------------------------------------------------------------


def check_uploaded_platform(
    provider: ProviderModel, version: ProviderVersionModel, platform: ProviderPlatformModel
) -> str:
    """An archive arrived (its flag already written): check it if its version verified;
    otherwise the version's check will. The version is read again, strongly consistent."""
    found = store.version_of(version.provider_id, version.version, consistent=True)
    if found is None:
        return Outcome.GONE
    if found.status != VersionStatus.VERIFIED:
        return Outcome.WAITING
    try:
        shasums = pipeline.read_small(_shasums(provider, found))
    except (objects.Gone, Refused):
        return Outcome.WAITING  # being replaced: its own event verifies it, then the platforms
    if hashlib.sha256(shasums).hexdigest() != found.sums_sha256:
        return Outcome.WAITING  # likewise
    return pipeline.run(PlatformArchive(provider, found, platform, shasums))


@dataclass(frozen=True)
class PlatformArchive:
    """A platform's zip, checked against the SHA256SUMS its version verified."""

    provider: ProviderModel
    version: ProviderVersionModel
    platform: ProviderPlatformModel
    shasums: bytes

    @property
    def subject(self) -> Subject:
        return _subject(self.platform)

    def wanted(self) -> Sequence[Wanted]:
        """The archive, once SHA256SUMS lists it with the platform's shasum."""
        platform = self.platform
        listed = checks.parse_shasums(self.shasums).get(platform.filename)
        if listed is None:
            raise Refused(f"SHA256SUMS has no line for {platform.filename}")
        if listed != platform.shasum.lower():
            raise Refused(
                f"SHA256SUMS lists {listed} for {platform.filename}, "
                f"not the platform's shasum {platform.shasum}"
            )
        key = keys.binary_key(
            self.provider.id, self.version.version, platform.os, platform.arch, platform.filename
        )
        return [Wanted(key, get_settings().provider_max_archive_bytes, "the archive")]

    def check(self, files: Sequence[Fetched]) -> None:
        (archive,) = files
        if archive.sha256 != self.platform.shasum.lower():
            raise Refused(
                f"the uploaded archive's sha256 is {archive.sha256}, not the platform's shasum "
                f"{self.platform.shasum}"
            )
        with pipeline.unforeseen("the archive could not be read"):
            checks.check_archive(archive.file, self.provider.name)

    def accept(self, result: None) -> str:
        event = audited.platform_event(
            None, self.provider, self.version, self.platform, audited.UPLOADED
        )
        if not store.set_status(self.platform, VersionStatus.VERIFIED, event):
            return Outcome.GONE
        sums = hashlib.sha256(self.shasums).hexdigest()
        try:
            store.serve_platform(self.provider, self.version.version, self.platform, sums)
        except store.TooLarge:
            raise Refused(
                "the provider serves too many platforms to list them all (DynamoDB's 400 KB "
                "item limit): delete old versions, then upload this archive again"
            ) from None
        return Outcome.VERIFIED

    def refuse(self, reason: str) -> None:
        event = audited.platform_event(
            None,
            self.provider,
            self.version,
            self.platform,
            audited.REFUSED,
            audited.REFUSED,
            reason=reason,
        )
        store.set_status(self.platform, VersionStatus.FAILED, event, error=reason)
        store.serve_platform(self.provider, self.version.version, self.platform, None)
