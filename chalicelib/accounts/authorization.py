"""Who may do what: the one home of the access decisions, over the role tables.

Two levels, as OTF's ``Authorize(action, resource)``:

* A route declares the caller it needs (``chalicelib.core.api.access``); the kinds that need
  this room's tables are here: ``SiteAdmin`` (a site admin's user token; 404 for anyone else,
  and 404 on the hosted edition before the token is read, as TFE's admin API).
* A service asks ``authorize(principal, action, organization)`` (or ``require(rights,
  action, ...)`` when it read the rights with the resource): the roles a caller holds in an
  organization (``OrgAccess``) are read from the tables here (``access``: the site-admin
  flag, the owners team, the teams' permissions, an organization token, an invitation's
  membership), and ``GRANTS`` says which roles allow each action. A caller without it gets
  404, as if the thing did not exist.

This file reads the roles itself, from the stores of users, teams and organizations, so
that the services (``accounts.organizations``, ``teams``, ``tokens``) ask it too: they import
this file, never the other way round. Whether a user is a member of an organization is
``UserModel.is_member``.

Not here: the SCIM token (checked by ``chalicelib.scim``, a room above this one).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Literal

from chalicelib.accounts.organizations import store as organizations_store
from chalicelib.accounts.organizations.store import OrganizationModel
from chalicelib.accounts.teams import store as teams_store
from chalicelib.accounts.teams.store import TeamModel
from chalicelib.accounts.users import store as users_store
from chalicelib.core.api.access import Access, user_token
from chalicelib.core.api.errors import Forbidden, NotFound
from chalicelib.core.auth import Principal
from chalicelib.core.data import db
from chalicelib.core.settings import get_settings

NOT_FOUND = "not found: user unauthorized to perform action"


# ----- the roles a caller holds --------------------------------------------------------------


@dataclass(frozen=True)
class OrgAccess:
    """What a principal may do in one organization."""

    can_read: bool = False
    manage_modules: bool = False
    manage_workspaces: bool = False
    is_owner: bool = False
    site_admin: bool = False
    # Projects: ``manage-projects`` (which, as in TFE, includes managing every workspace) and
    # ``read-projects``; the organization's token reads them.
    manage_projects: bool = False
    read_projects: bool = False
    # Inviting and removing members (the owners, and teams with ``manage-membership``).
    manage_membership: bool = False
    # The private provider registry: providers, their versions and platforms, GPG keys (the
    # owners, and teams with ``manage-providers``). As for modules, an organization token
    # only reads: TFE refuses registry writes to organization tokens.
    manage_providers: bool = False
    # A member of an organization this one shares its private modules with (a site admin
    # sets its module consumers, or global sharing): reads those modules through the
    # registry protocol (``consume``), and nothing else of the organization.
    consumer: bool = False

    @classmethod
    def everything(cls, *, site_admin: bool = False) -> OrgAccess:
        return cls(
            can_read=True,
            manage_modules=True,
            manage_workspaces=True,
            is_owner=True,
            site_admin=site_admin,
            manage_projects=True,
            read_projects=True,
            manage_membership=True,
            manage_providers=True,
        )


def is_site_admin(principal: Principal) -> bool:
    if not principal.is_user:
        return False
    user = users_store.read_user(principal.id)
    return bool(user is not None and user.is_site_admin)


def access(principal: Principal, organization: str) -> OrgAccess:
    """The principal's rights in ``organization`` (which may not exist); 403 for its
    members and tokens while a site admin has disabled it (``refuse_disabled``)."""
    rights = roles(principal, organization)
    if rights.can_read and not rights.site_admin:
        refuse_disabled(organization)
    return rights


def refuse_disabled(name: str, org: OrganizationModel | None = None) -> None:
    """403 when a site admin disabled the organization (``is-disabled``, the admin API):
    its members, team and organization tokens are refused on its API and on the registry
    protocol; site admins are not (they read it and enable it again). The one check, made
    where organization access is resolved (``access``, ``read_in_organization``). What an
    instance knows is kept for the token cache's window, so a warm request reads nothing
    more; ``org``: the item when the caller has just read it, else it is read (once per
    window) here."""
    if is_disabled(name, org):
        raise Forbidden(
            f"organization {name!r} is disabled: a site administrator can enable it again"
        )


def is_disabled(name: str, org: OrganizationModel | None = None) -> bool:
    """Whether a site admin disabled the organization: as this instance knows it, else from
    ``org`` (the item, when the caller has just read it) or one GetItem, kept for the token
    cache's window."""
    disabled = organizations_store.known_disabled(name)
    if disabled is None:
        if org is None:
            org = organizations_store.get_organization(name)
        disabled = organizations_store.note_disabled(name, org)
    return disabled


