"""What an operator reads: one JSON log line per request and per ingest or publishing outcome,
CloudWatch metrics in the same lines, and the DynamoDB calls each request made.

The formats are those AWS Lambda Powertools' ``Logger`` and ``Metrics`` write (one JSON
object per line; metrics as CloudWatch Embedded Metric Format, which CloudWatch Logs turns
into metrics with no API call), written with the standard library: Powertools' import costs
about 25 ms of every cold start (its Logger pulls in jmespath and uuid), a fifth of the bare
import the functions are held to (see README, "Operating it").

- ``scope()``: the per-request (or per-message) state: request id, DynamoDB calls counted.
- ``count_dynamodb_calls()``: a ``before-call.dynamodb`` handler on every botocore client
  made afterwards (PynamoDB's and boto3's), counting into the current scope.
- ``emit()``: one structured log record, with optional metrics (EMF) in the same line.
- ``configure()``: in Lambda, the ``registry`` loggers write JSON lines to stdout.
- ``ReadableFormatter``: ``make run``'s short lines (``GET /path 200 12 ms 3 calls``).

Never log a token, secret, cookie, Authorization header or presigned URL: fields are ids and
route templates; ``scrub`` strips query strings and bearer tokens from anything formatted, as
a last guard.
"""

from __future__ import annotations

import contextvars
import json
import logging
import os
import re
import sys
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import cache
from typing import Any

NAMESPACE = "TfeModuleRegistry"
REQUEST_LOGGER = "registry.request"
# `make run` and the end-to-end stack: REGISTRY_ACCESS_LOG=0 leaves the request lines out.
ACCESS_LOG_SWITCH = "REGISTRY_ACCESS_LOG"

request_log = logging.getLogger(REQUEST_LOGGER)


@dataclass
class Scope:
    """One request's (or one queue message's) observations."""

    request_id: str
    dynamodb_calls: int = 0
    principal_kind: str | None = None
    principal_id: str | None = None
    # Where the request came from, as the audit trail records it (``chalicelib.audit``):
    # API Gateway's source address and the User-Agent header, unbounded here (the event
    # bounds them before it is written).
    source_address: str | None = None
    user_agent: str | None = None
    # The tables this scope changed (full names; writes DynamoDB accepted, outside
    # ``bookkeeping``) and how many audit events it recorded: every change records one
    # (``core.audit.check`` holds a scope to that).
    written: set[str] = field(default_factory=set)
    events: int = 0
    bookkeeping: int = 0


_current: contextvars.ContextVar[Scope | None] = contextvars.ContextVar("scope", default=None)


def current() -> Scope | None:
    return _current.get()


_base_factory = logging.getLogRecordFactory()


def _record_with_request_id(*args: Any, **kwargs: Any) -> logging.LogRecord:
    """Every record made in a scope carries its request id (as Powertools' Logger injects the
    Lambda context), whoever logs it and whenever it is formatted."""
    record = _base_factory(*args, **kwargs)
    state = _current.get()
    if state is not None:
        record.request_id = state.request_id
    return record


logging.setLogRecordFactory(_record_with_request_id)


def new_request_id() -> str:
    """A local request id (API Gateway and Lambda give theirs in AWS). ``os.urandom`` rather
    than ``uuid``: importing uuid costs about 9 ms of a cold start."""
    return os.urandom(16).hex()


@contextmanager
def scope(request_id: str | None = None) -> Iterator[Scope]:
    state = Scope(request_id or new_request_id())
    token = _current.set(state)
    try:
        yield state
    finally:
        _current.reset(token)


def note_event() -> None:
    """An audit event was recorded (or added to a transaction that was written) in this scope."""
    state = _current.get()
    if state is not None:
        state.events += 1


@contextmanager
def bookkeeping() -> Iterator[None]:
    """Writes that are no one's change (a token's last use, a counter, a cache): they need no
    audit event."""
    state = _current.get()
    if state is not None:
        state.bookkeeping += 1
    try:
        yield
    finally:
        if state is not None:
            state.bookkeeping -= 1


