"""The upload pipeline every artifact type runs through (module archives, provider
signatures and archives, and the next type): an upload event in, one outcome out.

``run`` takes one upload of a type (an ``Upload``: what it is, which objects it needs, its
checks, how it records its outcome) through the same stages:

1. ``wanted``: which objects to read, each with its size limit (the type may refuse here,
   before reading anything);
2. fetch: each object read once under its limit (``objects.fetch``): over the limit is a
   refusal, a missing object ends the run ``gone`` (another delivery did the work, or the
   item was deleted);
3. ``check``: the type's own checks on the bytes, which refuse with a reason or return what
   the type keeps;
4. ``STAGES``: the checks every artifact gets whatever its type (a scan, say), on the same
   bytes: add one there and every type runs it;
5. ``accept`` or ``refuse``: the type records the status it shows (``VersionStatus``) and
   what it serves, or the refusal and its reason;
6. ``report``: one log line and, for a final outcome, a count in the type's metric.

What is the upload's fault is refused, never retried: a reason for the publisher, bounded
(``Refused``). Failures of S3 or DynamoDB themselves propagate, so SQS delivers the event
again, and every stage is safe to run twice. A third artifact type writes only its
``Upload``: its keys, its limits, its checks and its two records.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Protocol, TypeVar

from chalicelib.artifacts import objects
from chalicelib.artifacts.objects import Fetched
from chalicelib.core import observe

# A reason is kept on the item (and a module's version on its module item): DynamoDB items
# are at most 400 KB.
MAX_REASON = 500


class Outcome(StrEnum):
    """What became of one upload (for the log, the metric and the caller). ``OK``, ``HELD``,
    ``VERIFIED`` and ``FAILED`` are final and counted; the others are retries and races."""

    OK = "ok"  # a module version was published
    HELD = "held"  # a module version was accepted, held back until its scan (trust.policy)
    VERIFIED = "verified"  # a provider version's signature or platform's archive checked
    FAILED = "failed"  # refused, with its reason on the item
    GONE = "gone"  # the object or the item went meanwhile: nothing left to do
    STALE = "stale"  # the item changed meanwhile (deleted, re-created): nothing written
    SUPERSEDED = "superseded"  # a newer upload replaced the object: its own event checks it
    ALREADY_OK = "already-ok"  # a published module version ignores a late re-upload
    WAITING = "waiting"  # the rest of what is checked together has not arrived yet
    IGNORED = "ignored"  # not an upload of a known item


COUNTED = frozenset({Outcome.OK, Outcome.HELD, Outcome.VERIFIED, Outcome.FAILED})


class Refused(Exception):
    """The upload is refused: ``reason`` is for the publisher (valid UTF-8 whatever the bytes
    held, at most ``MAX_REASON`` characters); ``unexpected`` describes an exception nobody
    foresaw, for the log only."""

    def __init__(self, reason: str, unexpected: str = "") -> None:
        reason = reason.encode("utf-8", "backslashreplace").decode("utf-8")
        if len(reason) > MAX_REASON:
            reason = reason[: MAX_REASON - 1] + "\u2026"
        super().__init__(reason)
        self.reason = reason
        self.unexpected = unexpected


@contextmanager
def unforeseen(
    failure: str, hint: str = "", retried: tuple[type[Exception], ...] = ()
) -> Iterator[None]:
    """Around a parser reading the upload's bytes: any exception it raises but ``Refused`` (a
    parser bug hit by hostile bytes) is a refusal too, ``"<failure> (unexpected <type>)
    <hint>"``, its detail logged. Keep reads of S3 or DynamoDB outside, or name what they
    raise in ``retried``: those propagate, and the event is delivered again."""
    passing: tuple[type[Exception], ...] = (Refused, *retried)
    try:
        yield
    except passing:
        raise
    except Exception as exc:
        name = type(exc).__name__
        raise Refused(
            f"{failure} (unexpected {name}){hint}", unexpected=f"{name}: {str(exc)[:200]!r}"
        ) from None


@dataclass(frozen=True)
class Subject:
    """Whom an outcome is reported about: one line in ``log`` (``label: outcome``, with
    ``fields`` for queries) and, for a final outcome, one count in ``metric`` by Outcome."""

    log: logging.Logger
    metric: str
    label: str
    fields: Mapping[str, Any] = field(default_factory=dict)


def report(subject: Subject, outcome: str, reason: str = "", unexpected: str = "") -> str:
    """Log the outcome (a warning when something unforeseen happened); returns it."""
    fields: dict[str, Any] = {"outcome": str(outcome), **subject.fields}
    if reason:
        fields["reason"] = reason
    if unexpected:
        fields["unexpected"] = unexpected
    message = f"{subject.label}: {outcome}" + (f": {reason}" if reason else "")
    message += f" [{unexpected}]" if unexpected else ""
    counted = outcome in COUNTED
    metrics = [observe.Metric(subject.metric, dimensions={"Outcome": str(outcome)})]
    level = logging.WARNING if unexpected else logging.INFO
    observe.emit(subject.log, level, message, fields, metrics if counted else ())
    return str(outcome)


@dataclass(frozen=True)
class Wanted:
    """An object an upload's checks read: its key, its size limit, and how a refusal names
    it (``"the archive"``, ``"SHA256SUMS"``)."""

    key: str
    limit: int
    what: str


Result = TypeVar("Result")


class Upload(Protocol[Result]):
    """One upload of an artifact type, as ``run`` takes it through the stages."""

    @property
    def subject(self) -> Subject: ...

    def wanted(self) -> Sequence[Wanted]:
        """The objects to read (``Refused`` to refuse before reading any)."""

    def check(self, files: Sequence[Fetched]) -> Result:
        """The type's checks on the objects' bytes (in ``wanted``'s order): ``Refused``, or
        what ``accept`` records."""

    def accept(self, result: Result) -> str:
        """Record the upload as accepted; returns the outcome (``OK``/``HELD``/``VERIFIED``, or
        ``GONE``/``STALE``/``SUPERSEDED`` when the item or object changed meanwhile).
        ``Refused`` turns it into a refusal."""

    def refuse(self, reason: str) -> None:
        """Record the refusal and its reason (and stop serving what it replaced)."""


# The checks every artifact gets after its type's own, on the same bytes: each takes the
# upload and the objects read, and raises ``Refused`` (e.g. a malware scan).
Stage = Callable[[Upload[Any], Sequence[Fetched]], None]
STAGES: list[Stage] = []


def run(upload: Upload[Result]) -> str:
    """Take one upload through the stages; returns (and reports) its outcome."""
    try:
        with _fetched(upload.wanted()) as files:
            result = upload.check(files)
            for stage in STAGES:
                stage(upload, files)
        outcome = upload.accept(result)
    except objects.Gone:
        return report(upload.subject, Outcome.GONE)
    except Refused as refused:
        upload.refuse(refused.reason)
        return report(upload.subject, Outcome.FAILED, refused.reason, refused.unexpected)
    return report(upload.subject, outcome)


@contextmanager
def _fetched(wanted: Sequence[Wanted]) -> Iterator[list[Fetched]]:
    with ExitStack() as stack:
        files = []
        for want in wanted:
            try:
                files.append(stack.enter_context(objects.fetch(want.key, want.limit)))
            except objects.TooLarge as large:
                raise Refused(_too_large(want.what, large)) from None
        yield files


def read_small(want: Wanted) -> bytes:
    """One object's bytes under its limit, outside a run: ``Refused`` over the limit,
    ``objects.Gone`` when it is not there."""
    try:
        with objects.fetch(want.key, want.limit) as found:
            return found.read()
    except objects.TooLarge as large:
        raise Refused(_too_large(want.what, large)) from None


def _too_large(what: str, large: objects.TooLarge) -> str:
    if large.size is None:
        return f"{what} is over the limit of {large.limit} bytes"
    return f"{what} is {large.size} bytes, over the limit of {large.limit} bytes"
