"""The no-code module's request body, named by path by the routes (pydantic loads with the
first request that sends one)."""

from __future__ import annotations

from chalicelib.core.api.attributes import Attributes, Version


class NoCodeAttributes(Attributes):
    version_pin: Version | None = None
    enabled: bool | None = None
