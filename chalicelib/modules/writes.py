"""Every write of the registry's modules and versions: each condition and transaction.

A version's status, lifecycle and deletion are written on the version item and in its entry
of the module's ``version_statuses`` in one transaction; what the protocol's list and the
module's ``latest_summary`` show follows in ``store.refresh_listing``. A module is created
and deleted with its organization's count and its protocol list entry in one transaction.

Every change a person or a worker makes is written with its audit ``event`` in the change's
own transaction (``core.audit.trail.record_in``, added last: the change's items keep their
places in a cancellation's reasons): the change and its event succeed or fail together. What
the registry derives (the protocol's list, ``latest_summary``) and a worker's progress marks
(``reg_ingressing`` before an archive is read, ``cloning``) carry none.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import Any

from pynamodb.exceptions import TransactWriteError, UpdateError
from pynamodb.expressions.condition import size
from pynamodb.expressions.update import Action
from pynamodb.transactions import TransactWrite

from chalicelib.artifacts.statuses import VersionStatus
from chalicelib.core import observe
from chalicelib.core.audit import trail
from chalicelib.core.audit.events import Event
from chalicelib.core.data import db
from chalicelib.core.data.ids import iso
from chalicelib.modules.statuses import ModuleStatus, deadline_due
from chalicelib.modules.store import (
    DUE,
    ModuleModel,
    ModuleVersionModel,
    count_module,
    deprecation_order,
    protocol_entry,
    protocol_item,
    refresh_listing,
    versions_of,
)
from chalicelib.trust.findings import entry_summary

log = logging.getLogger("registry.store")


class ModuleGone(Exception):
    """The module item was deleted while it was being written."""


class ModuleTaken(Exception):
    """A module with that registry, namespace, name and provider exists."""


class VersionTaken(Exception):
    """The module has that version already."""


class VersionChanged(Exception):
    """The version item was deleted, left ``ok`` or was changed since it was read."""


def insert_module(module: ModuleModel, event: Event, companions: Sequence[db.Model] = ()) -> None:
    """The module and one more in its organization's count, with its audit ``event``, in one
    transaction (a curated public module is listed by the protocol from the start).
    ``companions``: new items written with it (a no-code module), under fresh random ids, so
    they need no condition of their own: the module's decides for all."""
    try:
        with TransactWrite(connection=db.connection()) as tx:
            tx.save(module, condition=ModuleModel.key.does_not_exist())
            count_module(tx, module, 1)
            if module.registry_name == "public":
                tx.save(protocol_item(module, protocol_entry(module)))
            for item in companions:
                tx.save(item)
            trail.record_in(tx, event)
    except TransactWriteError as exc:
        if db.cancellation_codes(exc)[:1] == [db.TRANSACTION_CONDITION_FAILED]:
            raise ModuleTaken from None
        raise


def _delete_counted(module: ModuleModel, condition: Any, event: Event | None) -> bool:
    """Delete the module under ``condition`` and count one less, with its audit ``event``
    (None: an organization's deletion takes it, which is that deletion's event), in one
    transaction; False when the condition failed (gone already, or not deletable)."""
    try:
        with TransactWrite(connection=db.connection()) as tx:
            tx.delete(module, condition=condition)
            count_module(tx, module, -1)
            tx.delete(protocol_item(module, None))
            if event is not None:
                trail.record_in(tx, event)
    except TransactWriteError as exc:
        if db.cancellation_codes(exc)[:1] == [db.TRANSACTION_CONDITION_FAILED]:
            return False
        raise
    return True


def record_description(version: ModuleVersionModel, description: str) -> bool:
    """Set the description of a version ingested before they were kept (the backfill), only
    while it is the same version and has none; False otherwise."""
    try:
        version.update(
            actions=[ModuleVersionModel.description.set(description)],
            condition=(ModuleVersionModel.id == version.id)
            & ModuleVersionModel.description.does_not_exist(),
        )
    except UpdateError as exc:
        if db.conditional_failure(exc):
            return False
        raise
    return True


def update_module(
    module: ModuleModel, actions: list[Any], event: Event, *, read_back: bool = True
) -> None:
    """Apply ``actions`` to a module that still exists (the same one: same id), with its
    audit ``event``, in one transaction; then the item is read back (one GetItem, as an
    UpdateItem would return it), unless ``read_back`` is False (a worker's write)."""
    try:
        with TransactWrite(connection=db.connection()) as tx:
            tx.update(module, actions=actions, condition=ModuleModel.id == module.id)
            trail.record_in(tx, event)
    except TransactWriteError as exc:
        if db.cancellation_codes(exc)[:1] == [db.TRANSACTION_CONDITION_FAILED]:
            raise ModuleGone from None
        raise
    if read_back:
        module.refresh(consistent_read=True)


