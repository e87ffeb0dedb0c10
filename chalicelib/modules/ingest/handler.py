"""The ingest of a module archive: one S3 ObjectCreated record in, one version ``ok`` or
failed out, through the upload pipeline every artifact shares (``artifacts.pipeline``:
the archive read under ``REGISTRY_MAX_ARCHIVE_BYTES``, the outcome recorded and reported).
An accepted version's scan is queued (``request_scan``; ``modules.scanning.worker`` runs
it); under a publishing policy that holds versions (``trust.policy``), the version stays
``reg_ingressing`` (archive and metadata stored, not served) until its scan decides.

The SQS Lambda and the local poller both call ``handle_s3_record``; it is safe to run twice
for the same object (SQS delivers at least once): an accepted version (``ok``, or held for
its scan, or quarantined) ignores new uploads, a missing object means the work was done, and
every write is conditional on the version still existing with the same id.

The outcome is recorded in the audit trail with the version's status (``uploaded`` or
``refused``, outcome ``refused``), by the registry (``auth.type`` System) for whoever created
the version (``uploaded-by``: its ``created_by``); the ``reg_ingressing`` mark before the
archive is read is the worker's progress, no one's change.

A module's own checks (``ModuleArchive.check``): the archive is a safe gzip tarball
(``archive``), its Terraform files parse (``hcl``) and its metadata fits (``limits``). What
is the archive's fault is refused, never retried: every exception raised while reading or
parsing its content (our own ArchiveError/HclError reasons, and any other exception, such as
a parser bug hit by hostile bytes) marks the version ``reg_ingress_failed`` with a short
reason and logs one line. Failures of S3 or DynamoDB themselves propagate, so SQS delivers
the message again.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from chalicelib.artifacts import objects, pipeline, queue, semver
from chalicelib.artifacts.events import record_key
from chalicelib.artifacts.objects import Fetched
from chalicelib.artifacts.pipeline import Outcome, Refused, Subject, Wanted
from chalicelib.artifacts.statuses import VersionStatus
from chalicelib.core.settings import get_settings
from chalicelib.modules import keys, store
from chalicelib.modules import service as registry
from chalicelib.modules.audit import events as audit_events
from chalicelib.modules.store import ModuleVersionModel
from chalicelib.trust.policy import policy_of

log = logging.getLogger("registry.ingest")
# Counts ``ok`` and ``failed`` by Outcome (the others are retries and races, logged only).
METRIC = "Ingest"
_UNFORESEEN = "; check its Terraform files, or report this to the registry's operators"


def handle_s3_record(record: dict[str, Any]) -> str:
    """Ingest the uploaded archive named by ``record``; returns what happened (for logs)."""
    key = record_key(record)
    upload = keys.UploadKey.parse(key)
    if upload is None:
        log.info("ignoring object %s: not an upload key", key)
        return Outcome.IGNORED
    version = _find_version(upload)
    if version is None:
        objects.delete_objects([key])
        return pipeline.report(_subject(upload, None), Outcome.STALE)
    if version.accepted:
        # Accepted archives (published, quarantined, or held for their scan) never change: drop
        # the late re-upload, keep the archive. A redelivered event of an accepted version whose
        # scan is still pending asks for the scan again (its job may never have been sent).
        objects.delete_objects([key])
        if version.scan_summary is None:
            request_scan(upload)
        return pipeline.report(_subject(upload, version), Outcome.ALREADY_OK)
    if not registry.mark_version(version, VersionStatus.INGRESSING):
        return pipeline.report(_subject(upload, version), Outcome.STALE)
    return pipeline.run(ModuleArchive(upload, version))


def request_scan(upload: keys.UploadKey) -> None:
    """Queue the scan of the version whose archive ``upload`` names (``scanning.worker``)."""
    queue.request_scan(
        queue.MODULE_SCAN,
        module_id=upload.module_id,
        version=upload.version,
        version_id=upload.version_id,
    )


def _subject(upload: keys.UploadKey, version: ModuleVersionModel | None) -> Subject:
    """The module version an outcome is about, in the log: which one, whose, where."""
    fields: dict[str, Any] = {"module_id": upload.module_id, "version": upload.version}
    if version is not None:
        registry_name, namespace, name, provider = version.module_key.split("#")
        fields.update(
            organization=version.organization,
            registry_name=registry_name,
            namespace=namespace,
            name=name,
            provider=provider,
        )
    label = version.id if version is not None else upload.version_id
    return Subject(log, METRIC, f"ingest of version {label}", fields)


def _find_version(upload: keys.UploadKey) -> ModuleVersionModel | None:
    try:
        order_key = semver.parse(upload.version).order_key
    except semver.InvalidVersion:
        return None
    version = store.find_version(upload.module_id, order_key)
    return version if version is not None and version.id == upload.version_id else None


@dataclass(frozen=True)
class Ingested:
    """What a module version keeps of an archive that passed its checks."""

    metadata: dict[str, Any]
    sha256: str
    size: int
    description: str
    etag: str  # of the object checked: only those bytes are published


def parse_archive(file: Any, name: str, etag: str = "") -> Ingested:
    """A module archive read (``archive``), parsed (``hcl``) and fitted (``limits``): what a
    version keeps of it; Refused with the reason when it is not a module archive.
    ``name``: the module's name (its root's). The upload's ingest and the module cache's
    (``modules.cache``) both read archives here."""
    from chalicelib.modules.describe import summary
    from chalicelib.modules.ingest.archive import ArchiveError, read_archive
    from chalicelib.modules.ingest.hcl import HclError, parse_module
    from chalicelib.modules.ingest.limits import Limits, MetadataTooLarge, fit_metadata

    settings = get_settings()
    try:
        contents = read_archive(
            file,
            max_compressed=settings.max_archive_bytes,
            max_unpacked=settings.max_unpacked_bytes,
        )
        metadata = parse_module(contents.files, Limits.from_settings(settings))
        metadata["root"]["name"] = name
        metadata["sha256"] = contents.sha256
        fit_metadata(metadata, settings.max_metadata_bytes)
    except (ArchiveError, HclError, MetadataTooLarge) as exc:
        raise Refused(exc.message) from None
    description = summary(metadata["root"].get("readme"))
    return Ingested(metadata, contents.sha256, contents.compressed_size, description, etag)


@dataclass(frozen=True)
class ModuleArchive:
    """A module version's uploaded archive, as the pipeline takes it (``reg_ingressing``)."""

    upload: keys.UploadKey
    version: ModuleVersionModel

    @property
    def subject(self) -> Subject:
        return _subject(self.upload, self.version)

    def wanted(self) -> Sequence[Wanted]:
        return [Wanted(self.upload.key, get_settings().max_archive_bytes, "archive")]

    def check(self, files: Sequence[Fetched]) -> Ingested:
        from chalicelib.modules.ingest.archive import StreamError

        (archive,) = files
        try:
            with pipeline.unforeseen(
                "the archive could not be parsed", _UNFORESEEN, retried=(StreamError,)
            ):
                return self._parsed(archive)
        except StreamError as failed:
            raise failed.error from None  # reading the fetched bytes broke off: retried

    def _parsed(self, archive: Fetched) -> Ingested:
        return parse_archive(archive.file, self.version.module_key.split("#")[2], archive.etag)

    def accept(self, result: Ingested) -> str:
        """Store the archive and its metadata, publish the version (or, when its
        organization's policy holds versions, keep it ``reg_ingressing`` until its scan),
        then ask for its scan."""
        upload = self.upload
        objects.put_metadata(upload.metadata_key, result.metadata)
        # Copy exactly the bytes we validated: a re-upload racing with us fails the ETag check.
        if not objects.copy_if_unchanged(
            upload.key, upload.archive_key, result.etag, "application/x-gzip"
        ):
            return Outcome.SUPERSEDED  # the newer upload has its own event and will be ingested
        held = policy_of(self.version.organization).holds_versions
        status = VersionStatus.INGRESSING if held else VersionStatus.OK
        meta = {**audit_events.uploader(self.version), "status": str(status), "size": result.size}
        done = registry.mark_version(
            self.version,
            status,
            event=audit_events.of_version(None, self.version, audit_events.UPLOADED, meta),
            sha256=result.sha256,
            size=result.size,
            archive_key=upload.archive_key,
            metadata_key=upload.metadata_key,
            description=result.description,
        )
        objects.delete_objects([upload.key])
        if not done:
            objects.delete_objects([upload.archive_key, upload.metadata_key])
            return Outcome.STALE
        # After the write: a failed send fails the event, whose redelivery finds the version
        # accepted with its scan pending and asks again (``handle_s3_record``).
        request_scan(upload)
        return Outcome.HELD if held else Outcome.OK

    def refuse(self, reason: str) -> None:
        meta = {**audit_events.uploader(self.version), "reason": reason}
        refused = audit_events.of_version(
            None, self.version, audit_events.REFUSED, meta, outcome=audit_events.REFUSED
        )
        registry.mark_version(
            self.version, VersionStatus.INGRESS_FAILED, error=reason, event=refused
        )
        objects.delete_objects([self.upload.key])
