"""What the site-admin tests, and the site-admin pages' tests, build on: users made through the
service, with a token."""

from __future__ import annotations

from typing import Any

from chalicelib.accounts.tokens import service as tokens_service
from chalicelib.accounts.users import service as users_service
from chalicelib.core.auth import Principal


def make_user(name: str, *, admin: bool = False) -> tuple[str, str]:
    """A user and one of its tokens: (user id, token)."""
    user = users_service.create_user(name, f"{name}@example.com", site_admin=admin)
    _, token = tokens_service.create_user_token(
        Principal("user", user.id, None), user.id, None, None
    )
    return user.id, token


def admin_id() -> str:
    user = users_service.find_user_by_name("admin")
    assert user is not None
    return user.id


def trail_events(organization: str | None = None) -> list[dict[str, Any]]:
    """The events of an organization's partition (None: the site's), oldest first, as the
    audit trail's API answers them."""
    from chalicelib.core.audit import trail

    found, _ = trail.read_page(organization, None, 1, trail.MAX_PAGE_SIZE)
    return found


def events_of(action: str, organization: str | None = None) -> list[dict[str, Any]]:
    """The partition's events with this ``resource.action``."""
    return [e for e in trail_events(organization) if e["resource"]["action"] == action]
