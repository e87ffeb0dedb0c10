"""A module version's history on its publishing page: who created (published), uploaded,
deprecated, revoked, released it, and when, read from the organization's audit trail.

(The modules room is to give this a home of its own, a reader beside the version's
services; until then the page reads the trail here, through ``core.audit``.) The read is
one filtered Query of the organization's events from the version's creation on
(``core.audit.store``: at most ``MAX_FILTERED`` events examined; a busier trail says so and
links to the organization's trail instead).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from chalicelib.core.audit import trail
from chalicelib.web.audit.rows import Row, row

VERSION_RESOURCE = "registry-module-version"
# Events about a version are written with or after its creation; a minute's margin keeps an
# event whose time was taken just before the version's item was (the key filter is exact).
MARGIN = timedelta(minutes=1)
MOST = 100


@dataclass(frozen=True)
class History:
    rows: list[Row]
    complete: bool  # False: the trail was too busy to read it all here


def version_history(organization: str, version_id: str, created_at: datetime) -> History:
    """The events of the version ``version_id`` (its external id), oldest first."""
    wanted = trail.Filters(resource_type=VERSION_RESOURCE, resource_id=version_id)
    try:
        documents, total = trail.read_page(
            organization, None, 1, MOST, start=created_at - MARGIN, filters=wanted
        )
    except trail.TooManyToFilter:
        return History([], complete=False)
    return History([row(d, organization) for d in documents], complete=total <= MOST)
