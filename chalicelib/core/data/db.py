"""PynamoDB plumbing: table names, region and endpoint come from the settings."""

from __future__ import annotations

from functools import cache
from typing import Any, cast

from pynamodb.connection import Connection
from pynamodb.exceptions import TableDoesNotExist, TransactWriteError
from pynamodb.models import MetaProtocol
from pynamodb.models import Model as Model  # re-exported: every model subclasses db.Model

from chalicelib.core import observe
from chalicelib.core.settings import get_settings

# Every request's line counts its DynamoDB calls: hooked before PynamoDB makes a client.
observe.count_dynamodb_calls()


def share_botocore_loader() -> None:
    """PynamoDB makes a botocore session per connection (one per model and thread), and each
    new session parses botocore's JSON (endpoints, DynamoDB's service model) again: about
    0.1 s of CPU per model, 5 s for the local stack's or the tests' table creation, the same
    on a cold Lambda as each model is first used. The sessions PynamoDB makes share one data
    loader, which keeps what it parsed (read-only data; credentials and handlers stay per
    session)."""
    from botocore import loaders
    from botocore import session as botocore_session
    from pynamodb.connection import base

    if getattr(base.get_session, "shares_loader", False):
        return
    loader = loaders.create_loader()

    def get_session(env_vars: Any = None) -> botocore_session.Session:
        session = botocore_session.Session(env_vars)
        session.register_component("data_loader", loader)
        return session

    get_session.shares_loader = True  # type: ignore[attr-defined]
    base.get_session = get_session  # PynamoDB's Connection.session calls it


share_botocore_loader()

# Every model of every domain registers here so the local runner, the tests and the
# infrastructure generator create exactly the same tables.
MODELS: list[type[Model]] = []


def table(short_name: str, stream: str | None = None) -> MetaProtocol:
    """A PynamoDB ``Meta`` class for the table ``<prefix><short_name>`` (a ``MetaProtocol``
    once the model class is made: PynamoDB sets the settings it leaves out). ``stream``: the
    view type of the table's DynamoDB Stream (e.g. ``NEW_IMAGE``), None for no stream."""
    settings = get_settings()

    class Meta:
        table_name = settings.table_name(short_name)
        region = settings.region
        host = settings.aws_endpoint_url
        billing_mode = "PAY_PER_REQUEST"

    if stream:
        Meta.stream_view_type = stream  # type: ignore[attr-defined]  # PynamoDB reads it
    return cast("MetaProtocol", Meta)


def stream_view_type(model: type[Model]) -> str | None:
    """The view type of the model's table stream, None when it has none."""
    return getattr(model.Meta, "stream_view_type", None)


def register(model: type[Model]) -> type[Model]:
    MODELS.append(model)
    return model


def create_tables() -> None:
    """Create every table, and every index and stream a kept table (the local stack's
    restored state) lacks, as a CloudFormation update adds them: one DescribeTable each."""
    for model in MODELS:
        try:
            described = model._get_connection().connection.describe_table(model.Meta.table_name)
        except TableDoesNotExist:
            model.create_table(billing_mode="PAY_PER_REQUEST", wait=True)
            continue
        _add_missing_indexes(model, described)
        _add_missing_stream(model, described)


def _add_missing_stream(model: type[Model], described: dict[str, Any]) -> None:
    view = stream_view_type(model)
    if view is None:
        return
    client = model._get_connection().connection.client
    if described.get("StreamSpecification", {}).get("StreamEnabled"):
        return
    client.update_table(
        TableName=model.Meta.table_name,
        StreamSpecification={"StreamEnabled": True, "StreamViewType": view},
    )


def _add_missing_indexes(model: type[Model], described: dict[str, Any]) -> None:
    schema = model._get_schema()
    wanted = schema.get("global_secondary_indexes", [])
    if not wanted:
        return
    connection = model._get_connection().connection
    present = {index["IndexName"] for index in described.get("GlobalSecondaryIndexes", [])}
    for index in wanted:
        if index["index_name"] in present:
            continue
        names = {key["AttributeName"] for key in index["key_schema"]}
        client = connection.client
        client.update_table(
            TableName=model.Meta.table_name,
            AttributeDefinitions=[
                d for d in schema["attribute_definitions"] if d["AttributeName"] in names
            ],
            GlobalSecondaryIndexUpdates=[
                {
                    "Create": {
                        "IndexName": index["index_name"],
                        "KeySchema": [
                            {"AttributeName": k["AttributeName"], "KeyType": k["KeyType"]}
                            for k in index["key_schema"]
                        ],
                        "Projection": index["projection"],
                    }
                }
            ],
        )