def update_module_if(module: ModuleModel, actions: list[Any], allowed: Iterable[str]) -> bool:
    """Apply ``actions`` only while the module exists with a status in ``allowed``."""
    statuses = [str(status) for status in allowed]
    try:
        module.update(
            actions=actions,
            condition=(ModuleModel.id == module.id) & ModuleModel.status.is_in(*statuses),
        )
    except UpdateError as exc:
        if db.conditional_failure(exc):
            return False
        raise
    return True


def insert_version(
    module: ModuleModel, item: ModuleVersionModel, moment: datetime, event: Event
) -> None:
    """The version item and its ``pending`` entry in the module's statuses, with its audit
    ``event``, in one transaction: ``VersionTaken`` or ``ModuleGone`` when a condition
    fails."""
    entry = {"status": str(VersionStatus.PENDING)}
    try:
        with TransactWrite(connection=db.connection()) as tx:
            tx.save(item, condition=ModuleVersionModel.order_key.does_not_exist())
            tx.update(
                module,
                actions=[
                    ModuleModel.version_statuses[item.version].set(entry),
                    ModuleModel.updated_at.set(moment),
                ],
                condition=ModuleModel.id == module.id,
            )
            trail.record_in(tx, event)
    except TransactWriteError as exc:
        reasons = db.cancellation_codes(exc)
        if reasons[:1] == [db.TRANSACTION_CONDITION_FAILED]:
            raise VersionTaken from None
        if reasons[1:2] == [db.TRANSACTION_CONDITION_FAILED]:
            raise ModuleGone from None
        raise


def record_version_status(
    version: ModuleVersionModel,
    status: VersionStatus,
    moment: datetime,
    *,
    error: str | None = None,
    fields: dict[str, Any] | None = None,
    event: Event | None = None,
) -> bool:
    """The status on the version item and in the module's statuses, with its audit ``event``
    (None: a worker's progress mark, ``reg_ingressing`` or ``cloning``, which is no one's
    change), in one transaction (an ok version also makes the module ``setup_complete``);
    False if either item is gone. The entry is written whole: a deprecation, revocation or
    scan summary the version carries is kept in it."""
    return _write_status(
        version, status, moment, error, fields or {}, ModuleVersionModel.id == version.id, event
    )


def record_scan(
    version: ModuleVersionModel,
    summary: dict[str, Any],
    moment: datetime,
    event: Event,
    *,
    status: VersionStatus | None = None,
    quarantine: dict[str, Any] | None = None,
) -> bool:
    """A scan's summary (``ScanReport.summary``) on the version item (``scan``) and in its
    entry of the module's statuses (``entry_summary``), with its audit ``event``, in one
    transaction, only while the
    version is the one read, in the status read, and not scanned yet; False otherwise
    (deleted, re-created, or scanned by another delivery of the job meanwhile).

    ``status``: where a version held for its scan goes (``ok``, or ``quarantined`` with its
    ``quarantine``), written as every status is (``record_version_status``: an ok version is
    published and the protocol's list follows). Without it, the status is left alone."""
    unchanged = (
        (ModuleVersionModel.id == version.id)
        & (ModuleVersionModel.status == str(version.status))
        & ModuleVersionModel.scan_summary.does_not_exist()
    )
    if status is not None:
        fields = {"scan_summary": summary, **({"quarantine": quarantine} if quarantine else {})}
        return _write_status(version, status, moment, None, fields, unchanged, event)
    entry = ModuleModel.version_statuses[version.version]
    module = ModuleModel(version.organization, version.module_key)
    try:
        with TransactWrite(connection=db.connection()) as tx:
            tx.update(
                version, actions=[ModuleVersionModel.scan_summary.set(summary)], condition=unchanged
            )
            tx.update(
                module,
                actions=[
                    entry["scan"].set(entry_summary(summary)),
                    ModuleModel.updated_at.set(moment),
                ],
                condition=(ModuleModel.id == version.module_id) & entry.exists(),
            )
            trail.record_in(tx, event)
    except TransactWriteError as exc:
        if db.TRANSACTION_CONDITION_FAILED in db.cancellation_codes(exc):
            return False
        raise
    return True


