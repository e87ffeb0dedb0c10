"""PynamoDB plumbing: table names, region and endpoint come from the settings."""

from __future__ import annotations

from typing import Any

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
    for model in MODELS:
        if not model.exists():
            model.create_table(billing_mode="PAY_PER_REQUEST", wait=True)


def table_definitions() -> list[dict[str, Any]]:
    """The CreateTable arguments of every registered model (for infrastructure)."""
    return [{"TableName": model.Meta.table_name, **model._get_schema()} for model in MODELS]
