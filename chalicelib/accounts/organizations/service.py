"""Organizations: creating one (its owners team with its creator), the caller's list, the
settings its owners and site admins change, module sharing by name, and the last step of
deleting one (``lifecycle`` deletes what hangs off it first).

Permissions follow SPEC.md's Authentication section: a caller without a permission gets
404, as if the thing did not exist; the roles are read, and each action decided, in
``accounts.authorization`` (this file asks it).

An organization cannot take the name of a namespace the module cache serves (in any case):
modules sits above accounts, so the check is given by the app factory (``use_reserved_names``,
``entry.wiring``), as the mailer is.

Creating, updating and deleting one records its audit event (``organization``, in its own
partition) in the transaction that writes its item; the site admin's changes
(``set_organization_admin_values``, ``set_module_consumers``) are recorded by their callers.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pynamodb.expressions.update import Action

from chalicelib.accounts.authorization import is_site_admin, owned_organization
from chalicelib.accounts.organizations import store
from chalicelib.accounts.organizations.store import OrganizationModel
from chalicelib.accounts.teams import store as teams_store
from chalicelib.accounts.teams.service import OWNERS, delete_team_records, new_team, team_members
from chalicelib.accounts.tokens import store as tokens_store
from chalicelib.accounts.users.service import NAME, get_user, validate_email
from chalicelib.accounts.users.store import UserModel
from chalicelib.core.api.errors import NotFound, Unprocessable
from chalicelib.core.audit import events, trail
from chalicelib.core.auth import AUDIT_TRAILS, Principal
from chalicelib.core.data.ids import new_id, now


def get_organization(name: str) -> OrganizationModel | None:
    """The organization of that name (None: none), with no access check: for callers that
    checked it, or that only ask whether it exists."""
    return store.get_organization(name)


# Whether a name is reserved by the module cache (an allowed upstream namespace): modules'
# answer, given by the app factory to the apps that create organizations.
_reserved: list[Callable[[str], bool]] = []


def use_reserved_names(reserved: Callable[[str], bool]) -> None:
    """``reserved(name)`` says whether ``name`` is an allowed upstream namespace of the module
    cache (called by the app factory for the apps that create organizations)."""
    _reserved[:] = [reserved]


def refuse_reserved_name(name: str) -> None:
    """422 when ``name`` is a namespace the module cache serves: an organization of that
    name would share its module addresses with the upstream's."""
    if _reserved and _reserved[0](name):
        raise Unprocessable(
            f"name {name!r} is reserved: it is a public registry namespace that this "
            "registry's module cache serves",
            pointer="/data/attributes/name",
        )


def validate_org_name(name: str | None) -> str:
    if not name:
        raise Unprocessable("name is required", pointer="/data/attributes/name")
    if len(name) > 64 or not NAME.match(name):
        raise Unprocessable(
            "name must be 1 to 64 letters, numbers, - or _, starting with a letter or number",
            pointer="/data/attributes/name",
        )
    return name


def create_organization(
    principal: Principal, name: str | None, email: str | None, *, limited: bool
) -> OrganizationModel:
    """``limited``: the site lets only site admins create organizations."""
    admin = is_site_admin(principal)
    if not principal.is_user:
        raise NotFound("organizations can only be created with a user token")
    if limited and not admin:
        raise NotFound("only site administrators may create organizations on this instance")
    name = validate_org_name(name)
    email = validate_email(email)
    refuse_reserved_name(name)
    moment = now()
    org = OrganizationModel(
        name, external_id=new_id("org"), email=email, created_at=moment, updated_at=moment
    )
    owners = new_team(name, OWNERS, "secret", {})
    event = _event(principal, org, "created", {"external-id": org.external_id}, moment=moment)
    if not store.insert_organization(org, owners, principal.id, event):
        raise Unprocessable("name has already been taken", pointer="/data/attributes/name")
    return org


def _event(
    principal: Principal | None,
    org: OrganizationModel,
    action: str,
    meta: dict[str, Any] | None = None,
    **options: Any,
) -> events.Event:
    """The audit event of a change of ``org`` (in its own partition; its id is its name, as
    the API shows it)."""
    return events.event(
        principal,
        organization=org.name,
        resource_type="organization",
        resource_id=org.name,
        action=action,
        meta=meta,
        **options,
    )


