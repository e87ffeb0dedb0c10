"""Who may do what: the one home of the access decisions, over the role tables.

Two levels, as OTF's ``Authorize(action, resource)``:

* A route declares the caller it needs (``chalicelib.core.api.access``); the kinds that need
  this room's tables are here: ``SiteAdmin`` (a site admin's user token; 404 for anyone else,
  and 404 on the hosted edition before the token is read, as TFE's admin API).
* A service asks ``authorize(principal, action, organization)`` (or ``require(rights,
  action, ...)`` when it read the rights with the resource): the roles a caller holds in an
  organization are read from the tables by ``accounts.service.access`` (the site-admin
  flag, the owners team, the teams' permissions, an organization token, an invitation's
  membership), and ``GRANTS`` says which roles allow each action. A caller without it gets
  404, as if the thing did not exist.

Not here yet: the SCIM token (checked by ``chalicelib.scim``, a room above this one) and the
consumer organizations of shared modules (``accounts.service.shares_modules_with``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal

from chalicelib.accounts import service
from chalicelib.accounts.service import OrgAccess, is_site_admin
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


# ----- actions in an organization --------------------------------------------------------------

Action = Literal[
    "read",
    "read-projects",
    "manage-projects",
    "manage-workspaces",
    "manage-modules",
    "manage-providers",
    "manage-membership",
    "own",
]

# The role table: which roles (``OrgAccess``) allow each action. The owners team and site
# admins hold every role; ``manage-projects`` includes reading projects and (in
# ``accounts.service``) managing every workspace, as in TFE.
GRANTS: dict[Action, Callable[[OrgAccess], bool]] = {
    "read": lambda rights: rights.can_read,
    "read-projects": lambda rights: rights.read_projects or rights.manage_projects,
    "manage-projects": lambda rights: rights.manage_projects,
    "manage-workspaces": lambda rights: rights.manage_workspaces,
    "manage-modules": lambda rights: rights.manage_modules,
    "manage-providers": lambda rights: rights.manage_providers,
    "manage-membership": lambda rights: rights.manage_membership,
    "own": lambda rights: rights.is_owner,
}


def allows(rights: OrgAccess, action: Action) -> bool:
    """Whether the roles ``rights`` hold allow ``action`` (reading the organization first)."""
    return rights.can_read and GRANTS[action](rights)


def require(rights: OrgAccess | None, action: Action, refusal: str) -> OrgAccess:
    """``rights`` when they allow ``action``, else 404 with ``refusal`` (None: the resource
    was not found, the same 404)."""
    if rights is None or not allows(rights, action):
        raise NotFound(refusal)
    return rights


def authorize(
    principal: Principal, action: Action, organization: str, refusal: str | None = None
) -> OrgAccess:
    """The caller's rights in the existing ``organization`` when they allow ``action``; else
    404 (``refusal``, by default "organization not found"), and 404 too when the organization
    is missing or unreadable (403 while a site admin has disabled it)."""
    rights = service.organization_access(principal, organization)
    return require(rights, action, refusal or f"organization {organization!r} not found")