# The code a cancelled transaction reports for an item whose condition failed.
TRANSACTION_CONDITION_FAILED = "ConditionalCheckFailed"


def connection() -> Connection:
    """A low-level connection for TransactWrite, on the same region and endpoint as models.

    Kept per process: a new Connection builds a new botocore client (~100 ms of loading
    service models), which every transactional request would otherwise pay."""
    settings = get_settings()
    return _connection(settings.region, settings.aws_endpoint_url)


@cache
def _connection(region: str, host: str | None) -> Connection:
    return Connection(region=region, host=host)


def error_code(exc: Exception) -> str | None:
    """A failed DynamoDB call's error code: PynamoDB's errors carry it as
    ``cause_response_code``; the low-level calls (``connection().dispatch``) raise botocore's
    ``ClientError``, which carries it in its response."""
    code = getattr(exc, "cause_response_code", None)
    if code is None:
        response = getattr(exc, "response", None)
        if isinstance(response, dict):
            code = response.get("Error", {}).get("Code")
    return str(code) if code is not None else None


def conditional_failure(exc: Exception) -> bool:
    """Whether a PutItem/UpdateItem/DeleteItem failed only because its condition was false."""
    return error_code(exc) == "ConditionalCheckFailedException"


def cancellation_codes(exc: TransactWriteError) -> list[str | None]:
    """Why each item of a cancelled transaction failed, in the order the items were sent."""
    return [r.code if r else None for r in (exc.cancellation_reasons or [])]


def get_together(*wanted: tuple[type[Model], Any, Any]) -> list[Any]:
    """Items of different tables read in one BatchGetItem, as ``Model.get`` reads one each
    (eventually consistent): one per ``(model, hash_key, range_key)`` (``range_key`` None
    for a table without one), ``None`` where there is no such item. For a hot path that
    knows several keys at once; at most 100 keys."""
    if len(wanted) == 1:  # one item: a plain GetItem
        model, hash_key, range_key = wanted[0]
        try:
            return [model.get(hash_key, range_key)]
        except model.DoesNotExist:
            return [None]
    request: dict[str, dict[str, Any]] = {}
    for model, hash_key, range_key in wanted:
        keys = request.setdefault(model.Meta.table_name, {"Keys": []})["Keys"]
        keys.append(_wire_key(model, hash_key, range_key))
    found: dict[tuple[str, str], dict[str, Any]] = {}
    while request:
        answer = connection().dispatch("BatchGetItem", {"RequestItems": request})
        for table, items in answer.get("Responses", {}).items():
            for item in items:
                found[(table, _key_text(table, item, wanted))] = item
        request = answer.get("UnprocessedKeys") or {}  # throttled: asked again
    out = []
    for model, hash_key, range_key in wanted:
        table = model.Meta.table_name
        raw = found.get((table, _key_text(table, _wire_key(model, hash_key, range_key), wanted)))
        out.append(model.from_raw_data(raw) if raw is not None else None)
    return out


def _wire_key(model: type[Model], hash_key: Any, range_key: Any) -> dict[str, Any]:
    key = {}
    for attribute, value in (
        (model._hash_key_attribute(), hash_key),
        (model._range_key_attribute(), range_key),
    ):
        if attribute is not None:
            key[attribute.attr_name] = {attribute.attr_type: attribute.serialize(value)}
    return key


def _key_text(table: str, item: dict[str, Any], wanted: Any) -> str:
    """The key attributes of ``item`` (of ``table``'s model) as a comparable string."""
    model = next(m for m, _, _ in wanted if m.Meta.table_name == table)
    names = [a.attr_name for a in (model._hash_key_attribute(), model._range_key_attribute()) if a]
    return repr([item[name] for name in names])
