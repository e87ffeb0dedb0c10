"""PynamoDB models of registry modules and module versions.

A module item is keyed by organization and ``<registry>#<namespace>#<name>#<provider>``, so
one Query lists an organization's modules and a ``begins_with`` finds every provider of a
name. Versions live one item each in the module's partition, ordered by a SemVer sort key.
The module keeps ``version_statuses`` (version -> status, error, deprecation, revocation) so
reads of a module (and the registry protocol's version lists) never touch the versions table.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from datetime import datetime
from typing import Any

from pynamodb.attributes import (
    BooleanAttribute,
    JSONAttribute,
    MapAttribute,
    NumberAttribute,
    UnicodeAttribute,
    UTCDateTimeAttribute,
)
from pynamodb.exceptions import DeleteError, PutError, TransactWriteError, UpdateError
from pynamodb.expressions.condition import size
from pynamodb.indexes import AllProjection, GlobalSecondaryIndex
from pynamodb.transactions import TransactWrite

from chalicelib.core import db
from chalicelib.core.ids import iso
from chalicelib.core.tagbindings import TagBindingsAttribute
from chalicelib.registry.statuses import ModuleStatus, VersionStatus

log = logging.getLogger("registry.store")


def module_key(registry: str, namespace: str, name: str, provider: str) -> str:
    return f"{registry}#{namespace}#{name}#{provider}"


def name_prefix(registry: str, namespace: str, name: str) -> str:
    return f"{registry}#{namespace}#{name}#"


class ModuleById(GlobalSecondaryIndex):
    class Meta:
        index_name = "by-id"
        projection = AllProjection()

    id = UnicodeAttribute(hash_key=True)


class ModuleByWebhook(GlobalSecondaryIndex):
    """Sparse: only VCS-backed modules have a webhook id."""

    class Meta:
        index_name = "by-webhook"
        projection = AllProjection()

    webhook_id = UnicodeAttribute(hash_key=True)


@db.register
class ModuleModel(db.Model):
    Meta = db.table("registry-modules")

    organization = UnicodeAttribute(hash_key=True)
    key = UnicodeAttribute(range_key=True)
    id = UnicodeAttribute()
    registry_name = UnicodeAttribute()
    namespace = UnicodeAttribute()
    name = UnicodeAttribute()
    provider = UnicodeAttribute()
    status = UnicodeAttribute(default=str(ModuleStatus.PENDING))
    publishing_mechanism = UnicodeAttribute(default="non_vcs")
    no_code = BooleanAttribute(default=False)
    test_config = JSONAttribute(null=True)
    # version -> {"status": ..., "error": ...}; updated with per-key SET/REMOVE so concurrent
    # writers of different versions never overwrite each other.
    version_statuses = MapAttribute(default=dict)
    # VCS-backed modules only: the repository settings (chalicelib.registry.publishing.service), the
    # webhook id in the webhook URL, its KMS-sealed secret, the webhook's registration at
    # the VCS host (status, the host's hook id, the URL registered) and the last tag sync's
    # report.
    vcs_repo = JSONAttribute(null=True)
    webhook_id = UnicodeAttribute(null=True)
    webhook_secret = JSONAttribute(null=True)
    webhook_registration = JSONAttribute(null=True)
    vcs_sync = JSONAttribute(null=True)
    # Key/value tag bindings (chalicelib.core.tagbindings), replaced by the module's PATCH.
    tag_bindings = TagBindingsAttribute()
    # The module's no-code module (chalicelib.registry.nocode): set and cleared only in the
    # transactions that create and delete it, which is what keeps it to one per module; reads
    # of the module render the ``no-code-modules`` relationship from it without another read.
    no_code_module_id = UnicodeAttribute(null=True)
    created_at = UTCDateTimeAttribute()
    updated_at = UTCDateTimeAttribute()
    by_id = ModuleById()
    by_webhook = ModuleByWebhook()

    def statuses(self) -> dict[str, dict[str, Any]]:
        """version -> {"status", "error"?, "published-at"?, "deprecation"?, "revocation"?} as a
        plain dict (the last two are maps of strings)."""
        return self.version_statuses.as_dict() if self.version_statuses else {}


@db.register
class ModuleVersionModel(db.Model):
    Meta = db.table("registry-module-versions")

    module_id = UnicodeAttribute(hash_key=True)
    order_key = UnicodeAttribute(range_key=True)
    id = UnicodeAttribute()
    version = UnicodeAttribute()
    status = UnicodeAttribute(default=str(VersionStatus.PENDING))
    error = UnicodeAttribute(null=True)
    source = UnicodeAttribute(default="tfe-api")
    commit_sha = UnicodeAttribute(null=True)
    tag = UnicodeAttribute(null=True)
    organization = UnicodeAttribute()
    module_key = UnicodeAttribute()
    upload_key = UnicodeAttribute()
    archive_key = UnicodeAttribute(null=True)
    metadata_key = UnicodeAttribute(null=True)
    sha256 = UnicodeAttribute(null=True)
    size = NumberAttribute(null=True)
    # Lifecycle of an ok version (chalicelib.registry.service.change_version_lifecycle), also
    # kept in its entry of the module's ``version_statuses`` for the registry protocol:
    # {"id", "deprecated-status", "reason"?, "link"?} and {"status", "message"?, "link"?}.
    deprecation = JSONAttribute(null=True)
    revocation = JSONAttribute(null=True)
    created_at = UTCDateTimeAttribute()
    updated_at = UTCDateTimeAttribute()


# ----- writes: every condition and transaction of the registry ------------------------------


class ModuleGone(Exception):
    """The module item was deleted while it was being written."""


class ModuleTaken(Exception):
    """A module with that registry, namespace, name and provider exists."""


class VersionTaken(Exception):
    """The module has that version already."""


class VersionChanged(Exception):
    """The version item was deleted, left ``ok`` or was changed since it was read."""


def insert_module(module: ModuleModel) -> None:
    try:
        module.save(condition=ModuleModel.key.does_not_exist())
    except PutError as exc:
        if db.conditional_failure(exc):
            raise ModuleTaken from None
        raise


def update_module(module: ModuleModel, actions: list[Any]) -> None:
    """Apply ``actions`` to a module that still exists (the same one: same id)."""
    try:
        module.update(actions=actions, condition=ModuleModel.id == module.id)
    except UpdateError as exc:
        if db.conditional_failure(exc):
            raise ModuleGone from None
        raise


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


def insert_version(module: ModuleModel, item: ModuleVersionModel, moment: datetime) -> None:
    """The version item and its ``pending`` entry in the module's statuses, in one
    transaction: ``VersionTaken`` or ``ModuleGone`` when a condition fails."""
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
) -> bool:
    """The status on the version item and in the module's statuses, in one transaction (an
    ok version also makes the module ``setup_complete``); False if either item is gone. The
    entry is written whole: a deprecation or revocation the version carries is kept in it."""
    entry: dict[str, Any] = {"status": str(status), **({"error": error} if error else {})}
    if status == VersionStatus.OK:
        entry["published-at"] = iso(moment)
        # Where the archive is, beside its status: a download reads the module item only.
        archive = (fields or {}).get("archive_key") or version.archive_key
        if archive:
            entry["archive"] = archive
    for key in ("deprecation", "revocation"):
        if getattr(version, key, None):
            entry[key] = getattr(version, key)
    actions = [
        ModuleVersionModel.status.set(str(status)),
        ModuleVersionModel.updated_at.set(moment),
        ModuleVersionModel.error.set(error) if error else ModuleVersionModel.error.remove(),
    ]
    for name, value in (fields or {}).items():
        actions.append(getattr(ModuleVersionModel, name).set(value))
    module = ModuleModel(version.organization, version.module_key)
    module_actions = [
        ModuleModel.version_statuses[version.version].set(entry),
        ModuleModel.updated_at.set(moment),
    ]
    if status == VersionStatus.OK:
        module_actions.append(ModuleModel.status.set(str(ModuleStatus.SETUP_COMPLETE)))
    try:
        with TransactWrite(connection=db.connection()) as tx:
            tx.update(version, actions=actions, condition=ModuleVersionModel.id == version.id)
            tx.update(module, actions=module_actions, condition=ModuleModel.id == version.module_id)
    except TransactWriteError as exc:
        if db.TRANSACTION_CONDITION_FAILED in db.cancellation_codes(exc):
            return False
        raise
    return True


def record_version_lifecycle(
    version: ModuleVersionModel,
    deprecation: dict[str, str] | None,
    revocation: dict[str, str] | None,
    moment: datetime,
) -> None:
    """A version's deprecation and revocation (``None``: none) on the version item and in its
    entry of the module's statuses (per key: the entry's status is left alone), in one
    transaction, only while the version is the ``ok`` one that was read, unchanged since
    (``VersionChanged``: read it again and decide again), and the module still lists it
    (``ModuleGone``)."""

    def assign(path: Any, value: dict[str, str] | None) -> Any:
        return path.set(value) if value else path.remove()

    entry = ModuleModel.version_statuses[version.version]
    module = ModuleModel(version.organization, version.module_key)
    try:
        with TransactWrite(connection=db.connection()) as tx:
            tx.update(
                version,
                actions=[
                    assign(ModuleVersionModel.deprecation, deprecation),
                    assign(ModuleVersionModel.revocation, revocation),
                    ModuleVersionModel.updated_at.set(moment),
                ],
                condition=(ModuleVersionModel.id == version.id)
                & (ModuleVersionModel.status == str(VersionStatus.OK))
                & (ModuleVersionModel.updated_at == version.updated_at),
            )
            tx.update(
                module,
                actions=[
                    assign(entry["deprecation"], deprecation),
                    assign(entry["revocation"], revocation),
                    ModuleModel.updated_at.set(moment),
                ],
                condition=(ModuleModel.id == version.module_id) & entry.exists(),
            )
    except TransactWriteError as exc:
        reasons = db.cancellation_codes(exc)
        if reasons[:1] == [db.TRANSACTION_CONDITION_FAILED]:
            raise VersionChanged from None
        if reasons[1:2] == [db.TRANSACTION_CONDITION_FAILED]:
            raise ModuleGone from None
        raise


def delete_version(module: ModuleModel, version: ModuleVersionModel, moment: datetime) -> bool:
    """Delete the version and its status entry; the last version takes its module with it
    (a concurrent new version keeps it alive). True when the module went too."""
    with TransactWrite(connection=db.connection()) as tx:
        tx.delete(version)
        tx.update(
            module,
            actions=[
                ModuleModel.version_statuses[version.version].remove(),
                ModuleModel.updated_at.set(moment),
            ],
        )
    try:
        module.delete(condition=size(ModuleModel.version_statuses) == 0)
    except DeleteError as exc:
        if not db.conditional_failure(exc):
            raise
        return False
    return True


def delete_module(module: ModuleModel) -> list[ModuleVersionModel]:
    """Delete the module item first (it disappears from every read), then its versions;
    returns the versions (their objects are the caller's to delete)."""
    try:
        module.delete()
    except DeleteError:
        log.warning("module %s was already gone", module.id)
    versions = list(ModuleVersionModel.query(module.id))
    with ModuleVersionModel.batch_write() as batch:
        for version in versions:
            batch.delete(version)
    return versions