def roles(principal: Principal, organization: str) -> OrgAccess:
    if principal.kind == "organization":
        readable = principal.organization == organization
        return OrgAccess(can_read=readable, read_projects=readable)
    if principal.kind == "team":
        team = teams_store.find_team(principal.id)
        return _team_access([team], organization) if team is not None else OrgAccess()
    user = users_store.read_user(principal.id)
    if user is None:
        return OrgAccess()
    if user.is_site_admin:
        return OrgAccess.everything(site_admin=True)
    team_ids = user.team_ids(organization)
    if not team_ids:  # a member through an invitation only reads
        return OrgAccess(can_read=True) if user.is_member(organization) else OrgAccess()
    return _team_access(teams_store.teams_by_ids(team_ids), organization)


def _team_access(teams: Iterable[TeamModel], organization: str) -> OrgAccess:
    teams = [t for t in teams if t.organization == organization]
    if not teams:
        return OrgAccess()
    if any(t.is_owners for t in teams):
        return OrgAccess.everything()
    manage_projects = any(t.access.manage_projects for t in teams)
    return OrgAccess(
        can_read=True,
        manage_modules=any(t.access.manage_modules for t in teams),
        manage_workspaces=manage_projects or any(t.access.manage_workspaces for t in teams),
        manage_projects=manage_projects,
        read_projects=manage_projects or any(t.access.read_projects for t in teams),
        manage_membership=any(t.access.manage_membership for t in teams),
        manage_providers=any(t.access.manage_providers for t in teams),
    )


def organization_access(principal: Principal, name: str) -> OrgAccess:
    """The caller's rights in an existing organization, or 404 when missing or not readable.

    Reads the organization item only for site admins: a team token, a team member and an
    organization token exist only while their organization does (they go with it).
    """
    rights = access(principal, name)
    if rights.can_read and (not rights.site_admin or organizations_store.organization_exists(name)):
        return rights
    raise NotFound(f"organization {name!r} not found")


def member_organizations(principal: Principal) -> set[str]:
    """The organizations a caller belongs to, from what is already read: a team or
    organization token's own, a user's teams (the cached user item)."""
    if principal.kind in ("team", "organization"):
        return {principal.organization} if principal.organization else set()
    user = users_store.cached_user(principal.id)
    return set(user.organizations()) if user else set()


def consumer_roles(principal: Principal, producer: str) -> OrgAccess:
    """The caller's role in ``producer`` as a consumer of its private modules: ``consumer``
    when the producer shares them with an organization of the caller (module consumers, or
    global sharing), else none. One GetItem of the producer; a disabled producer shares
    nothing. For callers who do not read the producer: its members hold more."""
    org = organizations_store.get_organization(producer)
    if org is None:
        return OrgAccess()
    if organizations_store.note_disabled(producer, org):
        return OrgAccess()
    members_of = member_organizations(principal)
    shared = (
        bool(members_of)
        if org.global_module_sharing
        else bool(set(org.module_consumers or ()) & members_of)
    )
    return OrgAccess(consumer=shared)


# ----- an organization with the caller's access ----------------------------------------------


def readable_organization(principal: Principal, name: str) -> tuple[OrganizationModel, OrgAccess]:
    """The organization and the caller's access, or 404 when missing or not readable (403
    when disabled: ``refuse_disabled``, on the item read here)."""
    rights = roles(principal, name)
    org = organizations_store.get_organization(name) if rights.can_read else None
    if org is None:
        raise NotFound(f"organization {name!r} not found")
    if not rights.site_admin:
        refuse_disabled(name, org)
    return org, rights


def can_read_organization(principal: Principal, name: str) -> bool:
    """Whether the caller may read the existing organization ``name``, in the fewest reads
    (see ``read_in_organization``)."""
    return read_in_organization(principal, name, None)[0]