def _write_status(
    version: ModuleVersionModel,
    status: VersionStatus,
    moment: datetime,
    error: str | None,
    fields: dict[str, Any],
    condition: Any,
    event: Event | None,
) -> bool:
    """``record_version_status``'s transaction, the version's under ``condition``."""
    entry: dict[str, Any] = {"status": str(status), **({"error": error} if error else {})}
    if status == VersionStatus.OK:
        entry["published-at"] = iso(moment)
        # Where the archive is, beside its status: a download reads the module item only.
        archive = fields.get("archive_key") or version.archive_key
        if archive:
            entry["archive"] = archive
    for key in ("deprecation", "revocation"):
        if getattr(version, key, None):
            entry[key] = getattr(version, key)
    scan = entry_summary(fields.get("scan_summary") or version.scan_summary)
    if scan:
        entry["scan"] = scan
    actions: list[Action] = [
        ModuleVersionModel.status.set(str(status)),
        ModuleVersionModel.updated_at.set(moment),
        ModuleVersionModel.error.set(error) if error else ModuleVersionModel.error.remove(),
    ]
    for name, value in fields.items():
        actions.append(getattr(ModuleVersionModel, name).set(value))
    module = ModuleModel(version.organization, version.module_key)
    module_actions: list[Action] = [
        ModuleModel.version_statuses[version.version].set(entry),
        ModuleModel.updated_at.set(moment),
    ]
    if status == VersionStatus.OK:
        module_actions.append(ModuleModel.status.set(str(ModuleStatus.SETUP_COMPLETE)))
    # Only a version becoming ok, or leaving ok, can change the protocol's list entry.
    servable_changed = VersionStatus.OK in (status, version.status)
    try:
        with TransactWrite(connection=db.connection()) as tx:
            tx.update(version, actions=actions, condition=condition)
            tx.update(module, actions=module_actions, condition=ModuleModel.id == version.module_id)
            if event is not None:
                trail.record_in(tx, event)
    except TransactWriteError as exc:
        if db.TRANSACTION_CONDITION_FAILED in db.cancellation_codes(exc):
            return False
        raise
    if servable_changed:
        refresh_listing(version.organization, version.module_key)
    return True


def record_version_lifecycle(
    version: ModuleVersionModel,
    deprecation: dict[str, str] | None,
    revocation: dict[str, str] | None,
    moment: datetime,
    event: Event,
) -> None:
    """A version's deprecation and revocation (``None``: none) on the version item and in its
    entry of the module's statuses (per key: the entry's status is left alone), and its audit
    ``event``, in one transaction, only while the version is the ``ok`` one that was read,
    unchanged since (``VersionChanged``: read it again and decide again), and the module still
    lists it (``ModuleGone``). The sparse indexes follow in the same write: ``by-deprecation``
    (``deprecation_order``) and, while a deprecation's deadline is ahead, ``by-deadline``
    (``deadline_due``: the sweep's next look, from ``moment``)."""

    def assign(path: Any, value: dict[str, str] | str | None) -> Any:
        return path.set(value) if value else path.remove()

    entry = ModuleModel.version_statuses[version.version]
    order = deprecation_order(deprecation, revocation)
    deprecated_in = version.organization if order else None
    due_at = deadline_due(deprecation, revocation, moment)
    _change_ok_entry(
        version,
        VersionStatus.OK,
        [
            assign(ModuleVersionModel.deprecation, deprecation),
            assign(ModuleVersionModel.revocation, revocation),
            assign(ModuleVersionModel.deprecated_in, deprecated_in),
            assign(ModuleVersionModel.deprecation_order, order),
            assign(ModuleVersionModel.due, DUE if due_at else None),
            assign(ModuleVersionModel.due_at, due_at),
        ],
        [assign(entry["deprecation"], deprecation), assign(entry["revocation"], revocation)],
        moment,
        event,
    )


def record_deadline_notice(version: ModuleVersionModel, due_at: str, event: Event) -> bool:
    """A deadline's notice (the sweep's ``deadline-approaching`` ``event``) and the version's
    next ``due_at``, in one transaction, only while the version is unchanged since it was
    read (``updated_at``) and still due where it was read (``due_at``): False when another
    sweep gave this notice, or a person changed the version meanwhile (read it again). The
    version's ``updated_at`` is left alone: a notice changes nothing a person set."""
    try:
        with TransactWrite(connection=db.connection()) as tx:
            tx.update(
                version,
                actions=[ModuleVersionModel.due_at.set(due_at)],
                condition=(ModuleVersionModel.id == version.id)
                & (ModuleVersionModel.updated_at == version.updated_at)
                & (ModuleVersionModel.due_at == version.due_at),
            )
            trail.record_in(tx, event)
    except TransactWriteError as exc:
        if db.cancellation_codes(exc)[:1] == [db.TRANSACTION_CONDITION_FAILED]:
            return False
        raise
    return True


def record_deprecation_order(version: ModuleVersionModel, order: str | None) -> bool:
    """Set the version's ``by-deprecation`` keys (``order``: ``deprecation_order`` of its
    deprecation and revocation) for a version deprecated before the index existed (the
    backfill), only while it is unchanged since it was read; False otherwise. Derived keys:
    no one's change, so no event. (No deadline was set before ``by-deadline`` existed: its
    keys are written with each deadline, and advanced by the sweep alone.)"""
    kept_in, kept_order = ModuleVersionModel.deprecated_in, ModuleVersionModel.deprecation_order
    actions: list[Action] = (
        [kept_in.set(version.organization), kept_order.set(order)]
        if order
        else [kept_in.remove(), kept_order.remove()]
    )
    try:
        with observe.bookkeeping():
            version.update(
                actions=actions,
                condition=(ModuleVersionModel.id == version.id)
                & (ModuleVersionModel.updated_at == version.updated_at),
            )
    except UpdateError as exc:
        if db.conditional_failure(exc):
            return False
        raise
    return True


