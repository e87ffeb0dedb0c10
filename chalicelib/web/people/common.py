"""What the people pages share: their blueprint, the signed-in user, dates and the
organization-access flags as labelled checkboxes. (The CSRF-checked form with repeated fields,
``view.posted``, is every web page's: the provider pages, which the everyday web function
serves, use it without loading these pages.)

Every read and write goes through the accounts services (``accounts.*.service``,
``memberships``, ``account``): the same permissions, the same 404 for who may not see a
thing, the same 422 messages as the API. A handler catches ``Unprocessable`` only to show
the form again with its message; anything else reaches ``view.page``'s error pages.
"""

from __future__ import annotations

from datetime import UTC, date, datetime

from chalice import Blueprint

from chalicelib.core.api.errors import NotFound
from chalicelib.core.auth import Principal
from chalicelib.web.view import WebCtx

bp = Blueprint(__name__)

# A team's organization access as the API names it (``organization-access``), in TFE's order.
ACCESS_FLAGS = (
    ("manage_modules", "Manage modules", "publish and delete the organization's modules"),
    ("manage_providers", "Manage providers", "publish and delete private providers"),
    ("manage_membership", "Manage membership", "invite and remove members"),
    ("manage_projects", "Manage projects", "create and manage every project and workspace"),
    ("read_projects", "Read projects", "see every project"),
    ("manage_workspaces", "Manage workspaces", "create and manage every workspace"),
    ("read_workspaces", "Read workspaces", "see every workspace"),
    ("manage_policies", "Manage policies", "manage policy sets"),
    ("manage_vcs_settings", "Manage VCS settings", "manage VCS providers"),
)
MAX_DESCRIPTION = 255


def signed_in_user(ctx: WebCtx) -> Principal:
    """The caller, who must be a user: a team or organization token's session has no
    account, and manages nobody (404, as the API answers)."""
    principal = ctx.principal_or_sign_in()
    if not principal.is_user:
        raise NotFound("only a user has an account")
    return principal


def expiry_from(text: str) -> datetime | None | str:
    """A token's optional expiry date (``YYYY-MM-DD``, midnight UTC at its start): the
    datetime, None for no expiry, or the message saying why it is refused."""
    if not text:
        return None
    try:
        day = date.fromisoformat(text)
    except ValueError:
        return "the expiry date must be a date such as 2030-01-31"
    moment = datetime(day.year, day.month, day.day, tzinfo=UTC)
    if moment <= datetime.now(UTC):
        return "the expiry date must be in the future"
    return moment


def description_error(description: str) -> str | None:
    if not description:
        return "a description is required: it tells your tokens apart"
    if len(description) > MAX_DESCRIPTION:
        return f"the description may have at most {MAX_DESCRIPTION} characters"
    return None
