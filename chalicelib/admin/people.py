"""Site administration of users and organizations (``/api/v2/admin/users``,
``/api/v2/admin/organizations``), self-hosted edition only.

Users: lists with search and filters, delete, suspend, unsuspend, grant and revoke the
site-admin flag, disable two-factor sign-in. The site keeps one active (not suspended)
site admin at least: removing, demoting or suspending the last one is a 422 that changes
nothing, a rule the accounts service keeps in its setters for every caller
(``accounts.users.service.set_site_admin``, ``set_suspended``, ``delete_user``). Suspending flags
the user and its tokens; ``core.auth`` refuses them.

Organizations: lists, the admin attributes and module sharing (module consumers, global
module sharing), which the registry protocol reads (the action ``consume`` of
``accounts.authorization``).
Deleting one is the ordinary cascade (``chalicelib.lifecycle``).

Every change records its audit event (``core.audit``) right after the accounts service made
it: a user's in the site's partition (``user``: ``deleted``, ``suspended``, ``unsuspended``,
``admin-granted``, ``admin-revoked``, ``two-factor-disabled``), an organization's admin
attributes and module sharing in that organization's (``organization``: ``updated``, the
names of the attributes changed).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from chalicelib.accounts import memberships, twofactor
from chalicelib.accounts.organizations import service as organizations_service
from chalicelib.accounts.users import service as users_service
from chalicelib.core.api.errors import NotFound, Unprocessable
from chalicelib.core.api.pagination import Page
from chalicelib.core.audit import events, trail

if TYPE_CHECKING:
    from chalicelib.accounts.organizations.store import OrganizationModel
    from chalicelib.accounts.users.store import UserModel
    from chalicelib.core.auth import Principal


# Attributes shown with their default until a site admin sets them.
ORGANIZATION_DEFAULTS: dict[str, Any] = {
    "access-beta-tools": False,
    "is-disabled": False,
    "terraform-build-worker-apply-timeout": "24h",
    "terraform-build-worker-plan-timeout": "2h",
    "terraform-worker-sudo-enabled": False,
    "workspace-limit": None,
}
# go-tfe's AdminOrganization reads and sends the worker timeouts under both these names
# (``apply-timeout``/``plan-timeout`` and the older ``terraform-build-worker-*``): one value
# each, stored under the older name and shown under both.
TIMEOUT_ALIASES = {
    "apply-timeout": "terraform-build-worker-apply-timeout",
    "plan-timeout": "terraform-build-worker-plan-timeout",
}


def _flag(query: dict[str, str], name: str) -> bool | None:
    """``filter[...]`` as ``true``/``false`` (absent or empty: no filter), else a 422."""
    raw = query.get(name)
    if raw is None or raw == "":
        return None
    if raw.lower() in ("true", "false"):
        return raw.lower() == "true"
    raise Unprocessable(f"{name} must be true or false, not {raw!r}", parameter=name)


# ----- users ------------------------------------------------------------------------------------


def list_users(query: dict[str, str], page: Page) -> tuple[list[UserModel], int]:
    """One page of the users matching ``q`` (the start of a username, or a whole email
    address, any case), ``filter[admin]`` and ``filter[suspended]``, by username, and how
    many match (read on the user directory index: ``accounts.users.service.page_users``)."""
    admin = _flag(query, "filter[admin]")
    suspended = _flag(query, "filter[suspended]")
    return users_service.page_users(page, query.get("q") or "", admin, suspended)


def list_users_and_invitees(
    query: dict[str, str], page: Page
) -> tuple[list[UserModel | memberships.Invitee], int]:
    """``list_users``, and when ``q`` is a whole email address, after its users the people
    invited as that address who have no user yet (TFE has made theirs; none is an admin or
    suspended, so ``filter[admin]``/``filter[suspended]`` = true leave them out)."""
    users, total = list_users(query, page)
    term = query.get("q") or ""
    if "@" not in term or _flag(query, "filter[admin]") or _flag(query, "filter[suspended]"):
        return list(users), total
    invitees = memberships.invitees_with_email(term)
    start = max(0, page.offset - total)
    room = page.size - len(users)
    return [*users, *invitees[start : start + room]], total + len(invitees)


def organizations_of(user: UserModel) -> list[str]:
    return user.organizations()


def _user_changed(principal: Principal, user: UserModel, action: str) -> None:
    """Record a site admin's change to ``user`` (made just now)."""
    event = events.event(
        principal,
        organization=None,
        resource_type="user",
        resource_id=user.id,
        action=action,
        meta={"username": user.username},
    )
    trail.record(event)


def delete_user(principal: Principal, user_id: str) -> None:
    """Delete a user, or a person invited by email who has no user yet (their invitations:
    ``memberships.withdraw_invitee``)."""
    if memberships.withdraw_invitee(user_id):
        event = events.event(
            principal,
            organization=None,
            resource_type="user",
            resource_id=user_id,
            action="deleted",
            meta={"invitee": True},
        )
        trail.record(event)
        return
    user = users_service.get_user(user_id)
    users_service.delete_user(user)
    _user_changed(principal, user, "deleted")


def suspend(principal: Principal, user_id: str) -> UserModel:
    user = users_service.get_user(user_id)
    users_service.set_suspended(user.id, True)
    _user_changed(principal, user, "suspended")
    return users_service.get_user(user.id)


def unsuspend(principal: Principal, user_id: str) -> UserModel:
    user = users_service.get_user(user_id)
    users_service.set_suspended(user.id, False)
    _user_changed(principal, user, "unsuspended")
    return users_service.get_user(user.id)


