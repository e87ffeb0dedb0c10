"""A module version's history on its publishing page: who created (published), uploaded,
deprecated, revoked, released it, and when: the modules room reads the version's events
(``modules.audit.history.documents``), shown here as the trail's rows.
"""

from __future__ import annotations

from dataclasses import dataclass

from chalicelib.modules.audit import history
from chalicelib.web.audit.rows import Row, row


@dataclass(frozen=True)
class History:
    rows: list[Row]
    complete: bool  # False: the trail was too busy to read it all here


def version_history(version: history.ModuleVersionModel) -> History:
    """The events of ``version`` (one the caller has read), oldest first."""
    found, complete = history.documents(version)
    return History([row(d, version.organization) for d in found], complete)
