"""The scheduled deprecation deadline sweep (``chalicelib.modules.deadlines``): every minute,
each due version revoked on its deadline or its notice recorded, as the registry itself.

Each version is settled in its own scope, checked by ``core.audit.check.hold`` (its change
and its event go together); a failure is logged and left for the next run (the version is
still due). The local stack's thread calls ``sweep`` as the schedule does.
"""

from __future__ import annotations

import logging
from datetime import datetime
from typing import Any, TypedDict

from chalice import Chalice, Rate

from chalicelib.core import observe
from chalicelib.core.audit import check

log = logging.getLogger("registry.deadlines")


class Schedule(TypedDict):
    """``schedule``'s arguments (``app.py`` schedules the same handler)."""

    expression: Rate
    name: str


SCHEDULE: Schedule = {"expression": Rate(1, unit=Rate.MINUTES), "name": "deprecation_deadlines"}


def sweep(moment: datetime | None = None) -> dict[str, int]:
    """Settle every version due by ``moment`` (now); how many were revoked, noticed, skipped
    or failed."""
    from chalicelib.core.data.ids import now
    from chalicelib.modules.deadlines import sweep as deadlines

    observe.configure()
    moment = moment or now()
    outcomes: dict[str, int] = {}
    for item in deadlines.due(moment):
        with observe.scope() as state:
            try:
                outcome = deadlines.settle(item, moment)
            except Exception:  # noqa: BLE001 - the next run tries again: it is still due
                log.exception("version %s: its deadline could not be settled", item.id)
                outcome = "failed"
            finally:
                check.hold(state, "deprecation deadline")
        outcomes[outcome] = outcomes.get(outcome, 0) + 1
    if outcomes:
        log.info("deprecation deadlines: %s", outcomes)
    return outcomes


def handle_schedule(event: Any) -> None:
    """The scheduled event carries nothing the sweep needs: it runs at its own now."""
    sweep()


app = Chalice(app_name="registry-deprecation-deadlines")
deprecation_deadlines = app.schedule(**SCHEDULE)(handle_schedule)  # the Lambda handler
