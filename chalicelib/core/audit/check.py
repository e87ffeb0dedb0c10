"""Every change explains itself: a request (or a worker's message) that changed the registry's
state records at least one audit event, or it is reported.

``core.observe`` notes the tables each scope wrote (the writes DynamoDB accepted, outside
``observe.bookkeeping()``). When the scope ends, ``hold`` compares them with the events it
wrote: a write to a table that holds people's changes, with no event beside it, is logged as
an error line (``unexplained change``), and, with ``REGISTRY_AUDIT_STRICT=1`` (the tests),
kept in ``VIOLATIONS`` so that the test that made it fails.

The tables that are nobody's change (counters, caches, derived lists, one-time codes, the
trail itself) are ``BOOKKEEPING``; a single bookkeeping write elsewhere (a token's last use)
runs inside ``observe.bookkeeping()``.
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass

from chalicelib.core import observe
from chalicelib.core.audit.store import TABLE
from chalicelib.core.settings import get_settings

log = logging.getLogger("registry.audit")

# Tables whose writes are no one's change: derived from other items, counters, caches,
# one-time protocol state, and the audit events themselves.
BOOKKEEPING = frozenset(
    {
        TABLE,
        "rate-limits",
        "list-counts",
        "registry-protocol-list",
        "module-downloads",
        "public-registry-cache",
        "provider-mirror",
        # the module cache's lists and last uses; a version's arrival records ``cached``
        "module-cache",
        "saml-state",
        "login-codes",
    }
)
STRICT_SWITCH = "REGISTRY_AUDIT_STRICT"


@dataclass(frozen=True)
class Violation:
    """A scope that changed ``tables`` (short names) and recorded no event."""

    where: str
    tables: frozenset[str]


# Strict mode's findings, for the test that made them (tests/conftest.py reads and clears it).
VIOLATIONS: list[Violation] = []


def unexplained(state: observe.Scope) -> frozenset[str]:
    """The tables ``state`` changed with no audit event beside them (short names)."""
    prefix = get_settings().table_name("")
    written = {name.removeprefix(prefix) for name in state.written}
    if TABLE in written:
        return frozenset()
    return frozenset(written - BOOKKEEPING)


def hold(state: observe.Scope, where: str) -> None:
    """Report a change that recorded no event (``where``: the route or the message kind)."""
    tables = unexplained(state)
    if not tables:
        return
    observe.emit(
        log,
        logging.ERROR,
        "unexplained change: state changed with no audit event",
        {"where": where, "tables": sorted(tables)},
    )
    if os.environ.get(STRICT_SWITCH) == "1":
        VIOLATIONS.append(Violation(where, tables))
