"""The bundle routes' request bodies (types and bounds; the service checks the rest)."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from chalicelib.core.api.attributes import Attributes, Identifier, Path, Text

MAX_CHOICES = 100
MAX_PLATFORMS = 50


class ModuleChoice(Attributes):
    # ``<organization>/<namespace>/<name>/<provider>``
    address: Path
    # A version constraint (``>= 1.0, < 2.0``; empty: every release).
    version: Text | None = None


class ProviderChoice(Attributes):
    # ``<organization>/<namespace>/<name>``
    address: Path
    version: Text | None = None
    # ``<os>_<arch>``; none: every verified platform.
    platforms: Annotated[list[Identifier], Field(max_length=MAX_PLATFORMS)] = []


class StartExport(Attributes):
    modules: Annotated[list[ModuleChoice], Field(max_length=MAX_CHOICES)] = []
    providers: Annotated[list[ProviderChoice], Field(max_length=MAX_CHOICES)] = []
