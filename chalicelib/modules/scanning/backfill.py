"""Queue the scan of every accepted module version that has none (safe to re-run).

Versions ingested before the registry scanned have no scan; so has a version held for its
scan whose job went to the dead-letter queue. ``infrastructure.backfill`` (run once after
deploying, and by ``make run`` on restored state) calls ``request_missing_scans``: a scan of
the modules table, a Query of the versions of each module that has such a version, and one
job each. A job for a version scanned meanwhile writes nothing (``worker.run``). A module's
``actions/retry`` asks the same for its versions (``request_scans_of``).
"""

from __future__ import annotations

from chalicelib.modules import keys, store
from chalicelib.modules.ingest.handler import request_scan
from chalicelib.modules.store import ModuleModel


def request_missing_scans() -> dict[str, int]:
    """One scan job per accepted version without a scan; what it did."""
    queued = 0
    for module in store.every_module():
        unscanned = {v for v, entry in module.statuses().items() if "scan" not in entry}
        if unscanned:
            queued += len(request_scans_of(module, unscanned))
    return {"queued": queued} if queued else {}


def request_scans_of(module: ModuleModel, among: set[str] | None = None) -> list[str]:
    """Queue the scan of each accepted version of ``module`` (of ``among``) that has none
    (also the module's ``actions/retry``); returns those versions."""
    queued = []
    for version in store.versions_of(module.id):
        if among is not None and version.version not in among:
            continue
        if version.accepted and not version.scan_summary:
            request_scan(keys.UploadKey(module.id, version.version, version.id))
            queued.append(version.version)
    return queued