def note_principal(kind: str, principal_id: str) -> None:
    """Who called (kind and id, never the token), for the request's line."""
    state = _current.get()
    if state is not None:
        state.principal_kind, state.principal_id = kind, principal_id


# ----- DynamoDB calls ------------------------------------------------------------------------


def _count_call(**_: Any) -> None:
    state = _current.get()
    if state is not None:
        state.dynamodb_calls += 1


_WRITES = ("PutItem", "UpdateItem", "DeleteItem")
_TABLES = "registry_tables"


def _note_tables(params: Mapping[str, Any], model: Any, context: dict[str, Any], **_: Any) -> None:
    """Before a write is sent: the tables it writes, kept in the call's context until DynamoDB
    answers (``_note_written``)."""
    state = _current.get()
    if state is None or state.bookkeeping:
        return
    name = model.name
    if name in _WRITES:
        tables = {params.get("TableName", "")}
    elif name == "TransactWriteItems":
        tables = {
            part["TableName"]
            for item in params.get("TransactItems", ())
            for kind, part in item.items()
            if kind != "ConditionCheck"
        }
    elif name == "BatchWriteItem":
        tables = set(params.get("RequestItems", {}))
    else:
        return
    context[_TABLES] = tables


def _note_written(http_response: Any, context: dict[str, Any], **_: Any) -> None:
    tables = context.get(_TABLES)
    state = _current.get()
    if tables and state is not None and getattr(http_response, "status_code", 500) < 300:
        state.written |= tables


_HOOK = ("before-call.dynamodb", _count_call)
_WRITE_HOOKS = (
    ("before-parameter-build.dynamodb", _note_tables),
    ("after-call.dynamodb", _note_written),
)


def count_dynamodb_calls() -> None:
    """Count every DynamoDB API call into the current scope (retries are one call).

    PynamoDB makes its own botocore sessions and clients (one per connection and thread), so
    the handler is added to botocore's built-in handlers, which every new session registers on
    the clients it creates (moto's mock hooks botocore the same way). Call it before the first
    client is made: ``core.db`` does, at import."""
    from botocore import handlers  # loaded already: PynamoDB imports botocore.session

    for hook in (_HOOK, *_WRITE_HOOKS):
        if hook not in handlers.BUILTIN_HANDLERS:
            handlers.BUILTIN_HANDLERS.append(hook)


# ----- records and metrics -------------------------------------------------------------------


@dataclass(frozen=True)
class Metric:
    """One CloudWatch metric value with its dimensions (name -> value)."""

    name: str
    value: float = 1
    unit: str = "Count"
    dimensions: Mapping[str, str] = field(default_factory=dict)


def emf(metrics: Sequence[Metric], timestamp_ms: int | None = None) -> dict[str, Any]:
    """The Embedded Metric Format members of a log line carrying ``metrics``: the ``_aws``
    directive plus each metric's value and dimension values at the top level. Metrics of the
    same line share the top level, so their dimension values must not disagree."""
    directives: list[dict[str, Any]] = []
    members: dict[str, Any] = {}
    for metric in metrics:
        for key, value in metric.dimensions.items():
            assert members.get(key, value) == value, f"dimension {key} differs in one line"
            members[key] = value
        members[metric.name] = metric.value
        directives.append(
            {
                "Namespace": NAMESPACE,
                "Dimensions": [sorted(metric.dimensions)],
                "Metrics": [{"Name": metric.name, "Unit": metric.unit}],
            }
        )
    timestamp = timestamp_ms if timestamp_ms is not None else int(time.time() * 1000)
    return {"_aws": {"Timestamp": timestamp, "CloudWatchMetrics": directives}, **members}


def emit(
    logger: logging.Logger,
    level: int,
    message: str,
    fields: Mapping[str, Any],
    metrics: Sequence[Metric] = (),
    *,
    readable: str | None = None,
    exc_info: bool = False,
) -> None:
    """One record: ``message`` for people, ``fields`` for queries, ``metrics`` for CloudWatch
    (written in the same JSON line), ``readable`` for ``make run`` (default: ``message``)."""
    logger.log(
        level,
        message,
        exc_info=exc_info or None,
        extra={"fields": dict(fields), "metrics": tuple(metrics), "readable": readable},
    )


