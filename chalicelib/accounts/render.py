"""JSON:API resources of the accounts surface: organizations, entitlement sets, users, teams,
organization memberships and authentication tokens.

``rights`` is the caller's access in the organization; it only fills the ``permissions``
blocks (what the caller may do), never decides what is shown.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from chalicelib.accounts.organizations.store import OrganizationModel
from chalicelib.accounts.teams.store import ACCESS_FLAGS, TeamModel
from chalicelib.accounts.users.store import UserModel
from chalicelib.core.api.jsonapi import resource, to_many, to_one
from chalicelib.core.api.names import kebab
from chalicelib.core.auth import Principal, TokenModel, TtlCache
from chalicelib.core.data.ids import iso
from chalicelib.core.settings import get_settings

if TYPE_CHECKING:
    from chalicelib.accounts.authorization import OrgAccess

# The same for every organization: on for the features this registry serves, off otherwise.
ENTITLEMENTS: dict[str, bool | None] = {
    "private-module-registry": True,
    "teams": True,
    "operations": False,
    "sentinel": False,
    "sso": False,
    "state-storage": False,
    "vcs-integrations": False,
    "cost-estimation": False,
    "agents": False,
    "audit-logging": False,
    "configuration-designer": False,
    "module-tests-generation": False,
    "no-code-modules": True,
    "private-policy-agents": False,
    "run-tasks": False,
    "self-serve-billing": False,
    "user-limit": None,
}


def render_organization(org: OrganizationModel, rights: OrgAccess | None = None) -> dict[str, Any]:
    owner = bool(rights and rights.is_owner)
    return resource(
        "organizations",
        org.name,
        {
            "name": org.name,
            "email": org.email,
            "external-id": org.external_id,
            "created-at": iso(org.created_at),
            "collaborator-auth-policy": org.collaborator_auth_policy,
            "cost-estimation-enabled": org.cost_estimation_enabled,
            "session-timeout": org.session_timeout,
            "permissions": {
                "can-update": owner,
                "can-destroy": owner,
                "can-create-team": owner,
                "can-create-workspace": bool(rights and rights.manage_workspaces),
                "can-manage-modules": bool(rights and rights.manage_modules),
            },
        },
        relationships={"entitlement-set": to_one("entitlement-sets", org.external_id)},
        links={"self": f"/api/v2/organizations/{org.name}"},
    )


def render_entitlement_set(org: OrganizationModel) -> dict[str, Any]:
    """Identified by the organization's external id, as its ``entitlement-set`` relationship
    points to."""
    return resource("entitlement-sets", org.external_id, dict(ENTITLEMENTS))


def render_team(
    team: TeamModel, rights: OrgAccess | None = None, invited: Sequence[str] = ()
) -> dict[str, Any]:
    """``invited``: the ids of the invitations, not yet accepted, that put their person on
    the team (listed after the members' memberships)."""
    owner = bool(rights and rights.is_owner)
    members = sorted(team.user_ids or ())
    return resource(
        "teams",
        team.id,
        {
            "name": team.name,
            "visibility": team.visibility,
            "sso-team-id": team.sso_team_id,
            "users-count": len(members),
            "scim-linked": team.scim_group_name is not None,
            "scim-group-name": team.scim_group_name,
            "scim-sync-paused": bool(team.scim_sync_paused),
            "organization-access": {kebab(f): bool(getattr(team.access, f)) for f in ACCESS_FLAGS},
            "permissions": {
                "can-update-membership": owner,
                "can-destroy": owner,
                "can-update-organization-access": owner,
                "can-update-api-token": owner,
                "can-update-visibility": owner,
            },
        },
        relationships={
            "organization": to_one("organizations", team.organization),
            "users": to_many("users", members),
            "organization-memberships": to_many(
                "organization-memberships",
                [*(membership_id(team.organization, u) for u in members), *invited],
            ),
            "authentication-token": to_one("authentication-tokens", team.token_id),
        },
        links={"self": f"/api/v2/teams/{team.id}"},
    )


def membership_id(organization: str, user_id: str) -> str:
    """The id of a user's membership in an organization. Membership is not stored on its
    own (it is being on one of the organization's teams), so the id is derived: stable, and
    the same from every team the user is on."""
    digest = hashlib.sha256(f"{organization}\0{user_id}".encode()).hexdigest()
    return f"ou-{digest[:16]}"


def render_organization_membership(
    organization: str,
    user: UserModel,
    *,
    private: bool = True,
    hidden_teams: frozenset[str] | set[str] = frozenset(),
) -> dict[str, Any]:
    """``user``'s active membership in ``organization``. ``private`` shows the email address
    (to the organization's owners and the user); ``hidden_teams``: the secret teams the
    reader may not see, left out of ``teams``."""
    return render_membership(
        membership_id(organization, user.id),
        organization,
        user.id,
        user.email,
        "active",
        user.team_ids(organization),
        private=private,
        hidden_teams=hidden_teams,
    )


def render_membership(
    id: str,
    organization: str,
    user_id: str,
    email: str,
    status: str,
    team_ids: list[str],
    *,
    private: bool,
    hidden_teams: frozenset[str] | set[str] = frozenset(),
    meta: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """A membership, active or ``invited``. ``meta``: only in the answer to the invitation,
    when no mail carried it (``routes.invitation_meta``)."""
    document = resource(
        "organization-memberships",
        id,
        {"status": status, "email": email if private else ""},
        relationships={
            "user": to_one("users", user_id),
            "organization": to_one("organizations", organization),
            "teams": to_many("teams", (t for t in team_ids if t not in hidden_teams)),
        },
    )
    if meta:
        document["meta"] = meta
    return document


# Whether SCIM provisioning is on: scim's service answers (SCIM sits above accounts; the app
# factory gives the answer's source), remembered for the token cache's window.
_scim_probe: list[Callable[[], bool]] = []
_scim_enabled = TtlCache(lambda: get_settings().token_cache_ttl)


def use_scim_probe(probe: Callable[[], bool]) -> None:
    """``probe()`` says whether SCIM provisioning is on (called by the app factory for the
    apps that render users); asked when a user is first rendered."""
    _scim_probe[:] = [probe]


def scim_enabled() -> bool:
    found = _scim_enabled.get("enabled")
    if found is None:
        found = bool(_scim_probe and _scim_probe[0]())
        _scim_enabled.put("enabled", found)
    return found


def scim_attributes(user: UserModel | None) -> dict[str, Any]:
    """TFE's SCIM attributes of a user (``None``: a token's service user). While SCIM is
    off they are absent, not false (go-tfe reads them as nil: TestUsersReadCurrent "with no
    scim attributes"); while it is on, ``is-scim-managed`` says whether SCIM provisioned the
    user, and for those ``scim-username`` and ``scim-updated-at`` are SCIM's userName and
    when SCIM last wrote the user (TestAdminUsers_List "with scim attributes")."""
    if not scim_enabled():
        return {}
    managed = user is not None and bool(user.scim_provisioned)
    return {
        "is-scim-managed": managed,
        "scim-username": user.scim_username if user is not None and managed else None,
        "scim-updated-at": iso(user.scim_updated_at) if user is not None and managed else None,
    }


def avatar_url(name: str, key: str) -> str:
    """A placeholder avatar drawn here, as a ``data:`` URL: the name's first letter on a
    colour from ``key`` (an id). No request leaves for a third party and nothing is derived
    from the email address (a gravatar hash of it would give the address away)."""
    first = name[:1].upper()
    letter = first if first.isascii() and first.isalnum() else "?"
    hue = int(hashlib.sha256(key.encode()).hexdigest()[:4], 16) % 360
    svg = (
        "<svg xmlns='http://www.w3.org/2000/svg' width='64' height='64' viewBox='0 0 64 64'>"
        f"<rect width='64' height='64' fill='hsl({hue},40%,42%)'/>"
        "<text x='32' y='42' font-family='sans-serif' font-size='30' fill='white' "
        f"text-anchor='middle'>{letter}</text></svg>"
    )
    return "data:image/svg+xml," + quote(svg, safe="")


def render_user(user: UserModel, *, private: bool = True) -> dict[str, Any]:
    """``private`` adds what only the user and site admins may see (the email address and
    one waiting for its confirmation)."""
    return resource(
        "users",
        user.id,
        {
            "username": user.username,
            "email": user.email if private else "",
            "unconfirmed-email": user.unconfirmed_email if private else None,
            "is-service-account": False,
            "is-site-admin": user.is_site_admin,
            "is-admin": user.is_site_admin,
            **scim_attributes(user),
            "avatar-url": avatar_url(user.username, user.id),
            "two-factor": user.two_factor(),
            "v2-only": False,
            "permissions": {
                "can-create-organizations": True,
                "can-change-email": True,
                "can-change-username": True,
            },
        },
        links={"self": f"/api/v2/users/{user.id}"},
    )


def render_invited_user(user_id: str, email: str, *, private: bool = True) -> dict[str, Any]:
    """The user of a person invited by email who has not accepted yet (``user_id``: the id
    the invitation reserved): what the invitation knows, as TFE shows the user it makes at
    invitation (no username yet: ``""``, no two-factor). ``private``: as ``render_user``."""
    return resource(
        "users",
        user_id,
        {
            "username": "",  # none yet; pytfe's User refuses null here
            "email": email if private else "",
            "unconfirmed-email": None,
            "is-service-account": False,
            "is-site-admin": False,
            "is-admin": False,
            **scim_attributes(None),
            "avatar-url": avatar_url("", user_id),
            "two-factor": {"enabled": False, "verified": False},
            "v2-only": False,
            "permissions": {
                "can-create-organizations": False,
                "can-change-email": False,
                "can-change-username": False,
            },
        },
        links={"self": f"/api/v2/users/{user_id}"},
    )


def render_service_account(principal: Principal) -> dict[str, Any]:
    """Team and organization tokens act as service users, as in TFE."""
    suffix = principal.id.split("-", 1)[-1]
    username = f"api-{principal.kind}_{principal.id}"
    return resource(
        "users",
        f"user-{suffix}",
        {
            "username": username,
            "email": "",
            "is-service-account": True,
            "is-site-admin": False,
            "is-admin": False,
            **scim_attributes(None),
            "avatar-url": avatar_url(username, principal.id),
            "two-factor": {"enabled": False, "verified": False},
            "v2-only": True,
            "permissions": {},
        },
    )


def render_token(token: TokenModel, secret: str | None = None) -> dict[str, Any]:
    """``secret`` is the token string, shown once: in the response that created it."""
    relationships = {"created-by": to_one("users", token.created_by)}
    if token.kind == "team":
        # TFE names the owning team; pytfe hydrates ``TeamToken.team`` from it.
        relationships["team"] = to_one("teams", token.owner_id)
    return resource(
        "authentication-tokens",
        token.id,
        {
            "created-at": iso(token.created_at),
            "last-used-at": iso(token.last_used_at),
            "description": token.description,
            "token": secret,
            "expired-at": iso(token.expired_at),
        },
        relationships=relationships,
    )
