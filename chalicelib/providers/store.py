"""PynamoDB models of the provider registry: GPG keys, providers, versions and platforms.

* A GPG key is keyed by its namespace (an organization) and its 16-hex-digit key id in
  upper case, so ``:namespace/:key_id`` is one GetItem and ids compare case-insensitively.
* A provider is keyed by organization and ``<registry>#<namespace>#<name>`` (one Query
  lists an organization's providers); ``by-id`` finds it from its id.
* A version lives in its provider's partition, ordered by a SemVer sort key; a platform in
  its version's partition, keyed ``<os>#<arch>`` (one per pair, as TFE has it).

Every conditional write is here: a second create of the same address is refused by the
condition, never by a read before it.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from pynamodb.attributes import (
    BooleanAttribute,
    ListAttribute,
    UnicodeAttribute,
    UTCDateTimeAttribute,
)
from pynamodb.exceptions import PutError, TransactWriteError, UpdateError
from pynamodb.indexes import AllProjection, GlobalSecondaryIndex
from pynamodb.transactions import TransactWrite

from chalicelib.core.data import db
from chalicelib.core.tagbindings import TagBindingsAttribute


class Taken(Exception):
    """The item's key is already used."""


class Gone(Exception):
    """The item was deleted meanwhile."""


def provider_key(registry: str, namespace: str, name: str) -> str:
    return f"{registry}#{namespace}#{name}"


def platform_key(os_: str, arch: str) -> str:
    return f"{os_}#{arch}"


@db.register
class GpgKeyModel(db.Model):
    Meta = db.table("gpg-keys")

    namespace = UnicodeAttribute(hash_key=True)
    key_id = UnicodeAttribute(range_key=True)  # upper case
    id = UnicodeAttribute()
    ascii_armor = UnicodeAttribute()
    created_at = UTCDateTimeAttribute()
    updated_at = UTCDateTimeAttribute()


class ProviderById(GlobalSecondaryIndex):
    class Meta:
        index_name = "by-id"
        projection = AllProjection()

    id = UnicodeAttribute(hash_key=True)


@db.register
class ProviderModel(db.Model):
    Meta = db.table("registry-providers")

    organization = UnicodeAttribute(hash_key=True)
    key = UnicodeAttribute(range_key=True)
    id = UnicodeAttribute()
    registry_name = UnicodeAttribute()
    namespace = UnicodeAttribute()
    name = UnicodeAttribute()
    created_at = UTCDateTimeAttribute()
    updated_at = UTCDateTimeAttribute()
    # Key/value tag bindings (chalicelib.core.tagbindings), replaced by the provider's PATCH.
    tag_bindings = TagBindingsAttribute()

    by_id = ProviderById()


@db.register
class ProviderVersionModel(db.Model):
    Meta = db.table("registry-provider-versions")

    provider_id = UnicodeAttribute(hash_key=True)
    order_key = UnicodeAttribute(range_key=True)
    id = UnicodeAttribute()
    version = UnicodeAttribute()
    key_id = UnicodeAttribute()
    protocols = ListAttribute(of=UnicodeAttribute, default=list)
    shasums_uploaded = BooleanAttribute(default=False)
    shasums_sig_uploaded = BooleanAttribute(default=False)
    created_at = UTCDateTimeAttribute()
    updated_at = UTCDateTimeAttribute()


@db.register
class ProviderPlatformModel(db.Model):
    Meta = db.table("registry-provider-platforms")

    version_id = UnicodeAttribute(hash_key=True)
    key = UnicodeAttribute(range_key=True)  # platform_key(os, arch)
    id = UnicodeAttribute()
    os = UnicodeAttribute()
    arch = UnicodeAttribute()
    shasum = UnicodeAttribute()
    filename = UnicodeAttribute()
    provider_binary_uploaded = BooleanAttribute(default=False)
    created_at = UTCDateTimeAttribute()
    updated_at = UTCDateTimeAttribute()


def insert(item: db.Model) -> None:
    """Put a new item; ``Taken`` when its key is used already."""
    hash_attr = item._hash_key_attribute()
    try:
        item.save(condition=hash_attr.does_not_exist())
    except PutError as exc:
        if db.conditional_failure(exc):
            raise Taken from None
        raise


def update_provider(provider: ProviderModel, actions: list[Any]) -> None:
    """Apply ``actions`` to a provider that still exists (the same one: same id)."""
    try:
        provider.update(actions=actions, condition=ProviderModel.id == provider.id)
    except UpdateError as exc:
        if db.conditional_failure(exc):
            raise Gone from None
        raise


def move_key(old: GpgKeyModel, new: GpgKeyModel) -> None:
    """A key's new namespace in one transaction: the new item (unless one is there) and
    the old one deleted."""
    try:
        with TransactWrite(connection=db.connection()) as tx:
            tx.save(new, condition=GpgKeyModel.namespace.does_not_exist())
            tx.delete(old)
    except TransactWriteError as exc:
        if db.TRANSACTION_CONDITION_FAILED in db.cancellation_codes(exc):
            raise Taken from None
        raise


def versions_of(provider_id: str) -> list[ProviderVersionModel]:
    """Newest first."""
    return list(ProviderVersionModel.query(provider_id, scan_index_forward=False))


def platforms_of(version_id: str) -> list[ProviderPlatformModel]:
    return list(ProviderPlatformModel.query(version_id))


def delete_all(items: Iterable[db.Model]) -> None:
    for item in items:
        item.delete()
