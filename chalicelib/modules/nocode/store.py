"""PynamoDB model of no-code modules, and every write on them.

A no-code module item is keyed by its id (``nocode-...``): a read, update or delete by id is
one GetItem/UpdateItem/DeleteItem.

A registry module has at most one no-code module: the module item carries its id
(``ModuleModel.no_code_module_id``), set in the same transaction that puts the no-code item,
on the condition that the module exists and has none, and cleared in the transaction that
deletes it. So "the no-code module of module X" costs no read at all beyond the module item
every request reads anyway: its ``no-code-modules`` relationship is rendered from it, and a
deleted module's no-code module is deleted by that id. The ``by-module`` index (organization,
registry module id) finds every no-code module of an organization with one Query (the
organization's cascade), or those of one module with one Query on both keys.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import Any

from pynamodb.attributes import (
    BooleanAttribute,
    ListAttribute,
    MapAttribute,
    UnicodeAttribute,
    UTCDateTimeAttribute,
)
from pynamodb.exceptions import DeleteError, TransactWriteError
from pynamodb.indexes import AllProjection, GlobalSecondaryIndex
from pynamodb.transactions import TransactWrite

from chalicelib.core.audit import trail
from chalicelib.core.audit.events import Event
from chalicelib.core.data import db
from chalicelib.modules.store import ModuleModel

log = logging.getLogger("registry.nocode")


class VariableOptionAttribute(MapAttribute):
    """The allowed values of one of the module's variables (``variable-options``)."""

    id = UnicodeAttribute()
    name = UnicodeAttribute()
    type = UnicodeAttribute()
    options = ListAttribute(of=UnicodeAttribute, default=list)


class NoCodeByModule(GlobalSecondaryIndex):
    class Meta:
        index_name = "by-module"
        projection = AllProjection()

    organization = UnicodeAttribute(hash_key=True)
    registry_module_id = UnicodeAttribute(range_key=True)


@db.register
class NoCodeModuleModel(db.Model):
    Meta = db.table("no-code-modules")

    id = UnicodeAttribute(hash_key=True)
    organization = UnicodeAttribute()
    registry_module_id = UnicodeAttribute()
    # The registry module item's range key (its hash key is the organization).
    module_key = UnicodeAttribute()
    # None: no pin (provisioning would take the latest version); "latest"; or a version.
    version_pin = UnicodeAttribute(null=True)
    enabled = BooleanAttribute(default=True)
    variable_options = ListAttribute(of=VariableOptionAttribute, default=list)
    created_at = UTCDateTimeAttribute()
    updated_at = UTCDateTimeAttribute()
    by_module = NoCodeByModule()


class ModuleUnavailable(Exception):
    """The registry module is gone, or has a no-code module already."""


class NoCodeGone(Exception):
    """The no-code module was deleted meanwhile."""


def get(no_code_id: str) -> NoCodeModuleModel | None:
    try:
        return NoCodeModuleModel.get(no_code_id)
    except NoCodeModuleModel.DoesNotExist:
        return None


def batch_get(ids: Iterable[str]) -> dict[str, NoCodeModuleModel]:
    wanted = list(dict.fromkeys(ids))
    if not wanted:
        return {}
    return {item.id: item for item in NoCodeModuleModel.batch_get(wanted)}


def of_organization(organization: str) -> list[NoCodeModuleModel]:
    return list(NoCodeModuleModel.by_module.query(organization))


def insert(item: NoCodeModuleModel, module: ModuleModel, event: Event) -> None:
    """The no-code item and the module's pointer to it, with its audit ``event``, in one
    transaction, only while the module exists and has no no-code module
    (``ModuleUnavailable`` otherwise)."""
    try:
        with TransactWrite(connection=db.connection()) as tx:
            tx.save(item, condition=NoCodeModuleModel.id.does_not_exist())
            tx.update(
                module,
                actions=[ModuleModel.no_code_module_id.set(item.id)],
                condition=(ModuleModel.id == module.id)
                & ModuleModel.no_code_module_id.does_not_exist(),
            )
            trail.record_in(tx, event)
    except TransactWriteError as exc:
        if db.TRANSACTION_CONDITION_FAILED in db.cancellation_codes(exc)[1:2]:
            raise ModuleUnavailable from None
        raise


def update(item: NoCodeModuleModel, actions: list[Any], event: Event) -> None:
    """Apply ``actions`` with the audit ``event``, in one transaction (the item is read back
    in place); ``NoCodeGone`` when deleted."""
    try:
        with TransactWrite(connection=db.connection()) as tx:
            tx.update(item, actions=actions, condition=NoCodeModuleModel.id.exists())
            trail.record_in(tx, event)
    except TransactWriteError as exc:
        if db.cancellation_codes(exc)[:1] == [db.TRANSACTION_CONDITION_FAILED]:
            raise NoCodeGone from None
        raise
    item.refresh(consistent_read=True)


def delete(item: NoCodeModuleModel, event: Event) -> None:
    """Delete the item and clear the module's pointer, with the audit ``event``, in one
    transaction; when the module is gone (or points elsewhere) the item alone, with the
    event. ``NoCodeGone`` when it was deleted."""
    module = ModuleModel(item.organization, item.module_key)
    try:
        with TransactWrite(connection=db.connection()) as tx:
            tx.delete(item, condition=NoCodeModuleModel.id.exists())
            tx.update(
                module,
                actions=[ModuleModel.no_code_module_id.remove()],
                condition=ModuleModel.no_code_module_id == item.id,
            )
            trail.record_in(tx, event)
    except TransactWriteError as exc:
        reasons = db.cancellation_codes(exc)
        if reasons[:1] == [db.TRANSACTION_CONDITION_FAILED]:
            raise NoCodeGone from None
        if reasons[1:2] != [db.TRANSACTION_CONDITION_FAILED]:
            raise
    else:
        return
    try:
        with TransactWrite(connection=db.connection()) as tx:
            tx.delete(item, condition=NoCodeModuleModel.id.exists())
            trail.record_in(tx, event)
    except TransactWriteError as exc:
        if db.cancellation_codes(exc)[:1] == [db.TRANSACTION_CONDITION_FAILED]:
            raise NoCodeGone from None
        raise


def delete_items(items: Iterable[NoCodeModuleModel]) -> None:
    """Delete no-code items whose registry modules are gone (no pointer left to clear)."""
    for item in items:
        _delete_item(item)


def delete_ids(ids: Iterable[str]) -> None:
    """Delete no-code items by id, whether or not they still exist."""
    for no_code_id in ids:
        NoCodeModuleModel(no_code_id).delete()


def _delete_item(item: NoCodeModuleModel) -> None:
    try:
        item.delete(condition=NoCodeModuleModel.id.exists())
    except DeleteError as exc:
        if not db.conditional_failure(exc):
            raise
        log.info("no-code module %s was already gone", item.id)
