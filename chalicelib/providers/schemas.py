"""Request bodies of the provider registry's routes (the types of their handlers' body
parameters)."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from chalicelib.core.api.attributes import Attributes, Identifier, Name, Version
from chalicelib.providers.gpg import MAX_ARMOR_LENGTH
from chalicelib.providers.service import MAX_PROTOCOLS

# An ASCII-armored public key (``gpg.MAX_ARMOR_LENGTH``: keys with many signatures are long).
Armor = Annotated[str, Field(max_length=MAX_ARMOR_LENGTH)]


class CreateGpgKey(Attributes):
    namespace: Name | None = None
    ascii_armor: Armor | None = None


class UpdateGpgKey(Attributes):
    namespace: Name | None = None


class CreateProvider(Attributes):
    name: Name | None = None
    namespace: Name | None = None
    registry_name: Name | None = None


class UpdateProvider(Attributes):
    """A provider's PATCH has no attributes of its own: its tag bindings are a
    relationship (``core.tagbindings.from_relationship``)."""


class CreateVersion(Attributes):
    version: Version | None = None
    key_id: Identifier | None = None
    protocols: list[Identifier] | None = Field(default=None, max_length=MAX_PROTOCOLS)


class CreatePlatform(Attributes):
    os: Name | None = None
    arch: Name | None = None
    shasum: Identifier | None = None
    filename: Name | None = None
