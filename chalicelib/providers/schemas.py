"""Request bodies of the provider registry's routes, named by path from the routes (so
pydantic loads with the first request that sends one)."""

from __future__ import annotations

from pydantic import Field

from chalicelib.core.api.attributes import Attributes
from chalicelib.providers.service import MAX_PROTOCOLS


class CreateGpgKey(Attributes):
    namespace: str | None = None
    ascii_armor: str | None = None


class UpdateGpgKey(Attributes):
    namespace: str | None = None


class CreateProvider(Attributes):
    name: str | None = None
    namespace: str | None = None
    registry_name: str | None = None


class UpdateProvider(Attributes):
    """A provider's PATCH has no attributes of its own: its tag bindings are a
    relationship (``core.tagbindings.from_relationship``)."""


class CreateVersion(Attributes):
    version: str | None = None
    key_id: str | None = None
    protocols: list[str] | None = Field(default=None, max_length=MAX_PROTOCOLS)


class CreatePlatform(Attributes):
    os: str | None = None
    arch: str | None = None
    shasum: str | None = None
    filename: str | None = None
