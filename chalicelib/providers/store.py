"""PynamoDB models of the provider registry: GPG keys, providers, versions and platforms.

* A GPG key is keyed by its namespace (an organization) and its 16-hex-digit key id in
  upper case, so ``:namespace/:key_id`` is one GetItem and ids compare case-insensitively.
* A provider is keyed by organization and ``<registry>#<namespace>#<name>`` (one Query
  lists an organization's providers); ``by-id`` finds it from its id.
* A version lives in its provider's partition, ordered by a SemVer sort key; a platform in
  its version's partition, keyed ``<os>#<arch>`` (one per pair, as TFE has it).
* Verification (``providers.ingest``) leaves ``status`` (``VersionStatus``: ``pending``,
  ``verified``, ``failed``) and ``error`` on a version and a platform, and what the protocol
  serves on the provider item, so ``versions`` and ``download`` each read that one item: ``served``
  (version -> ``{key-id, protocols, sums}``), ``served_platforms``
  (``<version>/<os>_<arch>`` -> ``<sums>:<shasum>[:<filename>]``, the filename only when it
  is not the conventional one) and ``served_keys`` (key id -> the armored key that verified
  a served version). ``sums`` names the SHA256SUMS (``sums_tag``): a platform is served only
  while its entry names the one its version verified with, so a re-uploaded SHA256SUMS hides
  every platform until each is checked again. Each entry is written alone (one path of a
  map), so concurrent checks never overwrite each other. About 110 bytes per served platform
  and 60 per version: DynamoDB's 400 KB item limit holds some 3,000 platforms (300 versions
  of 10 platforms) besides a few keys; past it a platform's check fails with that reason.

Every conditional write is here: a second create of the same address is refused by the
condition, never by a read before it. A person's change (a create, an update, a delete, a
check's outcome) is one transaction with its audit event (``core.audit.trail.record_in``):
both are written or neither.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from pynamodb.attributes import (
    BooleanAttribute,
    JSONAttribute,
    ListAttribute,
    MapAttribute,
    UnicodeAttribute,
    UTCDateTimeAttribute,
)
from pynamodb.exceptions import TransactWriteError, UpdateError
from pynamodb.indexes import AllProjection, GlobalSecondaryIndex
from pynamodb.transactions import TransactWrite

from chalicelib.artifacts import semver
from chalicelib.artifacts.statuses import VersionStatus
from chalicelib.core import observe
from chalicelib.core.audit import trail
from chalicelib.core.audit.events import Event
from chalicelib.core.data import db
from chalicelib.core.data.ids import now
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
    served: MapAttribute[str, Any] = MapAttribute(default=dict)
    served_platforms: MapAttribute[str, Any] = MapAttribute(default=dict)
    served_keys: MapAttribute[str, Any] = MapAttribute(default=dict)

    by_id = ProviderById()

    def served_versions(self) -> dict[str, dict[str, Any]]:
        return self.served.as_dict() if self.served else {}

    def served_platform_entries(self) -> dict[str, str]:
        return self.served_platforms.as_dict() if self.served_platforms else {}

    def served_key(self, key_id: str) -> str | None:
        keys = self.served_keys.as_dict() if self.served_keys else {}
        armor = keys.get(key_id.upper())
        return str(armor) if armor else None


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
    status = UnicodeAttribute(null=True)  # None: pending
    error = UnicodeAttribute(null=True)
    sums_sha256 = UnicodeAttribute(null=True)  # of the SHA256SUMS whose signature verified
    # Who created it (whose upload links they were), for its provenance: {"type", "id"}.
    # None: created before it was kept.
    created_by = JSONAttribute(null=True)
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
    status = UnicodeAttribute(null=True)  # None: pending
    error = UnicodeAttribute(null=True)
    created_at = UTCDateTimeAttribute()
    updated_at = UTCDateTimeAttribute()


def _first_failed(exc: TransactWriteError) -> bool:
    """Whether the transaction's first item (the change's own) failed its condition."""
    return db.cancellation_codes(exc)[:1] == [db.TRANSACTION_CONDITION_FAILED]


def insert(item: db.Model, event: Event) -> None:
    """Put a new item with its audit event; ``Taken`` (and neither written) when its key is
    used already."""
    hash_attr = item._hash_key_attribute()
    try:
        with TransactWrite(connection=db.connection()) as tx:
            tx.save(item, condition=hash_attr.does_not_exist())
            trail.record_in(tx, event)
    except TransactWriteError as exc:
        if _first_failed(exc):
            raise Taken from None
        raise


def delete(item: db.Model, event: Event) -> None:
    """Delete an item with its audit event; ``Gone`` (and no event) when it was deleted
    meanwhile."""
    try:
        with TransactWrite(connection=db.connection()) as tx:
            tx.delete(item, condition=item._hash_key_attribute().exists())
            trail.record_in(tx, event)
    except TransactWriteError as exc:
        if _first_failed(exc):
            raise Gone from None
        raise


def update_provider(provider: ProviderModel, actions: list[Any], event: Event) -> None:
    """Apply ``actions`` to a provider that still exists (the same one: same id), with the
    change's audit event."""
    try:
        with TransactWrite(connection=db.connection()) as tx:
            tx.update(provider, actions=actions, condition=ProviderModel.id == provider.id)
            trail.record_in(tx, event)
    except TransactWriteError as exc:
        if _first_failed(exc):
            raise Gone from None
        raise


