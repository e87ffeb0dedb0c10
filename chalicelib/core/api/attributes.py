"""The base of request attribute models (pydantic), apart from ``chalicelib.core.api.jsonapi``.

Building pydantic models costs 40 to 60 ms of a cold start (pydantic itself, each model's
class), so the routes import their models for type checking only and load them with a body's
first request (``body_models()``, see ``chalicelib.core.api.http.typed_body``);
``defer_build`` then leaves each model's validator to be built when it is first used.
``chalicelib.core.api.jsonapi`` parses documents without pydantic and validates through the
model.

The string types here are the one place each kind of value gets its bound
(``chalicelib.core.api.bounds``): every string attribute of every request model is one of
them, so the document shows a ``maxLength`` on each (``tests/test_bounds.py`` walks it).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any

from pydantic import (
    AfterValidator,
    AliasChoices,
    AliasGenerator,
    AwareDatetime,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    Strict,
)
from pydantic_core import PydanticCustomError

from chalicelib.core.api import bounds
from chalicelib.core.api.names import kebab


def _aliases(field_name: str) -> AliasChoices:
    return AliasChoices(kebab(field_name), field_name)


class Attributes(BaseModel):
    """Base for request attribute models: kebab or snake names, strict JSON types."""

    model_config = ConfigDict(
        alias_generator=AliasGenerator(validation_alias=_aliases),
        extra="ignore",
        strict=True,
        frozen=True,
        # Each model's validator is built when first used, not when its module is imported.
        defer_build=True,
    )


class NoAttributes(Attributes):
    pass


def _in_bytes(limit: int) -> Callable[[str], str]:
    """A validator: at most ``limit`` bytes in UTF-8 (the character bound comes first)."""

    def check(value: str) -> str:
        if bounds.utf8_length(value) > limit:
            raise PydanticCustomError(
                "string_too_many_bytes",
                "at most {max_length} bytes in UTF-8",
                {"max_length": limit},
            )
        return value

    return check


def _timestamp_text(value: object) -> object:
    """A timestamp's text is at most ``bounds.TIMESTAMP`` characters (checked before parsing)."""
    if isinstance(value, str) and len(value) > bounds.TIMESTAMP:
        raise PydanticCustomError(
            "string_too_long",
            "at most {max_length} characters",
            {"max_length": bounds.TIMESTAMP},
        )
    return value


def _bytes(limit: int) -> tuple[Any, Any]:
    """At most ``limit`` characters and ``limit`` bytes in UTF-8 (the document shows both:
    ``maxLength`` and the extension ``x-max-bytes``)."""
    return (
        Field(max_length=limit, json_schema_extra={"x-max-bytes": limit}),
        AfterValidator(_in_bytes(limit)),
    )


# Values that may end up in a key: bounded in bytes.
Name = Annotated[str, *_bytes(bounds.NAME)]
Version = Annotated[str, *_bytes(bounds.VERSION)]
Identifier = Annotated[str, *_bytes(bounds.IDENTIFIER)]
Email = Annotated[str, *_bytes(bounds.EMAIL)]
# Free text: bounded in characters.
Url = Annotated[str, Field(max_length=bounds.URL)]
Path = Annotated[str, Field(max_length=bounds.PATH)]
Description = Annotated[str, Field(max_length=bounds.DESCRIPTION)]
Text = Annotated[str, Field(max_length=bounds.TEXT)]
Secret = Annotated[str, Field(max_length=bounds.SECRET)]
Key = Annotated[str, Field(max_length=bounds.KEY)]
# An ISO 8601 timestamp with its offset (strict mode would refuse text: JSON has no dates).
Timestamp = Annotated[
    AwareDatetime,
    Strict(False),
    BeforeValidator(_timestamp_text),
    Field(json_schema_extra={"maxLength": bounds.TIMESTAMP}),
]
