"""Tokens: users' own (and the browser sessions opened with them), the single token a team
or an organization holds, a team's additional tokens, and finding one by id for whoever
may see it. The secret of a token is shown once, when minted (``core.auth.mint_token``).

A token created or deleted records its audit event (``authentication-token`` ``created`` or
``deleted``: its id, owner and description, never its secret or hash) in the transaction
that writes it.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any

from chalicelib.accounts.authorization import is_site_admin, owned_organization
from chalicelib.accounts.organizations.store import OrganizationModel
from chalicelib.accounts.teams import store as teams_store
from chalicelib.accounts.teams.service import owned_team
from chalicelib.accounts.teams.store import TeamModel
from chalicelib.accounts.tokens import store
from chalicelib.accounts.users.service import get_user
from chalicelib.accounts.users.store import UserModel
from chalicelib.core.api.errors import Conflict, NotFound
from chalicelib.core.audit import events
from chalicelib.core.auth import (
    AUDIT_TRAILS,
    Principal,
    PrincipalKind,
    TokenModel,
    generate_token,
    hash_token,
    new_token,
)
from chalicelib.core.data.ids import new_id, now

# A user token created without ``expired-at`` expires this many years later, as in TFE
# (go-tfe's ``defaultTokenExpirationYears``); an explicit date is kept as given.
USER_TOKEN_DEFAULT_YEARS = 2


# The description of the user tokens browser sessions are opened with (``web.session``'s
# ``start_for_user``: a password, an invitation or SAML proved who the user is); a session
# lives as long as its token.
SESSION_TOKEN = "browser session"


def end_sessions(user_id: str, *, keep_token_id: str | None = None) -> int:
    """End the user's browser sessions, because a credential of theirs changed (a password
    set or reset, two-factor turned on or off): the tokens minted for them are deleted, so
    each session is refused at once on this instance and within the token cache's seconds
    (``token_cache_ttl``) on the others. ``keep_token_id``: the token of the session that
    made the change, which stays signed in. The user's API tokens (and a session opened by
    pasting one) are theirs and stay. How many ended."""
    ended = 0
    for token in store.owned_tokens("user", user_id):
        if token.description == SESSION_TOKEN and token.id != keep_token_id:
            token.delete()
            ended += 1
    return ended


def token_event(
    principal: Principal, token: TokenModel, action: str, meta: dict[str, Any] | None = None
) -> events.Event:
    """The audit event of a token created or deleted: the token by id, its owner and
    description, never its secret or hash. A team's or organization's token is kept in its
    organization's partition, a user's (and a SCIM token, a ``scim-token``) in the site's."""
    return events.event(
        principal,
        organization=token.organization if token.kind in ("team", "organization") else None,
        resource_type="scim-token" if token.kind == "scim" else "authentication-token",
        resource_id=token.id,
        action=action,
        meta={
            "owner-type": token.kind,
            "owner-id": token.owner_id,
            "description": token.description,
            **(meta or {}),
        },
    )


def _rotate_single_token(
    holder: TeamModel | OrganizationModel,
    kind: PrincipalKind,
    owner: str,
    organization: str,
    principal: Principal,
    description: str | None,
) -> tuple[TokenModel, str]:
    """Teams and organizations hold one token, found by the hash kept on their own item.

    The new token is swapped in with the old one's deletion (``store.replace_held_token``):
    409 when a concurrent rotation swapped its own in first.
    """
    token, secret = new_token(
        kind, owner, organization=organization, description=description, created_by=principal.id
    )
    replaced = {"replaced-token-id": holder.token_id} if holder.token_hash else {}
    event = token_event(principal, token, "created", replaced)
    if not store.replace_held_token(holder, token, event):
        raise Conflict("the token was rotated concurrently; try again")
    return token, secret


def _held_token(holder: TeamModel | OrganizationModel, what: str) -> TokenModel:
    token = store.token_of_hash(holder.token_hash) if holder.token_hash else None
    if token is not None:
        return token
    raise NotFound(f"{what} has no token")


def _revoke_held_token(
    principal: Principal, holder: TeamModel | OrganizationModel, what: str
) -> None:
    token = _held_token(holder, what)
    store.drop_held_token(holder, token, token_event(principal, token, "deleted"))


def create_team_token(
    principal: Principal, team_id: str, description: str | None
) -> tuple[TokenModel, str]:
    """A team has one token; creating a new one revokes the old one."""
    team = owned_team(principal, team_id)
    return _rotate_single_token(team, "team", team.id, team.organization, principal, description)


def team_token(principal: Principal, team_id: str) -> TokenModel:
    return _held_token(owned_team(principal, team_id), f"team {team_id}")


def delete_team_token(principal: Principal, team_id: str) -> None:
    _revoke_held_token(principal, owned_team(principal, team_id), f"team {team_id}")


def create_organization_token(
    principal: Principal, org: str, description: str | None
) -> tuple[TokenModel, str]:
    holder = owned_organization(principal, org)
    return _rotate_single_token(holder, "organization", org, org, principal, description)


def organization_token(principal: Principal, org: str) -> TokenModel:
    return _held_token(owned_organization(principal, org), f"organization {org!r}")


def delete_organization_token(principal: Principal, org: str) -> None:
    _revoke_held_token(principal, owned_organization(principal, org), f"organization {org!r}")


# ----- the organization's audit trail token (HCP's ``?token=audit-trails``) ---------------------


def _audit_token_event(
    principal: Principal, org: str, token_id: str, action: str, meta: dict[str, str]
) -> events.Event:
    return events.event(
        principal,
        organization=org,
        resource_type="authentication-token",
        resource_id=token_id,
        action=action,
        meta={"token-type": AUDIT_TRAILS, **meta},
    )