def move_key(old: GpgKeyModel, new: GpgKeyModel, event: Event) -> None:
    """A key's new namespace in one transaction with its audit event: the new item (unless
    one is there) and the old one deleted."""
    try:
        with TransactWrite(connection=db.connection()) as tx:
            tx.save(new, condition=GpgKeyModel.namespace.does_not_exist())
            tx.delete(old)
            trail.record_in(tx, event)
    except TransactWriteError as exc:  # sent as: delete old, put new, the event
        if db.cancellation_codes(exc)[1:2] == [db.TRANSACTION_CONDITION_FAILED]:
            raise Taken from None
        raise


# ----- reads (every read of these tables is here) ------------------------------------------


def gpg_keys(namespace: str) -> list[GpgKeyModel]:
    return list(GpgKeyModel.query(namespace))


def gpg_key(namespace: str, key_id: str, consistent: bool = False) -> GpgKeyModel | None:
    """The namespace's key of that id (ids compare case-insensitively: kept in upper case)."""
    try:
        return GpgKeyModel.get(namespace, key_id.upper(), consistent_read=consistent)
    except GpgKeyModel.DoesNotExist:
        return None


def providers_of(organization: str, registry: str | None = None) -> list[ProviderModel]:
    """The organization's providers, of one registry (``private``, ``public``) or all."""
    condition = ProviderModel.key.startswith(f"{registry}#") if registry else None
    return list(ProviderModel.query(organization, range_key_condition=condition))


def provider(organization: str, key: str) -> ProviderModel | None:
    try:
        return ProviderModel.get(organization, key)
    except ProviderModel.DoesNotExist:
        return None


def provider_by_id(provider_id: str) -> ProviderModel | None:
    return next(iter(ProviderModel.by_id.query(provider_id, limit=1)), None)


def version_of(
    provider_id: str, version: str, consistent: bool = False
) -> ProviderVersionModel | None:
    """The provider's version ``version`` (None when it is not one, or not a version)."""
    try:
        order_key = semver.parse(version).order_key
        return ProviderVersionModel.get(provider_id, order_key, consistent_read=consistent)
    except (semver.InvalidVersion, ProviderVersionModel.DoesNotExist):
        return None


def versions_of(provider_id: str) -> list[ProviderVersionModel]:
    """Newest first."""
    return list(ProviderVersionModel.query(provider_id, scan_index_forward=False))


def platform_of(version_id: str, os_: str, arch: str) -> ProviderPlatformModel | None:
    try:
        return ProviderPlatformModel.get(version_id, platform_key(os_, arch))
    except ProviderPlatformModel.DoesNotExist:
        return None


def platforms_of(version_id: str, consistent: bool = False) -> list[ProviderPlatformModel]:
    return list(ProviderPlatformModel.query(version_id, consistent_read=consistent))


def delete_all(items: Iterable[db.Model]) -> None:
    for item in items:
        item.delete()


# ----- verification (providers.ingest) and what the protocol serves -------------------------


def served_platform_key(version: str, os_: str, arch: str) -> str:
    return f"{version}/{os_}_{arch}"


def conventional_filename(name: str, version: str, os_: str, arch: str) -> str:
    """The archive's name as terraform's release tooling writes it (not kept when used)."""
    return f"terraform-provider-{name}_{version}_{os_}_{arch}.zip"


class TooLarge(Exception):
    """The provider item would exceed DynamoDB's item limit."""


def _update_existing(item: db.Model, actions: list[Any]) -> bool:
    """Update ``item`` unless it was deleted meanwhile (an update would recreate it);
    False when it was."""
    model = type(item)
    try:
        item.update(actions=actions, condition=model._hash_key_attribute().exists())
    except UpdateError as exc:
        if db.conditional_failure(exc):
            return False
        raise
    return True


