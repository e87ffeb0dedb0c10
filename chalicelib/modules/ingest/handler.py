"""The ingest handler: one S3 ObjectCreated record in, one version ``ok`` or failed out.

The SQS Lambda and the local poller both call ``handle_s3_record``; it is safe to run twice
for the same object (SQS delivers at least once): a version already ``ok`` ignores new
uploads, a missing object means the work was done, and every write is conditional on the
version still existing with the same id.

What is the archive's fault is refused, never retried: every exception raised while reading
or parsing its content (our own ArchiveError/HclError reasons, and any other exception, such as
a parser bug hit by hostile bytes) marks the version ``reg_ingress_failed`` with a short reason
and logs one line. Failures of S3 or DynamoDB themselves (including the S3 stream breaking
mid-read) propagate, so SQS delivers the message again.
"""

from __future__ import annotations

import logging
from typing import Any

from botocore.exceptions import ClientError

from chalicelib.artifacts import objects, semver
from chalicelib.artifacts.events import record_key
from chalicelib.artifacts.statuses import VersionStatus
from chalicelib.core import observe
from chalicelib.core.data.aws import client
from chalicelib.core.settings import get_settings
from chalicelib.modules import keys
from chalicelib.modules import service as registry
from chalicelib.modules.store import ModuleVersionModel

log = logging.getLogger("registry.ingest")


def handle_s3_record(record: dict[str, Any]) -> str:
    """Ingest the uploaded archive named by ``record``; returns what happened (for logs)."""
    key = record_key(record)
    upload = keys.UploadKey.parse(key)
    if upload is None:
        log.info("ignoring object %s: not an upload key", key)
        return "ignored"
    version = _find_version(upload)
    if version is None:
        objects.delete_objects([key])
        return _report("stale", upload, None)
    if version.status == VersionStatus.OK:
        # Published archives are immutable: drop the late re-upload, keep the archive.
        objects.delete_objects([key])
        return _report("already-ok", upload, version)
    if not registry.mark_version(version, VersionStatus.INGRESSING):
        return _report("stale", upload, version)
    try:
        outcome = _ingest(version, upload)
    except _Rejected as rejected:
        registry.mark_version(version, VersionStatus.INGRESS_FAILED, error=rejected.reason)
        objects.delete_objects([key])
        # One line, no traceback: the bytes are the publisher's.
        return _report("failed", upload, version, rejected.reason, rejected.unexpected)
    except _Gone:
        return _report("gone", upload, version)
    return _report(outcome, upload, version)


# The outcomes counted by the Ingest metric (the others are retries and races, logged only).
_COUNTED = {"ok", "failed"}


def _report(
    outcome: str,
    upload: keys.UploadKey,
    version: ModuleVersionModel | None,
    reason: str = "",
    unexpected: str = "",
) -> str:
    """One line per ingest outcome: which module version, what happened and why; ``ok`` and
    ``failed`` also count in the Ingest metric (by Outcome)."""
    fields: dict[str, Any] = {"outcome": outcome, "module_id": upload.module_id}
    fields["version"] = upload.version
    if version is not None:
        registry_name, namespace, name, provider = version.module_key.split("#")
        fields.update(
            organization=version.organization,
            registry_name=registry_name,
            namespace=namespace,
            name=name,
            provider=provider,
        )
    if reason:
        fields["reason"] = reason
    if unexpected:
        fields["unexpected"] = unexpected
    label = version.id if version is not None else upload.version_id
    message = f"ingest of version {label}: {outcome}" + (f": {reason}" if reason else "")
    message += f" [{unexpected}]" if unexpected else ""
    metrics = [observe.Metric("Ingest", dimensions={"Outcome": outcome})]
    observe.emit(
        log,
        logging.WARNING if unexpected else logging.INFO,
        message,
        fields,
        metrics if outcome in _COUNTED else (),
    )
    return outcome


# The reason is stored on the version and in the module's item (DynamoDB items are <= 400 KB).
_MAX_REASON = 500


