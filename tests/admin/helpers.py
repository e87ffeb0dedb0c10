"""What the site-admin tests, and the site-admin pages' tests, build on: users made through the
service, with a token."""

from __future__ import annotations

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
