"""PynamoDB plumbing: table names, region and endpoint come from the settings."""

from __future__ import annotations

from functools import cache

from pynamodb.connection import Connection
from pynamodb.exceptions import TransactWriteError
from pynamodb.models import Model

from chalicelib.core.settings import get_settings

# Every model of every domain registers here so the local runner, the tests and the
# infrastructure generator create exactly the same tables.
MODELS: list[type[Model]] = []


def table(short_name: str) -> type:
    """A PynamoDB ``Meta`` class for the table ``<prefix><short_name>``."""
    settings = get_settings()

    class Meta:
        table_name = settings.table_name(short_name)
        region = settings.region
        host = settings.aws_endpoint_url
        billing_mode = "PAY_PER_REQUEST"

    return Meta


def register(model: type[Model]) -> type[Model]:
    MODELS.append(model)
    return model


def create_tables() -> None:
    """Create every table, and every index a kept table (the local stack's restored state)
    lacks, as a CloudFormation update adds it."""
    for model in MODELS:
        if not model.exists():
            model.create_table(billing_mode="PAY_PER_REQUEST", wait=True)
        else:
            _add_missing_indexes(model)


def _add_missing_indexes(model: type[Model]) -> None:
    schema = model._get_schema()
    wanted = schema.get("global_secondary_indexes", [])
    if not wanted:
        return
    connection = model._get_connection().connection
    described = connection.describe_table(model.Meta.table_name)
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


def conditional_failure(exc: Exception) -> bool:
    """Whether a PutItem/UpdateItem/DeleteItem failed only because its condition was false."""
    return getattr(exc, "cause_response_code", None) == "ConditionalCheckFailedException"


def cancellation_codes(exc: TransactWriteError) -> list[str | None]:
    """Why each item of a cancelled transaction failed, in the order the items were sent."""
    return [r.code if r else None for r in (exc.cancellation_reasons or [])]
