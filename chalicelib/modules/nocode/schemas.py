"""The no-code module's request body (the type of its handlers' body parameter)."""

from __future__ import annotations

from chalicelib.core.api.attributes import Attributes, Version


class NoCodeAttributes(Attributes):
    version_pin: Version | None = None
    enabled: bool | None = None
