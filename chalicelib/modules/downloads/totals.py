"""Each module's downloads per version, kept on the module item for its lists.

The download path writes small items of ``module-downloads`` and nothing else
(``store.record``); the table's DynamoDB Stream (``NEW_IMAGE``) then hands every changed item
here (the ``DownloadTotals`` function in AWS, a poller in the local stack): each version whose
day item (or base item) changed gets its total read again (``store.version_total``: one
strongly consistent Query of its base and day items, never its consumers) and copied into the
module's ``version_downloads`` map. A module list reads the module items it shows anyway, so
each row's total (``ModuleModel.total_downloads``) costs no call, and the download path gains
none. The module's entry in the registry protocol's list gets the new total too
(``list_total``), for the protocol's lists and search.

Exact, and late by the stream's delay (usually under a second, at most the batching window
set in the template): what is written is the version's absolute total as its items hold it,
never an increment, so a batch that Lambda delivers again (after a failure) writes the same
values and counts nothing twice. A deleted version (its items' ``REMOVE``) has no item left
and leaves the map. The Query reads the version's day items: about 40 bytes per day with
downloads (one read unit per 100 days), until the backfill folds days older than
``store.DAYS_KEPT`` into the base item.

A module without the map (its downloads counted before this existed) gets the whole map
from one strongly consistent Query of its download items on the first batch that touches
it; the backfill does the same for every module (``fill_module``).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from typing import Any

from pynamodb.exceptions import UpdateError

from chalicelib.core import observe
from chalicelib.core.data import db
from chalicelib.modules import store as store_of_modules
from chalicelib.modules.downloads import store
from chalicelib.modules.store import ModuleModel, ProtocolEntryModel

log = logging.getLogger("registry.downloads")

# Versions one UpdateItem sets at most: keeps the expression far below DynamoDB's 4 KB.
VERSIONS_PER_UPDATE = 50


def touched(records: Iterable[Mapping[str, Any]]) -> dict[str, set[str]]:
    """What a batch of stream records says: module id -> the versions whose total may have
    changed (a day item's or a base item's change; a consumer item's changes no total)."""
    found: dict[str, set[str]] = {}
    for record in records:
        keys = (record.get("dynamodb") or {}).get("Keys") or {}
        module_id = keys.get("module_id", {}).get("S")
        key = keys.get("version", {}).get("S")
        if not module_id or not key or store.is_consumer_key(key):
            continue
        found.setdefault(module_id, set()).add(store.version_of(key))
    return found


def apply(records: Iterable[Mapping[str, Any]]) -> int:
    """Copy a stream batch's totals into their modules; how many modules were written. An
    exception propagates, so that Lambda delivers the batch again."""
    written = 0
    for module_id, versions in touched(records).items():
        module = store_of_modules.module_by_id(module_id)
        if module is None:  # deleted since: nothing to keep
            continue
        totals = {version: store.version_total(module_id, version) for version in versions}
        written += keep(module, totals)
    return written


def keep(module: ModuleModel, versions: Mapping[str, int | None]) -> int:
    """Set (or remove) these versions' totals in the module's map: one UpdateItem per
    ``VERSIONS_PER_UPDATE`` versions; 1 when written, 0 when the module is gone."""
    if module.version_downloads is None:
        return fill_module(module)
    # A 0.11 function that read 0.12's items during the update kept their keys as versions
    # (with 0): they go with this update.
    stray = {key: None for key in module.version_downloads.as_dict() if "#" in key}
    items = sorted({**stray, **versions}.items())
    for start in range(0, len(items), VERSIONS_PER_UPDATE):
        actions = [
            ModuleModel.version_downloads[version].remove()
            if total is None
            else ModuleModel.version_downloads[version].set(total)
            for version, total in items[start : start + VERSIONS_PER_UPDATE]
        ]
        try:
            module.update(
                actions=actions,
                condition=(ModuleModel.id == module.id) & ModuleModel.version_downloads.exists(),
            )
        except UpdateError as exc:
            if not db.conditional_failure(exc):
                raise
            return fill_module(module)  # gone, or the map with it: read the truth
    list_total(module)
    return 1


def fill_module(module: ModuleModel) -> int:
    """The module's whole map from its download items (one Query), written only while the
    module exists; 1 when written. Also the backfill's, for modules counted before."""
    counted = {
        found.version: found.total for found in store.module_downloads(module.id, consistent=True)
    }
    try:
        module.update(
            actions=[ModuleModel.version_downloads.set(counted)],
            condition=ModuleModel.id == module.id,
        )
    except UpdateError as exc:
        if not db.conditional_failure(exc):
            raise
        return 0
    list_total(module)
    return 1


def list_total(module: ModuleModel) -> None:
    """The module's new total on its entry in the registry protocol's list (one UpdateItem),
    when the protocol lists it. The entry is also rewritten whole with the total when a
    version changes (``store.refresh_listing``); a rewrite racing this batch can leave the
    entry's total one batch behind, until the module's next download."""
    entry = store_of_modules.protocol_entry(module)
    if entry is None or entry[0] is None:  # not listed, or a curated public module
        return
    try:
        store_of_modules.protocol_item(module, entry).update(
            actions=[ProtocolEntryModel.downloads.set(module.total_downloads())],
            condition=ProtocolEntryModel.protocol_key.exists(),
        )
    except UpdateError as exc:
        if not db.conditional_failure(exc):
            raise


def backfill() -> dict[str, int]:
    """Give every module without the map its map (a scan: the backfill's, never a request's)."""
    filled = 0
    for module in store_of_modules.every_module():
        if module.version_downloads is None:
            filled += fill_module(module)
    return {"modules filled": filled}


def handle_batch(records: list[Mapping[str, Any]]) -> None:
    """One stream batch in its own log scope (its DynamoDB calls counted on its line)."""
    with observe.scope():
        modules = apply(records)
        observe.emit(
            log,
            logging.INFO,
            f"download totals: {len(records)} records, {modules} modules",
            {"records": len(records), "modules": modules},
            [observe.Metric("DownloadTotalsRecords", len(records))],
        )
