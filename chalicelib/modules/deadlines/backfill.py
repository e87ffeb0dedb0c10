"""Versions deprecated before the ``by-deprecation`` index existed get its keys (a one-off,
``python -m infrastructure.backfill``)."""

from __future__ import annotations

from collections import Counter

from chalicelib.modules import store, writes
from chalicelib.modules.store import ModuleVersionModel


def backfill_deprecation_index() -> dict[str, int]:
    """Put versions deprecated before the ``by-deprecation`` index existed in it (a scan of
    the versions: a one-off, ``python -m infrastructure.backfill``); writes only what
    differs, so a second run writes nothing."""
    report: Counter[str] = Counter()
    for version in ModuleVersionModel.scan():
        order = store.deprecation_order(version.deprecation, version.revocation)
        kept_in = version.organization if order else None
        if (version.deprecation_order, version.deprecated_in) == (order, kept_in):
            continue
        if writes.record_deprecation_order(version, order):
            report["versions indexed" if order else "versions unindexed"] += 1
        else:
            report["changed meanwhile"] += 1
    return dict(report)
