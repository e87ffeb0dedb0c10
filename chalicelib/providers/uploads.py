"""S3 upload events of provider files: a version's SHA256SUMS and signature, a platform's
binary archive. Each turns its ``*-uploaded`` flag true, then the files are checked
(``providers.ingest.verify``: the signature once both version files are there, an archive
once its version verified).

An event for a key no item names any more (the version or platform was deleted, or the
key is not one this registry hands out) is ignored: the message is done.
"""

from __future__ import annotations

import logging
from typing import Any

from chalicelib.artifacts import events
from chalicelib.artifacts.events import record_key
from chalicelib.artifacts.pipeline import Outcome
from chalicelib.providers import keys, store
from chalicelib.providers.ingest import verify
from chalicelib.providers.store import ProviderModel, ProviderPlatformModel, ProviderVersionModel

log = logging.getLogger("registry.providers")


def handle_s3_record(record: events.Record) -> str:
    """Mark the uploaded file's item; returns what happened (for logs and tests)."""
    key = record_key(record)
    uploaded = keys.UploadedKey.parse(key)
    if uploaded is None:
        return Outcome.IGNORED
    found = _version(uploaded)
    if found is None:
        return Outcome.IGNORED
    provider, version = found
    if uploaded.platform is None:
        flag = (
            ProviderVersionModel.shasums_uploaded
            if uploaded.file == keys.SHASUMS
            else ProviderVersionModel.shasums_sig_uploaded
        )
        if not _mark(version, flag):
            return Outcome.IGNORED
        # The update returned the item as written: the second of the two files sees both.
        return verify.check_version(provider, version)
    os_, _, arch = uploaded.platform.partition("_")
    platform = store.platform_of(version.id, os_, arch)
    if platform is None or platform.filename != uploaded.file:
        return Outcome.IGNORED  # a key the registry did not hand out
    if not _mark(platform, ProviderPlatformModel.provider_binary_uploaded):
        return Outcome.IGNORED
    return verify.check_uploaded_platform(provider, version, platform)


def _version(
    uploaded: keys.UploadedKey,
) -> tuple[ProviderModel, ProviderVersionModel] | None:
    provider = store.provider_by_id(uploaded.provider_id)
    version = store.version_of(provider.id, uploaded.version) if provider else None
    return (provider, version) if provider and version else None


def _mark(item: Any, flag: Any) -> bool:
    """Set ``flag`` on ``item`` unless it was deleted meanwhile (False then)."""
    if not store.mark_uploaded(item, flag):
        return False
    log.info("provider upload arrived", extra={"item": item.id, "flag": flag.attr_name})
    return True
