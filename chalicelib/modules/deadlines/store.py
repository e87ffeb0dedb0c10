"""The sweep's one read: the versions due, from the sparse ``by-deadline`` index."""

from __future__ import annotations

from datetime import datetime

from chalicelib.modules.statuses import deadline_text
from chalicelib.modules.store import DUE, ModuleVersionModel


def due_versions(moment: datetime) -> list[ModuleVersionModel]:
    """Every version whose deadline the sweep must look at by ``moment`` (``due_at`` at or
    before it), soonest first: Queries of the sparse ``by-deadline`` index, every page."""
    condition = ModuleVersionModel.due_at <= deadline_text(moment)
    return list(ModuleVersionModel.by_deadline.query(DUE, condition))