def list_organizations(principal: Principal) -> list[OrganizationModel]:
    """The organizations the caller reads: a site admin every one, anyone else those it
    belongs to that are not disabled (``refuse_disabled``; the items read say it)."""
    if is_site_admin(principal):
        return store.all_organizations()
    if principal.kind in ("team", "organization"):
        name = principal.organization
        found = store.organizations_named([name] if name else [])
    else:
        user = get_user(principal.id)
        found = store.organizations_named(user.organizations())
    return [org for org in found if not store.note_disabled(org.name, org)]


def update_organization(
    principal: Principal, name: str, *, email: str | None, new_name: str | None
) -> OrganizationModel:
    org = owned_organization(principal, name)
    if new_name is not None and new_name != name:
        raise Unprocessable(
            "renaming an organization is not supported", pointer="/data/attributes/name"
        )
    if email is not None:
        email = validate_email(email)
        changed = trail.changed({"email": org.email}, {"email": email})
        moment = now()
        actions: list[Action] = [
            OrganizationModel.email.set(email),
            OrganizationModel.updated_at.set(moment),
        ]
        event = _event(principal, org, "updated", {"changed": changed}, moment=moment)
        store.update_organization(org, actions, event)
        org.email, org.updated_at = email, moment
    return org


def organization_external_id(name: str) -> str | None:
    """The ``org-`` id of the organization of that name now (None when there is none): tells
    a reused name from the organization that had it before."""
    return store.external_id_of(name)


def organizations_by_external_id(external_ids: set[str]) -> dict[str, OrganizationModel]:
    """The organizations whose ``external-id`` is among ``external_ids`` (bounded by the
    caller), by external id. Reads the organization directory with a filter: only the
    deprecated Admin Module Sharing API names organizations this way."""
    if not external_ids:
        return {}
    found = store.organizations_with_external_ids(external_ids)
    return {org.external_id: org for org in found}


def delete_organization_records(principal: Principal, name: str) -> None:
    """The last step of deleting an organization (``lifecycle.delete_organization``): its
    teams, tokens and record, once what hung off it is gone. The record goes with the
    deletion's one audit event (``organization`` ``deleted``, by ``principal``)."""
    org = get_organization(name)
    if org is None:
        return
    for team in teams_store.teams_of(name):
        delete_team_records(team)
    tokens_store.delete_token(org.token_hash)
    for token in tokens_store.owned_tokens("organization", name):  # any the index still shows
        token.delete()
    for token in tokens_store.owned_tokens(AUDIT_TRAILS, name):  # its audit trail token
        token.delete()
    forget_module_consumer(name)
    store.delete_organization(org, _event(principal, org, "deleted"))


def all_organizations() -> list[OrganizationModel]:
    """Every organization, by name (one Query of the directory index)."""
    return store.all_organizations()


def owners_of(org: str) -> list[UserModel]:
    """The members of an organization's owners team."""
    teams = [t for t in teams_store.teams_of(org) if t.is_owners]
    return team_members(teams)


def set_organization_admin_values(
    org: OrganizationModel, values: dict[str, Any], global_sharing: bool | None
) -> None:
    """The admin attributes of an organization (merged over what is stored)."""
    actions: list[Action] = [OrganizationModel.updated_at.set(now())]
    if values:
        merged = {**(org.admin_values or {}), **values}
        actions.append(OrganizationModel.admin_values.set(merged))
    if global_sharing is not None:
        actions.append(OrganizationModel.global_module_sharing.set(global_sharing))
    org.update(actions=actions, condition=OrganizationModel.name.exists())
    store.forget_disabled(org.name)  # this instance at once, others within the window


def set_module_consumers(org: OrganizationModel, consumers: set[str]) -> None:
    """Exactly ``consumers`` may read ``org``'s private modules (besides global sharing)."""
    action = (
        OrganizationModel.module_consumers.set(consumers)
        if consumers
        else OrganizationModel.module_consumers.remove()
    )
    org.update(actions=[action], condition=OrganizationModel.name.exists())


def forget_module_consumer(name: str) -> None:
    """Take a deleted organization out of every producer's module consumers: sharing is by
    name, and a new organization of that name must not inherit it."""
    for org in all_organizations():
        if name in (org.module_consumers or ()):
            org.update(actions=[OrganizationModel.module_consumers.delete({name})])