class _Rejected(Exception):
    """The archive is refused; ``unexpected`` describes an unforeseen exception (for the log)."""

    def __init__(self, reason: str, unexpected: str = "") -> None:
        self.unexpected = unexpected
        # Valid UTF-8 whatever the archive held (a lone surrogate would fail DynamoDB's write).
        reason = reason.encode("utf-8", "backslashreplace").decode("utf-8")
        if len(reason) > _MAX_REASON:
            reason = reason[: _MAX_REASON - 1] + "\u2026"
        super().__init__(reason)
        self.reason = reason


class _Gone(Exception):
    """The uploaded object disappeared (already processed by another delivery)."""


def _find_version(upload: keys.UploadKey) -> ModuleVersionModel | None:
    try:
        order_key = semver.parse(upload.version).order_key
        version = ModuleVersionModel.get(upload.module_id, order_key)
    except (semver.InvalidVersion, ModuleVersionModel.DoesNotExist):
        return None
    return version if version.id == upload.version_id else None


def _ingest(version: ModuleVersionModel, upload: keys.UploadKey) -> str:
    from chalicelib.modules.describe import summary
    from chalicelib.modules.ingest.archive import ArchiveError, StreamError, read_archive
    from chalicelib.modules.ingest.hcl import HclError, parse_module
    from chalicelib.modules.ingest.limits import Limits, MetadataTooLarge, fit_metadata

    settings = get_settings()
    s3 = client("s3")
    try:
        obj = s3.get_object(Bucket=settings.bucket, Key=upload.key)
    except ClientError as exc:
        if exc.response["Error"]["Code"] in ("NoSuchKey", "404"):
            raise _Gone() from None
        raise
    length = obj.get("ContentLength") or 0
    if length > settings.max_archive_bytes:
        obj["Body"].close()
        raise _Rejected(
            f"archive is {length} bytes, over the limit of {settings.max_archive_bytes} bytes"
        )
    name = version.module_key.split("#")[2]
    try:
        contents = read_archive(
            obj["Body"],
            max_compressed=settings.max_archive_bytes,
            max_unpacked=settings.max_unpacked_bytes,
        )
        metadata = parse_module(contents.files, Limits.from_settings(settings))
        metadata["root"]["name"] = name
        metadata["sha256"] = contents.sha256
        fit_metadata(metadata, settings.max_metadata_bytes)
        description = summary(metadata["root"].get("readme"))
    except StreamError as failed:
        raise failed.error from None  # S3 broke off mid-read: let SQS deliver it again
    except (ArchiveError, HclError, MetadataTooLarge) as exc:
        raise _Rejected(exc.message) from None
    except Exception as exc:  # hostile bytes hit something we did not foresee: still refused
        raise _Rejected(
            f"the archive could not be parsed (unexpected {type(exc).__name__}); "
            "check its Terraform files, or report this to the registry's operators",
            unexpected=f"{type(exc).__name__}: {str(exc)[:200]!r} in {upload.key}",
        ) from None
    objects.put_metadata(upload.metadata_key, metadata)
    # Copy exactly the bytes we validated: a re-upload racing with us fails the ETag check.
    try:
        s3.copy_object(
            Bucket=settings.bucket,
            Key=upload.archive_key,
            CopySource={"Bucket": settings.bucket, "Key": upload.key},
            CopySourceIfMatch=obj["ETag"],
            ContentType="application/x-gzip",
            MetadataDirective="REPLACE",
        )
    except ClientError as exc:
        if exc.response["Error"]["Code"] in ("PreconditionFailed", "NoSuchKey", "412"):
            return "superseded"  # the newer upload has its own event and will be ingested
        raise
    done = registry.mark_version(
        version,
        VersionStatus.OK,
        sha256=contents.sha256,
        size=contents.compressed_size,
        archive_key=upload.archive_key,
        metadata_key=upload.metadata_key,
        description=description,
    )
    objects.delete_objects([upload.key])
    if not done:
        objects.delete_objects([upload.archive_key, upload.metadata_key])
        return "stale"
    return "ok"