def read_in_organization(
    principal: Principal, name: str, wanted: tuple[Any, Any, Any] | None
) -> tuple[bool, Any]:
    """Whether the caller may read the existing organization ``name``, and the item
    ``wanted`` (``(model, hash_key, range_key)``: what the caller reads next, None for
    nothing; None when missing), in the fewest reads: the registry protocol asks on every
    ``terraform init`` request.

    A team or organization token carries its organization and exists only while it does
    (no read); a user is the cached user item (``users_store.cached_user``: none on a warm
    instance, and on a cold one read together with ``wanted``); only a site admin's answer
    reads the organizations table. The item is read whatever the answer: the caller must
    not show it when the answer is no. A member of a disabled organization, or its token, is
    refused (``refuse_disabled``): while this instance does not know whether it is, the
    organization item is read in the same call as the rest."""
    # The organization item is read with the rest while whether it is disabled is not known.
    unknown = organizations_store.known_disabled(name) is None
    more = [wanted] if wanted is not None else []
    if unknown:
        more.append((OrganizationModel, name, None))
    user = None
    if principal.kind in ("team", "organization"):
        if principal.organization != name:
            return False, None
        member = True
        items = db.get_together(*more) if more else []
    else:
        user, items = users_store.cached_user_with(principal.id, *more)
        member = user is not None and user.is_member(name)
    item = items[0] if wanted is not None else None
    if unknown:
        organizations_store.note_disabled(name, items[-1])
    if user is not None and user.is_site_admin:
        return organizations_store.organization_exists(name), item
    if member:
        refuse_disabled(name)
    return member, item


def readable_organization_names(principal: Principal) -> list[str]:
    """Names of every organization the principal can read (for cross-organization lists)."""
    if principal.kind in ("team", "organization"):
        return [principal.organization] if principal.organization else []
    user = users_store.read_user(principal.id)
    if user is None:
        return []
    if user.is_site_admin:
        return [org.name for org in organizations_store.all_organizations()]
    return user.organizations()


def owned_organization(principal: Principal, name: str) -> OrganizationModel:
    """The organization when the caller may ``own`` it (``require``), else 404."""
    org, rights = readable_organization(principal, name)
    refusal = f"organization {name!r} not found or you are not one of its owners"
    require(rights, "own", refusal)
    return org


# ----- site administration -------------------------------------------------------------------


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


def is_site_auditor(principal: Principal) -> bool:
    """A user site admins made a site auditor: reads the site's audit trail, nothing else
    of site administration."""
    if not principal.is_user:
        return False
    user = users_store.read_user(principal.id)
    return bool(user is not None and (user.is_site_auditor or user.is_site_admin))


def _site_auditor(request: Any) -> Principal:
    if get_settings().hosted:
        raise NotFound("not found")
    principal = user_token(request)
    if not is_site_auditor(principal):
        raise NotFound(NOT_FOUND)
    return principal


# The site's audit trail (``GET /api/v2/admin/audit-trail``): site admins and site auditors.
SiteAuditor = Access(
    "site-auditor",
    _site_auditor,
    scheme="bearerAuth",
    description="a site admin's or site auditor's user token (404 for anyone else and on "
    "the hosted edition)",
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
    "consume",
]

# The role table: which roles (``OrgAccess``) allow each action. The owners team and site
# admins hold every role; ``manage-projects`` includes reading projects and (in
# ``_team_access``) managing every workspace, as in TFE.
GRANTS: dict[Action, Callable[[OrgAccess], bool]] = {
    "read": lambda rights: rights.can_read,
    "read-projects": lambda rights: rights.read_projects or rights.manage_projects,
    "manage-projects": lambda rights: rights.manage_projects,
    "manage-workspaces": lambda rights: rights.manage_workspaces,
    "manage-modules": lambda rights: rights.manage_modules,
    "manage-providers": lambda rights: rights.manage_providers,
    "manage-membership": lambda rights: rights.manage_membership,
    "own": lambda rights: rights.is_owner,
    # Reading a private module through the registry protocol: its organization's readers,
    # and the members of the organizations it shares its modules with.
    "consume": lambda rights: rights.can_read or rights.consumer,
}

# The actions a caller may hold without reading the organization.
FROM_OUTSIDE: frozenset[Action] = frozenset({"consume"})


def allows(rights: OrgAccess, action: Action) -> bool:
    """Whether the roles ``rights`` hold allow ``action`` (reading the organization first,
    but for ``FROM_OUTSIDE``)."""
    return (rights.can_read or action in FROM_OUTSIDE) and GRANTS[action](rights)


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
    rights = organization_access(principal, organization)
    return require(rights, action, refusal or f"organization {organization!r} not found")
