"""Who may do what: the one home of the access decisions, over the role tables.

A route declares the caller it needs (``chalicelib.core.api.access``); the kinds that need
this room's tables are here: ``SiteAdmin`` (a site admin's user token; 404 for anyone else,
and 404 on the hosted edition before the token is read, as TFE's admin API).
"""

from __future__ import annotations

from typing import Any

from chalicelib.accounts.service import is_site_admin
from chalicelib.core.api.access import Access, user_token
from chalicelib.core.api.errors import NotFound
from chalicelib.core.auth import Principal
from chalicelib.core.settings import get_settings

NOT_FOUND = "not found: user unauthorized to perform action"


def ensure_site_admin(principal: Principal) -> None:
    """Site administration exists only for site admins of the self-hosted edition: else 404."""
    if get_settings().hosted or not is_site_admin(principal):
        raise NotFound(NOT_FOUND)


def _site_admin(request: Any) -> Principal:
    if get_settings().hosted:
        raise NotFound("not found")
    principal = user_token(request)
    ensure_site_admin(principal)
    return principal


SiteAdmin = Access(
    "site-admin",
    _site_admin,
    scheme="bearerAuth",
    description="a site admin's user token (404 for anyone else and on the hosted edition)",
)