# ----- the publishing policy's quarantine (chalicelib.trust.policy) ---------------------------


def release_version(
    version: ModuleVersionModel, quarantine: dict[str, Any], moment: datetime, event: Event
) -> None:
    """Serve a quarantined version: ``ok`` (published now) with its ``quarantine`` record
    (the release's who, when and why added), on the version item and in its entry of the
    module's statuses (the module ``setup_complete``), with its audit ``event``, in one
    transaction, only while it is the quarantined version that was read (``VersionChanged``:
    read it again and decide again) and the module still lists it (``ModuleGone``); then the
    protocol's list."""
    entry = ModuleModel.version_statuses[version.version]
    module_actions: list[Action] = [
        entry["status"].set(str(VersionStatus.OK)),
        entry["published-at"].set(iso(moment)),
        ModuleModel.status.set(str(ModuleStatus.SETUP_COMPLETE)),
    ]
    if version.archive_key:  # a download reads the module item only (``record_version_status``)
        module_actions.append(entry["archive"].set(version.archive_key))
    version_actions: list[Action] = [
        ModuleVersionModel.status.set(str(VersionStatus.OK)),
        ModuleVersionModel.quarantine.set(quarantine),
    ]
    _change_ok_entry(
        version, VersionStatus.QUARANTINED, version_actions, module_actions, moment, event
    )


def _change_ok_entry(
    version: ModuleVersionModel,
    status: VersionStatus,
    version_actions: list[Action],
    module_actions: list[Action],
    moment: datetime,
    event: Event,
) -> None:
    """A person's change of one version (its lifecycle, its release): ``version_actions`` on
    the version item, only while it is the one read, in ``status`` and unchanged since
    (``VersionChanged``), and ``module_actions`` on the module item, only while it lists the
    version (``ModuleGone``), both stamped ``moment``, with the change's audit ``event``, in
    one transaction; then the protocol's list."""
    module = ModuleModel(version.organization, version.module_key)
    try:
        with TransactWrite(connection=db.connection()) as tx:
            tx.update(
                version,
                actions=[*version_actions, ModuleVersionModel.updated_at.set(moment)],
                condition=(ModuleVersionModel.id == version.id)
                & (ModuleVersionModel.status == str(status))
                & (ModuleVersionModel.updated_at == version.updated_at),
            )
            tx.update(
                module,
                actions=[*module_actions, ModuleModel.updated_at.set(moment)],
                condition=(ModuleModel.id == version.module_id)
                & ModuleModel.version_statuses[version.version].exists(),
            )
            trail.record_in(tx, event)
    except TransactWriteError as exc:
        reasons = db.cancellation_codes(exc)
        if reasons[:1] == [db.TRANSACTION_CONDITION_FAILED]:
            raise VersionChanged from None
        if reasons[1:2] == [db.TRANSACTION_CONDITION_FAILED]:
            raise ModuleGone from None
        raise
    refresh_listing(version.organization, version.module_key)


def delete_version(
    module: ModuleModel,
    version: ModuleVersionModel,
    moment: datetime,
    event: Event,
    module_event: Event,
) -> bool:
    """Delete the version and its status entry, with its audit ``event``, in one transaction;
    the last version takes its module with it (a concurrent new version keeps it alive), with
    ``module_event``. True when the module went too."""
    with TransactWrite(connection=db.connection()) as tx:
        tx.delete(version)
        tx.update(
            module,
            actions=[
                ModuleModel.version_statuses[version.version].remove(),
                ModuleModel.updated_at.set(moment),
            ],
        )
        trail.record_in(tx, event)
    if _delete_counted(module, size(ModuleModel.version_statuses) == 0, module_event):
        return True
    refresh_listing(module.organization, module.key)
    return False


def delete_module(module: ModuleModel, event: Event | None) -> list[ModuleVersionModel]:
    """Delete the module item first (it disappears from every read), with its audit
    ``event`` (None: its organization's deletion, whose event it is), then its versions;
    returns the versions (their objects are the caller's to delete)."""
    if not _delete_counted(module, ModuleModel.id == module.id, event):
        log.warning("module %s was already gone", module.id)
    versions = versions_of(module.id)
    with ModuleVersionModel.batch_write() as batch:
        for version in versions:
            batch.delete(version)
    return versions