def grant_admin(principal: Principal, user_id: str) -> UserModel:
    user = users_service.get_user(user_id)
    users_service.set_site_admin(user.id, True)
    _user_changed(principal, user, "admin-granted")
    return users_service.get_user(user.id)


def revoke_admin(principal: Principal, user_id: str) -> UserModel:
    user = users_service.get_user(user_id)
    users_service.set_site_admin(user.id, False)
    _user_changed(principal, user, "admin-revoked")
    return users_service.get_user(user.id)


def grant_auditor(principal: Principal, user_id: str) -> UserModel:
    """Make a user a site auditor: they read the site's audit trail, nothing else of site
    administration."""
    return users_service.set_site_auditor(principal, user_id, True)


def revoke_auditor(principal: Principal, user_id: str) -> UserModel:
    return users_service.set_site_auditor(principal, user_id, False)


def disable_two_factor(principal: Principal, user_id: str) -> UserModel:
    """Turn a user's two-factor sign-in off (they lost their device and recovery codes)."""
    user = users_service.get_user(user_id)
    twofactor.disable(user.id)
    _user_changed(principal, user, "two-factor-disabled")
    return users_service.get_user(user.id)


# ----- organizations ----------------------------------------------------------------------------


def get_organization(name: str) -> OrganizationModel:
    org = organizations_service.get_organization(name)
    if org is None:
        raise NotFound(f"organization {name!r} not found")
    return org


def organization_values(org: OrganizationModel) -> dict[str, Any]:
    values = {**ORGANIZATION_DEFAULTS, **(org.admin_values or {})}
    return {**values, **{alias: values[name] for alias, name in TIMEOUT_ALIASES.items()}}


def list_organizations(query: dict[str, str]) -> list[OrganizationModel]:
    """Every organization matching ``q`` (a part of its name or notification email) and
    ``filter[module_producer]`` (whether it shares its modules with anyone)."""
    producer = _flag(query, "filter[module_producer]")
    term = (query.get("q") or "").strip().casefold()
    found = []
    for org in organizations_service.all_organizations():
        if term and term not in org.name.casefold() and term not in org.email.casefold():
            continue
        if producer is not None and is_module_producer(org) != producer:
            continue
        found.append(org)
    return found


def is_module_producer(org: OrganizationModel) -> bool:
    return bool(org.global_module_sharing or org.module_consumers)


def _organization_changed(principal: Principal, name: str, changed: list[str]) -> None:
    """Record a site admin's change to the organization's admin attributes (made just now),
    in the organization's partition."""
    event = events.event(
        principal,
        organization=name,
        resource_type="organization",
        resource_id=name,
        action="updated",
        meta={"changed": changed},
    )
    trail.record(event)


def update_organization(
    principal: Principal, name: str, changes: dict[str, Any]
) -> OrganizationModel:
    """Store the attributes a request sets (kebab names, nulls dropped)."""
    org = get_organization(name)
    before = {**organization_values(org), "global-module-sharing": org.global_module_sharing}
    for alias, stored in TIMEOUT_ALIASES.items():
        value = changes.pop(alias, None)
        if value is not None and changes.setdefault(stored, value) != value:
            raise Unprocessable(
                f"{alias} and {stored} are the same timeout: give one value",
                pointer=f"/data/attributes/{alias}",
            )
    sharing = changes.pop("global-module-sharing", None)
    organizations_service.set_organization_admin_values(org, changes, sharing)
    updated = get_organization(name)
    after = {**organization_values(updated), "global-module-sharing": updated.global_module_sharing}
    _organization_changed(principal, name, trail.changed(before, after))
    return updated


def set_module_consumers(
    principal: Principal, name: str, data: Iterable[dict[str, Any]]
) -> OrganizationModel:
    """Make exactly the organizations named in ``data`` the consumers of ``name``'s
    modules; each must exist (422 naming the element, nothing changed)."""
    org = get_organization(name)
    consumers: set[str] = set()
    for index, item in enumerate(data):
        consumer = item.get("id")
        if not isinstance(consumer, str) or not consumer:
            raise Unprocessable("id must be an organization name", pointer=f"/data/{index}/id")
        if consumer == name:
            raise Unprocessable(
                "an organization cannot consume its own modules", pointer=f"/data/{index}/id"
            )
        if consumer not in consumers and organizations_service.get_organization(consumer) is None:
            raise Unprocessable(f"organization {consumer!r} not found", pointer=f"/data/{index}/id")
        consumers.add(consumer)
    organizations_service.set_module_consumers(org, consumers)
    _organization_changed(principal, name, ["module-consumers"])
    return get_organization(name)


def set_module_consumers_by_external_id(
    principal: Principal, name: str, external_ids: list[str]
) -> OrganizationModel:
    """``set_module_consumers`` for consumers named by ``external-id`` (the deprecated
    Admin Module Sharing API): each must exist (422 naming the element, nothing changed)."""
    found = organizations_service.organizations_by_external_id(set(external_ids))
    named = []
    for index, external_id in enumerate(external_ids):
        if external_id not in found:
            raise Unprocessable(
                f"organization {external_id!r} not found",
                pointer=f"/data/attributes/module-consuming-organization-ids/{index}",
            )
        named.append({"id": found[external_id].name})
    return set_module_consumers(principal, name, named)


def module_consumers(name: str) -> list[OrganizationModel]:
    """The organizations that consume ``name``'s modules (those still existing), by name."""
    org = get_organization(name)
    found = [organizations_service.get_organization(n) for n in sorted(org.module_consumers or ())]
    return [o for o in found if o is not None]
