"""The organizations table: its model, every read of it, its conditional writes, and what
this instance knows of which organizations a site admin disabled."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pynamodb.attributes import (
    BooleanAttribute,
    JSONAttribute,
    UnicodeAttribute,
    UnicodeSetAttribute,
    UTCDateTimeAttribute,
)
from pynamodb.exceptions import TransactWriteError
from pynamodb.indexes import AllProjection, GlobalSecondaryIndex
from pynamodb.transactions import TransactWrite

from chalicelib.accounts.teams.store import TeamModel
from chalicelib.accounts.users.store import UserModel
from chalicelib.core.audit import trail
from chalicelib.core.auth import TtlCache
from chalicelib.core.data import db
from chalicelib.core.settings import get_settings

if TYPE_CHECKING:
    from pynamodb.expressions.update import Action

    from chalicelib.core.audit.events import Event

DIRECTORY = "organizations"


class OrganizationDirectory(GlobalSecondaryIndex):
    """Every organization under one constant key, so listing all of them is a Query."""

    class Meta:
        index_name = "directory"
        projection = AllProjection()

    directory = UnicodeAttribute(hash_key=True)
    name = UnicodeAttribute(range_key=True)


@db.register
class OrganizationModel(db.Model):
    Meta = db.table("organizations")

    name = UnicodeAttribute(hash_key=True)
    external_id = UnicodeAttribute()
    email = UnicodeAttribute()
    directory = UnicodeAttribute(default=DIRECTORY)
    collaborator_auth_policy = UnicodeAttribute(default="password")
    cost_estimation_enabled = BooleanAttribute(default=False)
    session_timeout = UnicodeAttribute(null=True)
    # The organization's single token: its id and the hash it is stored under.
    token_id = UnicodeAttribute(null=True)
    token_hash = UnicodeAttribute(null=True)
    # Its audit trail token (HCP's ``audit-trails`` token type: reads the audit trail only).
    audit_token_id = UnicodeAttribute(null=True)
    audit_token_hash = UnicodeAttribute(null=True)
    created_at = UTCDateTimeAttribute()
    updated_at = UTCDateTimeAttribute()
    # Module sharing (site admins set it, chalicelib.admin): the organizations that may read
    # this one's private modules through the registry protocol, or every one of them.
    module_consumers = UnicodeSetAttribute(null=True)
    global_module_sharing = BooleanAttribute(null=True)
    # The other attributes the admin API sets and shows (kebab names: access-beta-tools,
    # is-disabled, the worker timeouts ...).
    admin_values = JSONAttribute(null=True)
    by_directory = OrganizationDirectory()


def get_organization(name: str) -> OrganizationModel | None:
    try:
        return OrganizationModel.get(name)
    except OrganizationModel.DoesNotExist:
        return None


# organization name -> whether a site admin disabled it (``is-disabled``), for the token
# cache's window: ``accounts.authorization.refuse_disabled`` reads it on every organization
# access.
_disabled = TtlCache(lambda: get_settings().token_cache_ttl)


def is_disabled(org: OrganizationModel | None) -> bool:
    return bool(org is not None and (org.admin_values or {}).get("is-disabled"))


def known_disabled(name: str) -> bool | None:
    """Whether ``name`` is disabled as this instance last read it (None: not known)."""
    return _disabled.get(name)


def note_disabled(name: str, org: OrganizationModel | None) -> bool:
    """Remember what an organization item just read says (a missing one: not disabled)."""
    flag = is_disabled(org)
    _disabled.put(name, flag)
    return flag


def forget_disabled(name: str) -> None:
    _disabled.forget(name)


def insert_organization(
    org: OrganizationModel, owners: TeamModel, owner_id: str, event: Event
) -> bool:
    """Save a new organization with its owners team, the user ``owner_id`` its member (both
    sides: ``teams.store.add_team_members``) and the audit ``event``, in one transaction;
    False when its name (the key) is already taken (nothing is written)."""
    owners.user_ids = {owner_id}
    ref = f"{org.name}/{owners.id}"
    try:
        with TransactWrite(connection=db.connection()) as tx:
            tx.save(org, condition=OrganizationModel.name.does_not_exist())
            tx.save(owners, condition=TeamModel.id.does_not_exist())
            tx.update(
                UserModel(owner_id),
                actions=[UserModel.team_refs.add({ref})],
                condition=UserModel.id.exists(),
            )
            trail.record_in(tx, event)
    except TransactWriteError as exc:  # sent as: the organization, the team, the user, the event
        if db.cancellation_codes(exc)[:1] == [db.TRANSACTION_CONDITION_FAILED]:
            return False
        raise
    return True


def update_organization(org: OrganizationModel, actions: list[Action], event: Event) -> None:
    """Change an existing organization with its audit ``event``, in one transaction."""
    with TransactWrite(connection=db.connection()) as tx:
        tx.update(org, actions=actions, condition=OrganizationModel.name.exists())
        trail.record_in(tx, event)


def delete_organization(org: OrganizationModel, event: Event) -> None:
    """Delete the organization's item with its audit ``event`` (the last step of deleting
    it), in one transaction."""
    with TransactWrite(connection=db.connection()) as tx:
        tx.delete(org)
        trail.record_in(tx, event)


def organization_exists(name: str) -> bool:
    """Whether an organization of that name exists (a Query of its key, no item read)."""
    return bool(OrganizationModel.count(name, limit=1))


def all_organizations() -> list[OrganizationModel]:
    """Every organization, by name (one Query of the directory index)."""
    return list(OrganizationModel.by_directory.query(DIRECTORY))


def organizations_named(names: list[str]) -> list[OrganizationModel]:
    """The organizations of those names that exist (one BatchGetItem), by name."""
    found = OrganizationModel.batch_get(names) if names else []
    return sorted(found, key=lambda org: org.name)


def external_id_of(name: str) -> str | None:
    """The ``org-`` id of the organization of that name (None: none), reading only it."""
    try:
        return OrganizationModel.get(name, attributes_to_get=["external_id"]).external_id
    except OrganizationModel.DoesNotExist:
        return None


def organizations_with_external_ids(external_ids: set[str]) -> list[OrganizationModel]:
    """The organizations whose ``external-id`` is among ``external_ids``: the directory
    index read with a filter."""
    condition = OrganizationModel.external_id.is_in(*external_ids)
    return list(OrganizationModel.by_directory.query(DIRECTORY, filter_condition=condition))
