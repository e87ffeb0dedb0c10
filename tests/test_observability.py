"""What an operator reads: one JSON line per request, ingest and publishing outcomes,
metrics (CloudWatch Embedded Metric Format) and the alarms of the template; and never a
secret in any of it."""

from __future__ import annotations

import json
import logging

import pytest

from chalicelib.core import observe
from tests.conftest import make_org


def request_records(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.name == observe.REQUEST_LOGGER]


def as_json(record: logging.LogRecord) -> dict:
    return json.loads(observe.JsonFormatter().format(record))


def test_one_line_per_request_with_route_principal_and_dynamodb_calls(api, caplog):
    caplog.set_level(logging.INFO)
    make_org(api)
    caplog.clear()
    from bench.reads import counting_reads

    with counting_reads() as reads:
        reply = api.get("/api/v2/organizations/acme")
    assert reply.status == 200
    (record,) = request_records(caplog)
    line = as_json(record)
    print(line)
    assert line["route"] == "/api/v2/organizations/{organization_name}"
    assert line["method"] == "GET"
    assert line["status"] == 200
    assert line["organization"] == "acme"
    assert line["principal_kind"] == "user"
    assert line["dynamodb_calls"] == reads.total_calls > 0