def status_class(status: int) -> str:
    return f"{status // 100}xx"


def access_log_on() -> bool:
    return os.environ.get(ACCESS_LOG_SWITCH, "1") != "0"


# ----- what must never be logged -------------------------------------------------------------

# The query string of any URL (presigned links carry X-Amz-Signature and credentials there),
# bearer tokens, and header lines of Authorization and Cookie. Compiled on first use: four
# patterns cost about 2 ms of a cold start.
_PATTERNS = (
    (r"(\bhttps?://[^\s?#\"'<>]*)\?[^\s\"'<>]*", r"\1?(query removed)"),
    (r"(?i)X-Amz-(Signature|Credential|Security-Token)=[^\s&\"']+", r"X-Amz-\1=(removed)"),
    (r"(?i)\b(bearer|token)\s+[A-Za-z0-9._~+/=-]{8,}", r"\1 (removed)"),
    (r"(?i)\b(authorization|cookie|set-cookie)(['\"]?\s*[:=]\s*)[^\n,}]+", r"\1\2(removed)"),
)


@cache
def _compiled() -> tuple[tuple[re.Pattern[str], str], ...]:
    return tuple((re.compile(pattern), replacement) for pattern, replacement in _PATTERNS)


def scrub(text: str) -> str:
    """``text`` without URL query strings, bearer tokens, Authorization or Cookie values."""
    for pattern, replacement in _compiled():
        text = pattern.sub(replacement, text)
    return text


def strip_query(url: str) -> str:
    return url.split("?", 1)[0].split("#", 1)[0]


# ----- formatting ----------------------------------------------------------------------------


class JsonFormatter(logging.Formatter):
    """One JSON object per record, as Powertools' Logger writes it: level, logger, message,
    timestamp, the request id of the current scope, the record's fields, the exception's trace;
    the record's metrics as EMF members of the same object."""

    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, Any] = {
            "level": record.levelname,
            "logger": record.name,
            "message": scrub(record.getMessage()),
            "timestamp": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created))
            + f".{int(record.msecs):03d}Z",
        }
        request_id = getattr(record, "request_id", None)
        if request_id:
            line["request_id"] = request_id
        line.update(getattr(record, "fields", None) or {})
        if record.exc_info:
            line["exception"] = scrub(self.formatException(record.exc_info))
            line["exception_name"] = getattr(record.exc_info[0], "__name__", "")
        metrics = getattr(record, "metrics", None)
        if metrics:
            line.update(emf(metrics, int(record.created * 1000)))
        return json.dumps(line, default=str, separators=(",", ":"))


class ReadableFormatter(logging.Formatter):
    """``make run``: a request is one short line (``GET /path 200 12 ms 3 calls``); other
    records keep the usual ``time logger message`` form. Scrubbed like the JSON lines."""

    def __init__(self) -> None:
        super().__init__("%(asctime)s %(name)s %(message)s")

    def format(self, record: logging.LogRecord) -> str:
        readable = getattr(record, "readable", None)
        if readable is not None and not record.exc_info:
            return scrub(readable)
        return scrub(super().format(record))


_configured = False


def configure(stream: Any = None) -> None:
    """In Lambda (or when a stream is given): the ``registry`` loggers write JSON lines to
    stdout at INFO, and not through the runtime's root handler (no line twice). Elsewhere the
    host configures logging (``make run``: infrastructure/local.py; tests: pytest)."""
    global _configured
    if _configured or (stream is None and not os.environ.get("AWS_LAMBDA_FUNCTION_NAME")):
        return
    handler = logging.StreamHandler(stream or sys.stdout)
    handler.setFormatter(JsonFormatter())
    registry = logging.getLogger("registry")
    registry.handlers = [handler]
    registry.setLevel(logging.INFO)
    registry.propagate = False
    _configured = True
