"""A project's request body, named by path by the routes (pydantic loads with the first
request that sends one)."""

from __future__ import annotations

from chalicelib.core.api.attributes import Attributes, Description, Identifier, Name


class ProjectBody(Attributes):
    """Attributes of a project; tag bindings come as ``relationships.tag-bindings``."""

    name: Name | None = None
    description: Description | None = None
    default_execution_mode: Identifier | None = None
    auto_destroy_activity_duration: Identifier | None = None
