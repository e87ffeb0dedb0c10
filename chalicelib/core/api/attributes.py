"""The base of request attribute models (pydantic), apart from ``chalicelib.core.api.jsonapi``.

Building pydantic models costs about 40 ms of a cold start (pydantic's model machinery and
each model's validator), so only the modules that declare request bodies import this one;
``chalicelib.core.api.jsonapi`` parses documents without it and validates through the model.
"""

from __future__ import annotations

from pydantic import AliasChoices, AliasGenerator, BaseModel, ConfigDict

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
    )


class NoAttributes(Attributes):
    pass
