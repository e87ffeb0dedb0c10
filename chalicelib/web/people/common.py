"""What the people pages share: their blueprint, the CSRF-checked form with repeated fields
(team checkboxes), the signed-in user, dates and the organization-access flags as labelled
checkboxes.

Every read and write goes through the accounts services (``accounts.service``,
``memberships``, ``account``): the same permissions, the same 404 for who may not see a
thing, the same 422 messages as the API. A handler catches ``Unprocessable`` only to show
the form again with its message; anything else reaches ``view.page``'s error pages.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, date, datetime
from urllib.parse import parse_qs

from chalice import Blueprint, Response

from chalicelib.core.api.errors import NotFound
from chalicelib.core.auth import Principal
from chalicelib.web import session
from chalicelib.web.view import WebCtx, csrf_refused

bp = Blueprint("chalicelib.web.people")

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


@dataclass(frozen=True)
class Form:
    """A POSTed form whose CSRF token was accepted."""

    fields: dict[str, list[str]]

    def get(self, name: str) -> str:
        """The first value of ``name``, trimmed ("" when absent)."""
        return (self.fields.get(name) or [""])[0].strip()

    def raw(self, name: str) -> str:
        """The first value as sent (passwords keep their spaces)."""
        return (self.fields.get(name) or [""])[0]

    def all(self, name: str) -> list[str]:
        """Every value of ``name`` (checkboxes), each once, in order."""
        return list(dict.fromkeys(v.strip() for v in self.fields.get(name) or () if v.strip()))


def posted(ctx: WebCtx) -> Form | Response:
    """The request's form, or the 403 page when its CSRF token is not accepted (then the
    handler returns it and nothing changes)."""
    raw = ctx.request.raw_body or b""
    text = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else str(raw)
    fields = parse_qs(text, keep_blank_values=True)
    submitted = (fields.get(session.CSRF_FIELD) or [""])[0] or None
    if not session.check_csrf(ctx.request, submitted):
        return csrf_refused(ctx.request)
    return Form(fields)


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
