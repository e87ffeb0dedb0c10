"""A project's request body (the type of its handlers' body parameter)."""

from __future__ import annotations

from chalicelib.core.api.attributes import Attributes, Description, Identifier, Name


class ProjectBody(Attributes):
    """Attributes of a project; tag bindings come as ``relationships.tag-bindings``."""

    name: Name | None = None
    description: Description | None = None
    default_execution_mode: Identifier | None = None
    auto_destroy_activity_duration: Identifier | None = None
