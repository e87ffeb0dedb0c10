"""Request attribute models of the module cache's admin routes (pydantic: loaded with the
first body, ``routes.body_models``)."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from chalicelib.core.api.attributes import Attributes

Name = Annotated[str, Field(max_length=64, pattern=r"^[0-9A-Za-z][0-9A-Za-z_-]{0,63}$")]


class Seed(Attributes):
    namespace: Name
    name: Name
    provider: Name
    version_constraint: Annotated[str, Field(min_length=1, max_length=200)]
