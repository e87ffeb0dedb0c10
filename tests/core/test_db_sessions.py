"""PynamoDB's botocore sessions share one data loader (``core.data.db.share_botocore_loader``):
botocore's JSON (DynamoDB's service model, the endpoints) is parsed once per process, not once
per model, which the local stack's start, the tests' table creation and a cold Lambda's
first use of each model paid."""

from __future__ import annotations

from typing import Any

import pytest
from botocore import loaders
from pynamodb.connection import Connection

from chalicelib.core.data import db
from chalicelib.core.settings import get_settings


def test_new_connections_parse_dynamodbs_service_model_at_most_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    parsed: list[str] = []
    load_file = loaders.JSONFileLoader.load_file

    def counting(self: Any, file_path: str) -> Any:
        if "dynamodb" in file_path and file_path.endswith("service-2"):
            parsed.append(file_path)
        return load_file(self, file_path)

    monkeypatch.setattr(loaders.JSONFileLoader, "load_file", counting)
    settings = get_settings()
    connections = [Connection(region=settings.region, host=settings.aws_endpoint_url)]
    connections += [Connection(region=settings.region, host=settings.aws_endpoint_url)]
    connections += [Connection(region=settings.region, host=settings.aws_endpoint_url)]
    clients = [connection.client for connection in connections]

    assert len({id(client) for client in clients}) == 3  # each its own session and client
    assert len(parsed) <= 1
    loaders_used = {id(c.session.get_component("data_loader")) for c in connections}
    assert len(loaders_used) == 1


def test_sharing_is_installed_once() -> None:
    from pynamodb.connection import base

    installed = base.get_session
    db.share_botocore_loader()
    assert base.get_session is installed
