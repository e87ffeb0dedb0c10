"""A notification configuration's request body (the type of its handlers' body parameter).

The bounds a request's strings and arrays may not pass are here (refused with a 422
before anything is read); what the values must be is the service's."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from chalicelib.core.api.attributes import Attributes, Email, Identifier, Url
from chalicelib.notifications.service import (
    MAX_EMAIL_ADDRESSES,
    MAX_NAME,
    MAX_TOKEN,
    MAX_TRIGGERS,
)

Token = Annotated[str, Field(max_length=MAX_TOKEN)]
ConfigurationName = Annotated[str, Field(max_length=MAX_NAME)]


class ConfigurationBody(Attributes):
    """Attributes of a notification configuration (go-tfe's create and update options);
    the email destination's users come as ``relationships.users``."""

    name: ConfigurationName | None = None
    destination_type: Identifier | None = None
    enabled: bool | None = None
    url: Url | None = None
    token: Token | None = None
    triggers: Annotated[list[Identifier], Field(max_length=MAX_TRIGGERS)] | None = None
    email_addresses: Annotated[list[Email], Field(max_length=MAX_EMAIL_ADDRESSES)] | None = None
