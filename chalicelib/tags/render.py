"""JSON:API rendering of organization tags."""

from __future__ import annotations

from typing import Any

from chalicelib.core.api.jsonapi import resource, to_one
from chalicelib.core.data.ids import iso
from chalicelib.tags.store import TagModel


def render_tag(tag: TagModel) -> dict[str, Any]:
    return resource(
        "tags",
        tag.id,
        {
            "name": tag.name,
            "created-at": iso(tag.created_at),
            "instance-count": int(tag.instance_count or 0),
        },
        relationships={"organization": to_one("organizations", tag.organization)},
    )
