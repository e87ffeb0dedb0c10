"""Checks after upload, run by the upload's S3 event (``providers.uploads``), like module
ingest: a version's SHA256SUMS signature once both files are there, a platform's archive
once its version verified. The outcome is ``status`` and ``error`` on the version or
platform and, when verified, an entry of what the protocol serves (``store.serve_*``).

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
import tempfile
from typing import IO, Any

from botocore.exceptions import ClientError

from chalicelib.artifacts import objects
from chalicelib.artifacts.statuses import VersionStatus
from chalicelib.core import observe
from chalicelib.core.data.aws import client
from chalicelib.providers import keys, store
from chalicelib.providers.ingest import checks
from chalicelib.providers.ingest.checks import Refused
from chalicelib.providers.store import (
    ProviderModel,
    ProviderPlatformModel,
    ProviderVersionModel,
)

log = logging.getLogger("registry.providers.verify")

# Kept on the item; DynamoDB items are <= 400 KB.
MAX_REASON = 500
_CHUNK = 1024 * 1024
# Archives up to this size are checked in memory; larger ones spill to /tmp.
_IN_MEMORY = 16 * 1024 * 1024


class _Gone(Exception):
    """The object was deleted meanwhile (its version or platform with it)."""


def _reason(reason: str) -> str:
    reason = reason.encode("utf-8", "backslashreplace").decode("utf-8")
    return reason if len(reason) <= MAX_REASON else reason[: MAX_REASON - 1] + "\u2026"


def _unexpected(exc: Exception, what: str) -> Refused:
    log.warning("unexpected %s while checking %s: %.200r", type(exc).__name__, what, str(exc))
    return Refused(f"{what} could not be read (unexpected {type(exc).__name__})")


def _read_small(key: str, limit: int, what: str) -> bytes:
    """An object's bytes, refused over ``limit``."""
    try:
        obj = client("s3").get_object(Bucket=objects.bucket(), Key=key)
    except ClientError as exc:
        if exc.response["Error"]["Code"] in ("NoSuchKey", "404"):
            raise _Gone() from None
        raise
    body = obj["Body"]
    if (obj.get("ContentLength") or 0) > limit:
        body.close()
        raise Refused(f"{what} is {obj['ContentLength']} bytes, over the limit of {limit}")
    data: bytes = body.read(limit + 1)
    if len(data) > limit:
        raise Refused(f"{what} is over the limit of {limit} bytes")
    return data


def _spool(key: str) -> tuple[IO[bytes], str]:
    """The archive in a temporary file (memory, then /tmp) and its sha256, size-capped."""
    try:
        obj = client("s3").get_object(Bucket=objects.bucket(), Key=key)
    except ClientError as exc:
        if exc.response["Error"]["Code"] in ("NoSuchKey", "404"):
            raise _Gone() from None
        raise
    limit = checks.MAX_ARCHIVE_BYTES
    if (obj.get("ContentLength") or 0) > limit:
        obj["Body"].close()
        raise Refused(f"the archive is {obj['ContentLength']} bytes, over the limit of {limit}")
    spool = tempfile.SpooledTemporaryFile(max_size=_IN_MEMORY)  # noqa: SIM115 - returned
    digest, size = hashlib.sha256(), 0
    while chunk := obj["Body"].read(_CHUNK):
        size += len(chunk)
        if size > limit:
            spool.close()
            raise Refused(f"the archive is over the limit of {limit} bytes")
        digest.update(chunk)
        spool.write(chunk)
    spool.seek(0)
    return spool, digest.hexdigest()


def _report(outcome: str, item: Any, reason: str = "") -> str:
    fields = {"outcome": outcome, "item": item.id}
    if reason:
        fields["reason"] = reason
    message = f"provider check of {item.id}: {outcome}" + (f": {reason}" if reason else "")
    metrics = [observe.Metric("ProviderCheck", dimensions={"Outcome": outcome})]
    observe.emit(log, logging.INFO, message, fields, metrics)
    return outcome


# ----- a version: its SHA256SUMS signature --------------------------------------------------


def check_version(provider: ProviderModel, version: ProviderVersionModel) -> str:
    """Verify the version's signature once both files are there, then check its uploaded
    platforms against the SHA256SUMS; returns the version's outcome."""
    if not (version.shasums_uploaded and version.shasums_sig_uploaded):
        return "waiting"
    try:
        shasums, armor = _verified_shasums(provider, version)
    except _Gone:
        return "gone"
    except Refused as refused:
        reason = _reason(refused.reason)
        store.set_status(version, VersionStatus.FAILED, error=reason)
        store.unserve_version(provider, version.version)
        return _report("failed", version, reason)
    sums = hashlib.sha256(shasums).hexdigest()
    if not store.set_status(version, VersionStatus.VERIFIED, sums_sha256=sums):
        return "gone"
    store.serve_version(provider, version, sums, armor)
    _report("verified", version)
    for platform in store.platforms_of(version.id, consistent=True):
        if platform.provider_binary_uploaded:
            _check_platform(provider, version, platform, shasums)
    return "verified"