def mark_uploaded(item: ProviderVersionModel | ProviderPlatformModel, flag: Any) -> bool:
    """Set an ``*_uploaded`` flag; False when the item was deleted meanwhile. Bookkeeping
    (``observe.bookkeeping``): the flag notes that S3 holds the file; the upload's audit event
    is its check's outcome (``set_status``), accepted or refused."""
    with observe.bookkeeping():
        return _update_existing(item, [flag.set(True), type(item).updated_at.set(now())])


def set_status(
    item: ProviderVersionModel | ProviderPlatformModel,
    status: VersionStatus,
    event: Event,
    error: str | None = None,
    sums_sha256: str | None = None,
) -> bool:
    """A version's or platform's verification outcome (``error`` only when failed), with its
    audit event in one transaction; False (nothing written) when the item was deleted
    meanwhile."""
    model = type(item)
    actions: list[Any] = [model.status.set(str(status)), model.updated_at.set(now())]
    actions.append(model.error.set(error) if error else model.error.remove())
    if isinstance(item, ProviderVersionModel):
        sums = ProviderVersionModel.sums_sha256
        actions.append(sums.set(sums_sha256) if sums_sha256 else sums.remove())
    try:
        with TransactWrite(connection=db.connection()) as tx:
            tx.update(item, actions=actions, condition=model._hash_key_attribute().exists())
            trail.record_in(tx, event)
    except TransactWriteError as exc:
        if _first_failed(exc):
            return False
        raise
    item.status, item.error = str(status), error
    if isinstance(item, ProviderVersionModel):
        item.sums_sha256 = sums_sha256
    return True


MAPS = ("served", "served_platforms", "served_keys")


def sums_tag(sha256: str) -> str:
    """Which SHA256SUMS a served entry was checked against: 64 bits of its sha256 name it
    among a version's uploads (it is an identity, not a check; terraform checks the bytes)."""
    return sha256[:16]


def _update_provider(provider: ProviderModel, actions: list[Any]) -> bool:
    """Paths of the served maps; a provider item written before they existed gets the empty
    maps first (DynamoDB sets no path below a missing map). ``TooLarge`` past DynamoDB's
    item limit."""
    try:
        return _update_existing(provider, actions)
    except UpdateError as exc:
        message = str(exc.cause if exc.cause else exc)
        if "Item size" in message:
            raise TooLarge from None
        if "document path" not in message:
            raise
    maps = [getattr(ProviderModel, name) for name in MAPS]
    if not _update_existing(provider, [m.set(m | {}) for m in maps]):
        return False
    return _update_existing(provider, actions)


def serve_version(
    provider: ProviderModel, version: ProviderVersionModel, sums: str, armor: str
) -> bool:
    """Serve the version as verified with the SHA256SUMS of sha256 ``sums`` and the key
    ``armor`` (kept as it was when it verified the signature)."""
    key_id = version.key_id.upper()
    entry = {"key-id": key_id, "protocols": list(version.protocols or []), "sums": sums_tag(sums)}
    actions = [ProviderModel.served[version.version].set(entry)]
    actions.append(ProviderModel.served_keys[key_id].set(armor))
    return _update_provider(provider, actions)


def unserve_version(
    provider: ProviderModel, version: str, platforms: Iterable[ProviderPlatformModel] = ()
) -> bool:
    """The version no longer served, with its platforms' entries when given."""
    actions = [ProviderModel.served[version].remove()]
    for platform in platforms:
        key = served_platform_key(version, platform.os, platform.arch)
        actions.append(ProviderModel.served_platforms[key].remove())
    return _update_provider(provider, actions)


def serve_platform(
    provider: ProviderModel, version: str, platform: ProviderPlatformModel, sums: str | None
) -> bool:
    """Serve the platform as checked against the SHA256SUMS of sha256 ``sums``; None: not.
    Its entry is ``<sums tag>:<shasum>``, then ``:<filename>`` unless the conventional one."""
    path = ProviderModel.served_platforms[served_platform_key(version, platform.os, platform.arch)]
    if sums is None:
        return _update_provider(provider, [path.remove()])
    entry = f"{sums_tag(sums)}:{platform.shasum}"
    if platform.filename != conventional_filename(
        provider.name, version, platform.os, platform.arch
    ):
        entry += f":{platform.filename}"
    return _update_provider(provider, [path.set(entry)])
