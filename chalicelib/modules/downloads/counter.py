"""Counting downloads on the registry protocol's download (``store.record``: one UpdateItem of
an item under 1 KB; a second the first time that day the instance sees the consumer), and the
totals its detail endpoints report.

Counting never fails a download: a failed UpdateItem (throttled, the table missing) is
logged and counted in the ``DownloadsNotCounted`` metric, and the download answers as
before. That is the only way a download goes uncounted; otherwise counts are exact.
"""

from __future__ import annotations

import logging

from chalicelib.core import observe
from chalicelib.core.auth import Principal
from chalicelib.core.data.ids import now
from chalicelib.modules.downloads import store

log = logging.getLogger("registry.downloads")


def count(module_id: str, version: str, principal: Principal) -> None:
    """Count one download (``store.record``); a failure is logged, never raised."""
    try:
        store.record(module_id, version, principal.kind, principal.id, now())
    except Exception as exc:  # noqa: BLE001 - whatever failed, the download goes on
        observe.emit(
            log,
            logging.WARNING,
            f"download of {module_id} {version} not counted: {type(exc).__name__}",
            {"module_id": module_id, "version": version, "error": type(exc).__name__},
            [observe.Metric("DownloadsNotCounted")],
        )


def totals(module_id: str) -> dict[str, int]:
    """version -> its downloads (one Query of the module's items)."""
    return {found.version: found.total for found in store.module_downloads(module_id)}
