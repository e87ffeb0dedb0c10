"""The Transfers function: the transfers queue's jobs (``artifacts.queue.transfer``), one at a
time: bundle exports and imports (``bundles.jobs``) and the module cache's background
fetches (``modules.cache.service.fetch_queued``).

Its own Lambda (15 minutes, disk for what it moves), apart from the Ingest function (two
minutes, which writes what uploads become): a job that moves gigabytes neither shares
Ingest's time bound nor needs its grants, and Ingest no longer needs a bundle's.
``infrastructure.template`` makes it whole (Chalice packages only ``app.py``'s handlers) and
subscribes it to its queue; the local stack's poller calls ``handle_body`` as the Lambda does.

An export watches the time it has left (Lambda's ``get_remaining_time_in_millis``): with less
than ``RESERVE_MS`` left after a part, it stops and queues itself again, to go on from that
part (``bundles.jobs``).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from typing import Any

from chalicelib.artifacts import queue
from chalicelib.core import observe
from chalicelib.core.audit import check

log = logging.getLogger("registry.consumer")

# What an export keeps in hand when it stops: the next part's objects (one archive fetched
# and spooled, up to REGISTRY_MAX_ARCHIVE_BYTES or a provider's), its upload, saving the job.
RESERVE_MS = 120_000


def budget(context: Any) -> Callable[[int], bool]:
    """Whether a job should stop after a part: less than ``RESERVE_MS`` left to this call."""
    return lambda parts: int(context.get_remaining_time_in_millis()) < RESERVE_MS


def handle_body(body: str, stop: Callable[[int], bool] | None = None) -> object:
    """One transfers job in its own scope (``stop``: told the parts written so far by this
    run, whether to stop now; None, as the local stack runs it: the job runs to its end). An
    exception is logged with its trace and raised again, so that SQS delivers the job again
    (an export found running resumes)."""
    observe.configure()
    with observe.scope() as state:
        try:
            return _run(body, stop)
        except Exception:
            log.exception("transfers job failed; SQS will deliver it again")
            raise
        finally:
            check.hold(state, "transfers job")


def _run(body: str, stop: Callable[[int], bool] | None) -> object:
    try:
        job = json.loads(body)
    except ValueError:
        job = None
    if not isinstance(job, dict) or job.get("kind") not in queue.TRANSFER_KINDS:
        log.warning("ignoring a message of the transfers queue that is no transfers job")
        return None
    if job["kind"] == queue.MODULE_CACHE_FETCH:
        from chalicelib.modules.cache import service

        return service.fetch_queued(str(job.get("address") or ""), str(job.get("version") or ""))
    from chalicelib.bundles import jobs

    return jobs.run(job, stop or jobs.never)  # logs its outcome


def handler(event: dict[str, Any], context: Any) -> None:
    """Lambda's entry point for the transfers queue (batches of one)."""
    for record in event.get("Records") or []:
        handle_body(record.get("body") or "", budget(context))