def create_audit_trail_token(
    principal: Principal, org: str, description: str | None, expired_at: datetime | None
) -> tuple[TokenModel, str]:
    """The organization's audit trail token, replacing the one it held (its owners): it
    reads the organization's audit trail and nothing else (``core.auth``)."""
    holder = owned_organization(principal, org)
    secret = generate_token()
    token = TokenModel(
        hash_token(secret),
        id=new_id("at"),
        kind=AUDIT_TRAILS,
        owner_id=org,
        organization=org,
        description=description,
        created_by=principal.id,
        created_at=now(),
        expired_at=expired_at,
    )
    replaced = {"replaced": holder.audit_token_id} if holder.audit_token_id else {}
    event = _audit_token_event(principal, org, token.id, "created", replaced)
    if not store.swap_audit_token(holder, token, event):
        raise Conflict("the audit trail token was changed concurrently; try again")
    return token, secret


def audit_trail_token(principal: Principal, org: str) -> TokenModel:
    holder = owned_organization(principal, org)
    token = store.token_of_hash(holder.audit_token_hash) if holder.audit_token_hash else None
    if token is None:
        raise NotFound(f"organization {org!r} has no audit trail token")
    return token


def delete_audit_trail_token(principal: Principal, org: str) -> None:
    """Revoke the organization's audit trail token (its owners); 404 when it has none."""
    holder = owned_organization(principal, org)
    missing = NotFound(f"organization {org!r} has no audit trail token")
    if not holder.audit_token_hash:
        raise missing
    event = _audit_token_event(principal, org, holder.audit_token_id or "", "deleted", {})
    if not store.drop_audit_token(holder, event):
        raise missing


def _own_user(principal: Principal, user_id: str) -> UserModel:
    if principal.is_user and (principal.id == user_id or is_site_admin(principal)):
        return get_user(user_id)
    raise NotFound(f"user {user_id} not found")


def years_later(moment: datetime, years: int) -> datetime:
    """The same instant ``years`` calendar years on (29 February gives 28 February)."""
    try:
        return moment.replace(year=moment.year + years)
    except ValueError:
        return moment.replace(year=moment.year + years, day=28)


def create_user_token(
    principal: Principal,
    user_id: str,
    description: str | None,
    expired_at: datetime | None,
    recorded_as: Callable[[TokenModel], events.Event] | None = None,
) -> tuple[TokenModel, str]:
    """A token of the user's own. Without ``expired_at`` it expires
    ``USER_TOKEN_DEFAULT_YEARS`` years from now. Its event is ``created``, or
    ``recorded_as(token)`` where the token is the outcome of another change (a sign-in)."""
    user = _own_user(principal, user_id)
    if expired_at is None:
        expired_at = years_later(now(), USER_TOKEN_DEFAULT_YEARS)
    token, secret = new_token(
        "user", user.id, description=description, created_by=principal.id, expired_at=expired_at
    )
    if user.suspended:  # a site admin minting for a suspended user: refused until unsuspended
        token.suspended = True
    event = recorded_as(token) if recorded_as else token_event(principal, token, "created")
    store.insert_token(token, event)
    return token, secret


def list_user_tokens(principal: Principal, user_id: str) -> list[TokenModel]:
    user = _own_user(principal, user_id)
    return list(store.owned_tokens("user", user.id))


def create_additional_team_token(
    principal: Principal, team_id: str, description: str | None, expired_at: datetime | None
) -> tuple[TokenModel, str]:
    """One more token for a team (``/teams/:id/authentication-tokens``): unlike the team's
    single legacy token, creating it revokes nothing."""
    team = owned_team(principal, team_id)
    token, secret = new_token(
        "team",
        team.id,
        organization=team.organization,
        description=description,
        created_by=principal.id,
        expired_at=expired_at,
    )
    store.insert_token(token, token_event(principal, token, "created"))
    return token, secret


def list_organization_team_tokens(principal: Principal, org: str) -> list[TokenModel]:
    """Every team token of the organization (one Query per team)."""
    owned_organization(principal, org)
    tokens: list[TokenModel] = []
    for team in teams_store.teams_of(org):
        tokens += store.owned_tokens("team", team.id)
    return sorted(tokens, key=lambda t: t.created_at)


def token_by_id(principal: Principal, token_id: str) -> TokenModel:
    """A user token for its user (or a site admin), a team token for the organization's
    owners, a SCIM token for site admins; anything else is 404."""
    token = store.token_of_id(token_id)
    if token is None or token.kind not in ("user", "team", "scim"):
        raise NotFound(f"authentication token {token_id} not found")
    if token.kind == "scim":  # SCIM provisioning tokens: site admins only
        if not is_site_admin(principal):
            raise NotFound(f"authentication token {token_id} not found")
    elif token.kind == "user":
        _own_user(principal, token.owner_id)
    else:
        try:
            owned_team(principal, token.owner_id)
        except NotFound:
            raise NotFound(f"authentication token {token_id} not found") from None
    return token


def delete_token_by_id(principal: Principal, token_id: str) -> None:
    token = token_by_id(principal, token_id)
    if token.kind == "team":
        team = teams_store.find_team(token.owner_id)
        if team is not None and team.token_hash == token.token_hash:
            _revoke_held_token(principal, team, f"team {team.id}")
            return
    store.revoke_token(token, token_event(principal, token, "deleted"))


def revoke_user_tokens(user_id: str) -> int:
    """Delete every API token of a user (a deprovisioned user keeps no way in)."""
    tokens = list(store.owned_tokens("user", user_id))
    for token in tokens:
        token.delete()
    return len(tokens)
