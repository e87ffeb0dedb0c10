"""What SCIM's two resources, Users (``scim.users``) and Groups (``scim.groups``), share: the
bound and check of their string attributes, and what a filtered list reads."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from chalicelib.scim import protocol
from chalicelib.scim.errors import bad_request

MAX_NAME = 256


def string(value: Any, name: str, *, required: bool = False) -> str | None:
    """A string attribute as sent (None when absent and not ``required``), or a 400."""
    if value is None:
        if required:
            raise bad_request(f"{name} is required")
        return None
    if not isinstance(value, str) or (required and not value.strip()):
        raise bad_request(f"{name} must be a non-empty string")
    if len(value) > MAX_NAME:
        raise bad_request(f"{name} must be at most {MAX_NAME} characters")
    return value


def candidates(
    node: protocol.Filter | None,
    lookups: dict[str, Callable[[str], list[Any]]],
    everything: Callable[[], list[Any]],
) -> list[Any]:
    """What a filtered list reads: the lookup for an ``eq`` on one of ``lookups``' attributes
    (lower-cased SCIM names), else ``everything`` (the route applies the whole filter)."""
    indexed = protocol.simple_equality(node, *lookups)
    if indexed is None:
        return everything()
    attribute, value = indexed
    return lookups[attribute](value)


def one_or_none(get: Callable[[str], Any]) -> Callable[[str], list[Any]]:
    """A lookup of one item by key, as ``candidates`` takes it: a list of none or one."""
    return lambda value: [found] if (found := get(value)) else []
