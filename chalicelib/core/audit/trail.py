"""What the rest of the registry calls: record an event with its change, and read the trail.

``record_in(tx, event)`` adds the event to the change's own ``TransactWrite``, so the change
and its event succeed or fail together (a cancelled transaction writes neither). Added last,
it is the transaction's last item (``store.put_in``): the change's own items keep their
places in a cancellation's reasons. ``record(event)`` writes an event alone, for a change
that is one write elsewhere (make that write a transaction with ``record_in`` where it can
be one).

``changed(before, after)``: which settings changed, by name only (a settings event lists the
attributes, never their values: some are secrets).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from datetime import datetime
from typing import TYPE_CHECKING, Any

from chalicelib.core.audit import store
from chalicelib.core.audit.events import Event

if TYPE_CHECKING:
    from pynamodb.transactions import TransactWrite

# HCP's default page size, and this registry's largest (a page is one Query of at most 1 MB).
DEFAULT_PAGE_SIZE = 1000
MAX_PAGE_SIZE = 1000


def record_in(tx: TransactWrite, event: Event) -> None:
    """Add ``event`` to ``tx``: written if, and only if, the transaction is."""
    store.put_in(tx, event)


def record(event: Event) -> None:
    """Write ``event`` on its own (one PutItem)."""
    store.put(event)


def changed(before: Mapping[str, Any], after: Mapping[str, Any]) -> list[str]:
    """The names of the attributes whose values differ (sorted), never the values."""
    return sorted(k for k in set(before) | set(after) if before.get(k) != after.get(k))


def read_page(
    organization: str | None, since: datetime | None, number: int, size: int
) -> tuple[list[dict[str, Any]], int]:
    """A page of the organization's events (None: the site-wide ones), oldest first, and the
    count of events after ``since`` (``store.read_page``)."""
    return store.read_page(organization, since, number, size)


def about(
    organization: str | None, resource_id: str, start: datetime, *, forward: bool, pages: int
) -> Iterator[dict[str, Any]]:
    """One resource's events from ``start`` on, a bounded read (``store.about``; ``END``
    after the last when it read the whole range)."""
    return store.about(organization, resource_id, start, forward=forward, pages=pages)


END = store.END
