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

from pynamodb.exceptions import UpdateError

from chalicelib.artifacts import events
from chalicelib.artifacts.events import record_key
from chalicelib.core.data import db
from chalicelib.core.data.ids import now
from chalicelib.providers import keys, store
from chalicelib.providers.ingest import verify
from chalicelib.providers.store import ProviderModel, ProviderPlatformModel, ProviderVersionModel

log = logging.getLogger("registry.providers")


def handle_s3_record(record: events.Record) -> str:
    """Mark the uploaded file's item; returns what happened (for logs and tests)."""
    key = record_key(record)
    uploaded = keys.UploadedKey.parse(key)
    if uploaded is None:
        return "ignored"
    found = _version(uploaded)
    if found is None:
        return "ignored"
    provider, version = found
    if uploaded.platform is None:
        flag = (
            ProviderVersionModel.shasums_uploaded
            if uploaded.file == keys.SHASUMS
            else ProviderVersionModel.shasums_sig_uploaded
        )
        if _mark(version, flag) != "uploaded":
            return "ignored"
        # The update returned the item as written: the second of the two files sees both.
        return verify.check_version(provider, version)
    os_, _, arch = uploaded.platform.partition("_")
    platform = store.platform_of(version.id, os_, arch)
    if platform is None or platform.filename != uploaded.file:
        return "ignored"  # a key the registry did not hand out
    if _mark(platform, ProviderPlatformModel.provider_binary_uploaded) != "uploaded":
        return "ignored"
    return verify.check_uploaded_platform(provider, version, platform)


def _version(
    uploaded: keys.UploadedKey,
) -> tuple[ProviderModel, ProviderVersionModel] | None:
    provider = store.provider_by_id(uploaded.provider_id)
    version = store.version_of(provider.id, uploaded.version) if provider else None
    return (provider, version) if provider and version else None


def _mark(item: Any, flag: Any) -> str:
    """Set ``flag`` on ``item`` unless it was deleted meanwhile (an update would recreate it)."""
    model = type(item)
    try:
        item.update(
            actions=[flag.set(True), model.updated_at.set(now())],
            condition=model._hash_key_attribute().exists(),
        )
    except UpdateError as exc:
        if db.conditional_failure(exc):
            return "ignored"
        raise
    log.info("provider upload arrived", extra={"item": item.id, "flag": flag.attr_name})
    return "uploaded"