def _verified_shasums(provider: ProviderModel, version: ProviderVersionModel) -> tuple[bytes, str]:
    """SHA256SUMS and the armored key its signature verified with."""
    shasums = _read_small(
        keys.shasums_key(provider.id, version.version), checks.MAX_SHASUMS_BYTES, "SHA256SUMS"
    )
    signature = _read_small(
        keys.shasums_sig_key(provider.id, version.version),
        checks.MAX_SIGNATURE_BYTES,
        "SHA256SUMS.sig",
    )
    key = store.gpg_key(provider.namespace, version.key_id, consistent=True)
    if key is None:
        raise Refused(
            f"GPG key {version.key_id.upper()} is not a key of namespace {provider.namespace}: "
            "add it (POST /api/registry/private/v2/gpg-keys) and upload SHA256SUMS.sig again"
        )
    try:
        checks.verify_signature(key.ascii_armor, key.key_id, shasums, signature)
        checks.parse_shasums(shasums)
    except Refused:
        raise
    except Exception as exc:  # hostile bytes hit something PGPy did not foresee
        raise _unexpected(exc, "SHA256SUMS.sig") from None
    return shasums, key.ascii_armor


# ----- a platform: its archive --------------------------------------------------------------


def check_uploaded_platform(
    provider: ProviderModel, version: ProviderVersionModel, platform: ProviderPlatformModel
) -> str:
    """An archive arrived (its flag already written): check it if its version verified;
    otherwise the version's check will. The version is read again, strongly consistent."""
    found = store.version_of(version.provider_id, version.version, consistent=True)
    if found is None:
        return "gone"
    version = found
    if version.status != VersionStatus.VERIFIED:
        return "waiting"
    try:
        shasums = _read_small(
            keys.shasums_key(provider.id, version.version), checks.MAX_SHASUMS_BYTES, "SHA256SUMS"
        )
    except (_Gone, Refused):
        return "waiting"  # being replaced: its own event verifies it and checks the platforms
    if hashlib.sha256(shasums).hexdigest() != version.sums_sha256:
        return "waiting"  # likewise
    return _check_platform(provider, version, platform, shasums)


def _check_platform(
    provider: ProviderModel,
    version: ProviderVersionModel,
    platform: ProviderPlatformModel,
    shasums: bytes,
) -> str:
    key = keys.binary_key(
        provider.id, version.version, platform.os, platform.arch, platform.filename
    )
    try:
        _check_archive(provider, platform, key, shasums)
    except _Gone:
        return "gone"
    except Refused as refused:
        reason = _reason(refused.reason)
        store.set_status(platform, VersionStatus.FAILED, error=reason)
        store.serve_platform(provider, version.version, platform, None)
        return _report("failed", platform, reason)
    if not store.set_status(platform, VersionStatus.VERIFIED):
        return "gone"
    sums = hashlib.sha256(shasums).hexdigest()
    try:
        store.serve_platform(provider, version.version, platform, sums)
    except store.TooLarge:
        reason = (
            "the provider serves too many platforms to list them all (DynamoDB's 400 KB "
            "item limit): delete old versions, then upload this archive again"
        )
        store.set_status(platform, VersionStatus.FAILED, error=reason)
        return _report("failed", platform, reason)
    return _report("verified", platform)


def _check_archive(
    provider: ProviderModel, platform: ProviderPlatformModel, key: str, shasums: bytes
) -> None:
    listed = checks.parse_shasums(shasums).get(platform.filename)
    if listed is None:
        raise Refused(f"SHA256SUMS has no line for {platform.filename}")
    if listed != platform.shasum.lower():
        raise Refused(
            f"SHA256SUMS lists {listed} for {platform.filename}, "
            f"not the platform's shasum {platform.shasum}"
        )
    archive, sha256 = _spool(key)
    with archive:
        if sha256 != platform.shasum.lower():
            raise Refused(
                f"the uploaded archive's sha256 is {sha256}, not the platform's shasum "
                f"{platform.shasum}"
            )
        try:
            checks.check_archive(archive, provider.name)
        except Refused:
            raise
        except Exception as exc:  # a zip parser bug hit by hostile bytes: still refused
            raise _unexpected(exc, "the archive") from None
