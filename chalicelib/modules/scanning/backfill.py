"""Queue the scan of every accepted module version that has none (safe to re-run).

Versions ingested before the registry scanned have no scan; so has a version held for its
scan whose job went to the dead-letter queue. ``infrastructure.backfill`` (run once after
deploying, and by ``make run`` on restored state) calls ``request_missing_scans``: a scan of
the modules table, a Query of the versions of each module that has such a version, and one
job each. A job for a version scanned meanwhile writes nothing (``worker.run``).
"""

from __future__ import annotations

from collections import Counter

from chalicelib.modules import keys, store
from chalicelib.modules.ingest.handler import request_scan


def request_missing_scans() -> dict[str, int]:
    """One scan job per accepted version without a scan; what it did."""
    done: Counter[str] = Counter()
    for module in store.every_module():
        unscanned = {v for v, entry in module.statuses().items() if "scan" not in entry}
        if not unscanned:
            continue
        for version in store.versions_of(module.id):
            if version.version in unscanned and version.accepted and not version.scan_summary:
                request_scan(keys.UploadKey(module.id, version.version, version.id))
                done["queued"] += 1
    return dict(done)
