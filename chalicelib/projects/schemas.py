"""A project's request body, named by path by the routes (pydantic loads with the first
request that sends one)."""

from __future__ import annotations

from chalicelib.core.api.attributes import Attributes


class ProjectBody(Attributes):
    """Attributes of a project; tag bindings come as ``relationships.tag-bindings``."""

    name: str | None = None
    description: str | None = None
    default_execution_mode: str | None = None
    auto_destroy_activity_duration: str | None = None
