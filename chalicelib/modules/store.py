"""PynamoDB models of registry modules and module versions.

A module item is keyed by organization and ``<registry>#<namespace>#<name>#<provider>``, so
one Query lists an organization's modules and a ``begins_with`` finds every provider of a
name. Versions live one item each in the module's partition, ordered by a SemVer sort key.
The module keeps ``version_statuses`` (version -> status, error, deprecation, revocation) so
reads of a module (and the registry protocol's version lists) never touch the versions table.

Here: the models, every read, and the protocol's list (``refresh_listing``, kept after each
change of a module's versions, and its backfill); every other write is ``writes``'.
"""

from __future__ import annotations

import itertools
import logging
from collections import Counter, defaultdict
from collections.abc import Iterator
from typing import Any

from pynamodb.attributes import (
    BooleanAttribute,
    JSONAttribute,
    MapAttribute,
    NumberAttribute,
    UnicodeAttribute,
    UTCDateTimeAttribute,
)
from pynamodb.exceptions import TransactWriteError
from pynamodb.indexes import AllProjection, GlobalSecondaryIndex, KeysOnlyProjection
from pynamodb.transactions import TransactWrite

from chalicelib.artifacts import semver
from chalicelib.artifacts.statuses import VersionStatus
from chalicelib.core.data import db, lists
from chalicelib.core.tagbindings import TagBindingsAttribute
from chalicelib.modules import keys
from chalicelib.modules.statuses import ModuleStatus, is_deprecated, is_revoked, latest_servable

log = logging.getLogger("registry.store")


def module_key(registry: str, namespace: str, name: str, provider: str) -> str:
    return f"{registry}#{namespace}#{name}#{provider}"


def name_prefix(registry: str, namespace: str, name: str) -> str:
    return f"{registry}#{namespace}#{name}#"


def count_scope(organization: str) -> str:
    """The kept counts of an organization's modules (``chalicelib.core.data.lists``): one part
    per registry (their sum is the total), one per provider (``provider:aws``: the web UI's
    menu); and the kept sets of their keys (``lists.key_set_update``), which a search reads
    (``kept_keys``)."""
    return f"registry-modules#{organization}"


REGISTRY_PARTS = ("private", "public")


def provider_part(provider: str) -> str:
    return f"provider:{provider}"


def count_module(tx: TransactWrite, module: ModuleModel, delta: int) -> None:
    scope = count_scope(module.organization)
    lists.count_update(tx, scope, module.registry_name, delta)
    lists.count_update(tx, scope, provider_part(module.provider), delta)
    lists.key_set_update(tx, scope, module.key, delta)


def kept_keys(organization: str, counts: dict[str, int] | None = None) -> list[str] | None:
    """Every module key of the organization, sorted, from its kept key sets (one Query of at
    most ``lists.KEY_SHARDS`` small items), checked against its kept ``counts`` (read here
    unless given: one Query of a few tiny items); None before they are kept for every
    module (the backfill)."""
    if counts is None:
        counts = lists.counts(count_scope(organization))
    if not counts:
        return None
    total = sum(counts.get(part, 0) for part in REGISTRY_PARTS)
    return lists.kept_keys(count_scope(organization), total)


def protocol_key(registry: str, namespace: str, name: str, provider: str) -> str:
    """The registry protocol's order: namespace, name, provider; within one organization a
    private module before a curated public one of the same address (as its key sorts).
    ``#`` sorts before every character a name may hold, so this string sorts as the tuple."""
    return f"{namespace}#{name}#{provider}#{0 if registry == 'private' else 1}"


def parse_key(key: str) -> tuple[str, str, str, str]:
    """(registry, namespace, name, provider) of a module key."""
    registry, namespace, name, provider = key.split("#", 3)
    return registry, namespace, name, provider


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


class ModuleList(GlobalSecondaryIndex):
    """The lean index of an organization's modules (``chalicelib.core.data.lists``): the table's
    own keys, nothing else, so an entry is about 50 bytes and a Query of it is billed on
    that. Paging skips with it; ``q`` and the filters read it and nothing of the modules
    but the page. The key holds registry, namespace, name and provider, all a filter or a
    search needs."""

    class Meta:
        index_name = "list"
        projection = KeysOnlyProjection()

    organization = UnicodeAttribute(hash_key=True)
    key = UnicodeAttribute(range_key=True)


class VersionsByDeprecation(GlobalSecondaryIndex):
    """Sparse: an organization's deprecated versions (revoked ones too), most urgent first,
    for the organization's upgrade campaigns (``deprecated_versions``). Written with the
    version's lifecycle (``writes.record_version_lifecycle``): ``deprecated_in`` is the
    organization while the version is deprecated, removed when it is undeprecated;
    ``deprecation_order`` is ``deprecation_order(deprecation, revocation)``."""

    class Meta:
        index_name = "by-deprecation"
        projection = AllProjection()

    deprecated_in = UnicodeAttribute(hash_key=True)
    deprecation_order = UnicodeAttribute(range_key=True)


class VersionsByDeadline(GlobalSecondaryIndex):
    """Sparse: the versions whose deprecation deadline (``revoke-at``) the scheduled sweep
    must look at, by when (``due_at``, ISO UTC: a notice 7 days and 1 day before, then the
    revocation itself). ``due`` is always ``DUE`` (one partition: deadlines are few, and
    the sweep reads only what is due). Removed once the version is revoked, undeprecated or
    its deadline removed."""

    class Meta:
        index_name = "by-deadline"
        projection = AllProjection()

    due = UnicodeAttribute(hash_key=True)
    due_at = UnicodeAttribute(range_key=True)


DUE = "due"


def deprecation_order(
    deprecation: dict[str, Any] | None, revocation: dict[str, Any] | None
) -> str | None:
    """Where a version sorts among its organization's deprecations (None: it is not
    deprecated): revoked first (``0#``), then by deadline, soonest first (``1#<revoke-at>``),
    then those without one (``2#<deprecation id>``)."""
    if not is_deprecated(deprecation):
        return None
    assert deprecation is not None
    if is_revoked(revocation):
        return "0#"
    if deprecation.get("revoke-at"):
        return f"1#{deprecation['revoke-at']}"
    return f"2#{deprecation.get('id', '')}"


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
    version_statuses: MapAttribute[str, Any] = MapAttribute(default=dict)
    # VCS-backed modules only: the repository settings (chalicelib.modules.publishing.service), the
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
    # The module's no-code module (chalicelib.modules.nocode): set and cleared only in the
    # transactions that create and delete it, which is what keeps it to one per module; reads
    # of the module render the ``no-code-modules`` relationship from it without another read.
    no_code_module_id = UnicodeAttribute(null=True)
    # What the web UI's module list shows of the module's latest servable version, so a list
    # page reads no version: {"version", "description"?} (no description: not known yet, e.g.
    # a version ingested before descriptions were kept and not backfilled). Written only by
    # ``refresh_listing``, with the protocol's list entry; absent without a servable version.
    latest_summary = JSONAttribute(null=True)
    # version -> its downloads, for the module's total in lists (``total_downloads``): kept
    # by ``chalicelib.modules.downloads.totals`` from the ``module-downloads`` table's stream,
    # with per-version SET/REMOVE (absolute counts, so a stream batch applied twice changes
    # nothing). Absent until the module's first download after the upgrade that added it.
    version_downloads: MapAttribute[str, Any] = MapAttribute(null=True, attr_name="dl")
    created_at = UTCDateTimeAttribute()
    updated_at = UTCDateTimeAttribute()
    by_id = ModuleById()
    by_webhook = ModuleByWebhook()
    listed = ModuleList()

    def statuses(self) -> dict[str, dict[str, Any]]:
        """version -> {"status", "error"?, "published-at"?, "deprecation"?, "revocation"?} as a
        plain dict (the last two are maps of strings)."""
        return self.version_statuses.as_dict() if self.version_statuses else {}

    def total_downloads(self) -> int:
        """Every version's downloads, as far as the stream has carried them (seconds)."""
        kept = self.version_downloads.as_dict() if self.version_downloads else {}
        return sum(int(count) for count in kept.values())

    def latest_servable(self) -> str | None:
        """The version ``terraform`` gets without a constraint (``statuses.latest_servable``)."""
        latest = latest_servable(self.statuses())
        return latest.text if latest else None


@db.register
class ProtocolEntryModel(db.Model):
    """What the registry protocol lists (``/api/registry/v1/modules``), one lean item per
    module it lists, in its order (``protocol_key``): private modules with a servable
    version, with their latest version and when it was published (all a list entry shows),
    and curated public modules. About 80 bytes each: the protocol's list and search read
    these, never the modules. Short attribute names, since DynamoDB bills them.

    A table rather than a second index of the modules table: the entry depends on every
    version's status, so it is written apart from the module anyway (``refresh_listing``),
    and CloudFormation adds only one index to a deployed table per update."""

    Meta = db.table("registry-protocol-list")

    organization = UnicodeAttribute(hash_key=True, attr_name="org")
    protocol_key = UnicodeAttribute(range_key=True, attr_name="pk")
    version = UnicodeAttribute(null=True, attr_name="ver")
    published_at = UnicodeAttribute(null=True, attr_name="at")
    # The module's total downloads (``ModuleModel.total_downloads``): written with the entry,
    # and by ``chalicelib.modules.downloads.totals`` when the stream changes the total.
    downloads = NumberAttribute(null=True, attr_name="dl")

    @property
    def address(self) -> tuple[str, str, str, str]:
        """(registry, namespace, name, provider)."""
        namespace, name, provider, rank = self.protocol_key.split("#")
        return ("private" if rank == "0" else "public"), namespace, name, provider


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
    # Lifecycle of an ok version (chalicelib.modules.versions.change_version_lifecycle), also
    # kept in its entry of the module's ``version_statuses`` for the registry protocol:
    # {"id", "deprecated-status", "reason"?, "link"?} and {"status", "message"?, "link"?}.
    deprecation = JSONAttribute(null=True)
    revocation = JSONAttribute(null=True)
    # The sparse indexes of deprecations (``VersionsByDeprecation``, ``VersionsByDeadline``).
    deprecated_in = UnicodeAttribute(null=True)
    deprecation_order = UnicodeAttribute(null=True)
    due = UnicodeAttribute(null=True)
    due_at = UnicodeAttribute(null=True)
    by_deprecation = VersionsByDeprecation()
    by_deadline = VersionsByDeadline()
    # Its README's first paragraph (``chalicelib.modules.describe``), set when it is ingested
    # (None: ingested before descriptions were kept).
    description = UnicodeAttribute(null=True)
    # The last scan's summary (``trust.findings.ScanReport.summary``; None: not scanned yet),
    # also kept, shorter, in the module's ``version_statuses`` entry (``entry_summary``).
    # (Named ``scan_summary`` in Python: ``scan`` would hide PynamoDB's ``Model.scan()``.)
    scan_summary = JSONAttribute(null=True, attr_name="scan")
    # Why the publishing policy holds it back, and its release: {"reasons": [...],
    # "quarantined-at"} then "released-by", "released-at", "release-reason".
    quarantine = JSONAttribute(null=True)
    # Who created it (the principal whose upload URL it was), for its provenance:
    # {"type": "user"|"team"|"organization", "id", "name"?}. None: created before it was kept.
    created_by = JSONAttribute(null=True)
    created_at = UTCDateTimeAttribute()
    updated_at = UTCDateTimeAttribute()

    @property
    def accepted(self) -> bool:
        """Whether its archive passed ingest and is kept: ``ok``, ``quarantined``, or held for
        its scan (``reg_ingressing`` with its archive stored). An accepted archive never
        changes: a late upload is dropped."""
        if self.status in (VersionStatus.OK, VersionStatus.QUARANTINED):
            return True
        return self.status == VersionStatus.INGRESSING and self.archive_key is not None

    @property
    def awaits_upload(self) -> bool:
        """Whether its archive may still be uploaded: until one is accepted (CI retries,
        failed ingests); never for a VCS version, whose archive comes from the repository."""
        return not self.accepted and self.source == "tfe-api"

    @property
    def object_keys(self) -> list[str | None]:
        """Every object of the version in the bucket (None: not there), for its deletion: its
        upload, archive and metadata, and what its scan made beside them (``keys``)."""
        upload = keys.UploadKey.parse(self.upload_key)
        made = [upload.findings_key, upload.sbom_key, upload.provenance_key] if upload else []
        return [self.upload_key, self.archive_key, self.metadata_key, *made]


# ----- reads ---------------------------------------------------------------------------------


def module_by_id(module_id: str) -> ModuleModel | None:
    """The module with this id (one Query of the ``by-id`` index), None when there is none."""
    return next(iter(ModuleModel.by_id.query(module_id)), None)


def deprecated_versions(
    organization: str, limit: int, after: dict[str, Any] | None = None
) -> tuple[list[ModuleVersionModel], dict[str, Any] | None]:
    """A page of the organization's deprecated versions, most urgent first (``limit`` of
    them: one Query of the sparse ``by-deprecation`` index), and where the next page starts
    (None: the last page)."""
    found = ModuleVersionModel.by_deprecation.query(
        organization, limit=limit, last_evaluated_key=after
    )
    page = list(itertools.islice(found, limit))
    return page, found.last_evaluated_key if len(page) == limit else None


def module_by_webhook(webhook_id: str) -> ModuleModel | None:
    """The VCS module of this webhook id (one Query of the sparse ``by-webhook`` index)."""
    return next(iter(ModuleModel.by_webhook.query(webhook_id)), None)


def find_module(organization: str, key: str, *, consistent: bool = False) -> ModuleModel | None:
    """The module of that key (``module_key``), None when there is none."""
    try:
        return ModuleModel.get(organization, key, consistent_read=consistent)
    except ModuleModel.DoesNotExist:
        return None


def modules_of(organization: str, key_prefix: str | None = None) -> list[ModuleModel]:
    """The organization's modules, in key order; with ``key_prefix``, those whose key starts
    with it (``name_prefix``: every provider of a name; ``public#``: the curated ones)."""
    condition = ModuleModel.key.startswith(key_prefix) if key_prefix else None
    return list(ModuleModel.query(organization, condition))


def module_keys(organization: str) -> list[str]:
    """The keys of the organization's modules, from the lean index (``ModuleList``)."""
    return [entry.key for entry in ModuleModel.listed.query(organization)]


def module_list(organization: str, registry: str | None = None) -> lists.KeyedList:
    """The organization's modules (of one registry) for ``lists.read_page``: the table in
    key order, with the lean index to skip and filter with."""
    return lists.KeyedList(
        ModuleModel,
        organization,
        lean=ModuleModel.listed,
        condition=ModuleModel.key.startswith(f"{registry}#") if registry else None,
    )


def every_module() -> Iterator[ModuleModel]:
    """Every module of every organization: a scan, for the one-off backfills only."""
    return iter(ModuleModel.scan())


def find_version(
    module_id: str, order_key: str, *, consistent: bool = False
) -> ModuleVersionModel | None:
    """The module's version of that order key (``semver.Version.order_key``), or None."""
    try:
        return ModuleVersionModel.get(module_id, order_key, consistent_read=consistent)
    except ModuleVersionModel.DoesNotExist:
        return None


def versions_of(module_id: str) -> list[ModuleVersionModel]:
    """Every version of the module, oldest first."""
    return list(ModuleVersionModel.query(module_id))


def versions_after(module_id: str, order_key: str | None, size: int) -> list[ModuleVersionModel]:
    """Up to ``size`` of the module's versions, newest first, from just after (older than)
    the version of ``order_key`` (from the newest when None): one Query."""
    source = lists.KeyedList(ModuleVersionModel, module_id, forward=False)
    before = ModuleVersionModel(module_id, order_key) if order_key is not None else None
    return source.after(before, size)


# ----- the protocol list's entry ------------------------------------------------------------


def protocol_entry(module: ModuleModel) -> tuple[str | None, str | None] | None:
    """(latest version, its publication time) of the module's protocol list entry, None
    when the protocol does not list it (a curated public module: no version of its own)."""
    if module.registry_name == "public":
        return None, None
    statuses = module.statuses()
    latest = latest_servable(statuses)
    if latest is None:
        return None
    return latest.text, statuses.get(latest.text, {}).get("published-at")


def protocol_item(
    module: ModuleModel, entry: tuple[str | None, str | None] | None
) -> ProtocolEntryModel:
    """The module's entry in the protocol's list (``entry``: ``protocol_entry``'s answer;
    None for the key alone, to delete it)."""
    key = protocol_key(module.registry_name, module.namespace, module.name, module.provider)
    version, published_at = entry or (None, None)
    return ProtocolEntryModel(
        module.organization,
        key,
        version=version,
        published_at=published_at,
        downloads=module.total_downloads() or None,
    )


def latest_summary(module: ModuleModel) -> dict[str, str] | None:
    """What the module item keeps of its latest servable version (``latest_summary``):
    its number and, once known, its description, reused from the module item while the
    latest version is the same, else read from the version item (one GetItem)."""
    latest = module.latest_servable()
    if latest is None:
        return None
    kept = module.latest_summary or {}
    if kept.get("version") == latest and "description" in kept:
        return {"version": latest, "description": kept["description"]}
    try:
        version = ModuleVersionModel.get(
            module.id, semver.parse(latest).order_key, consistent_read=True
        )
    except ModuleVersionModel.DoesNotExist:  # being deleted: the next refresh decides
        return {"version": latest}
    if version.description is None:
        return {"version": latest}
    return {"version": latest, "description": version.description}


def refresh_listing(organization: str, key: str, attempts: int = 5) -> None:
    """Bring the module's protocol list entry and its ``latest_summary`` up to date after a
    change of its versions (ok, failed, deprecated, revoked, deleted): the one place both
    follow ``ModuleModel.latest_servable()``.

    Not in the change's own transaction (the latest version depends on every version's
    status, which the per-version writes never read): read the module (strongly
    consistent), compute the entry, and write it in a transaction that checks the module is
    unchanged since that read (``updated_at``, which every write of the module sets); a
    concurrent change makes it read again. The module's ``latest_summary`` is set in that
    transaction by an update of that one attribute (never a whole-item write, so no other
    writer's fields are lost) under the same check, and without touching ``updated_at``.
    A function stopped between the change and this leaves a stale entry until the module's
    next change or the backfill (``python -m infrastructure.backfill``). Creating and
    deleting a module write and delete its entry in their own transactions."""
    for _ in range(attempts):
        try:
            module = ModuleModel.get(organization, key, consistent_read=True)
        except ModuleModel.DoesNotExist:
            _forget_entry(organization, key)
            return
        entry = protocol_entry(module)
        item = protocol_item(module, entry)
        summary = latest_summary(module)
        unchanged = (ModuleModel.id == module.id) & (ModuleModel.updated_at == module.updated_at)
        try:
            with TransactWrite(connection=db.connection()) as tx:
                if summary == module.latest_summary:
                    tx.condition_check(ModuleModel, organization, key, condition=unchanged)
                else:
                    kept = ModuleModel.latest_summary
                    action = kept.set(summary) if summary else kept.remove()
                    tx.update(module, actions=[action], condition=unchanged)
                if entry is None:
                    tx.delete(item)
                else:
                    tx.save(item)
            return
        except TransactWriteError as exc:
            if db.TRANSACTION_CONDITION_FAILED not in db.cancellation_codes(exc):
                raise
    log.warning("module %s/%s: protocol list entry not refreshed", organization, key)


def _forget_entry(organization: str, key: str) -> None:
    """Delete the protocol list entry of a module that does not exist (checked in the same
    transaction: a module created meanwhile keeps the entry it wrote)."""
    entry = ProtocolEntryModel(organization, protocol_key(*parse_key(key)))
    try:
        with TransactWrite(connection=db.connection()) as tx:
            tx.condition_check(
                ModuleModel, organization, key, condition=ModuleModel.key.does_not_exist()
            )
            tx.delete(entry)
    except TransactWriteError as exc:
        if db.TRANSACTION_CONDITION_FAILED not in db.cancellation_codes(exc):
            raise


def backfill_lists() -> dict[str, int]:
    """Create what the lists read for modules written before they existed, and correct any
    drift: every organization's kept count, and every module's protocol list entry. Scans
    both tables (a one-off command, ``python -m infrastructure.backfill``, never a request),
    writes only what differs (a second run writes nothing), and writes entries through
    ``refresh_listing``, so a module changing meanwhile is read again, not overwritten.

    Counts are set from the scan: a module created or deleted while it runs can leave its
    organization's count off by one, which the next run corrects; run it when the stack is
    quiet, or twice."""
    counted: dict[str, Counter[str]] = defaultdict(Counter)
    keys: dict[str, list[str]] = defaultdict(list)  # count scope -> every module key
    wanted: dict[tuple[str, str], tuple[str, tuple[str | None, str | None]]] = {}
    for module in ModuleModel.scan():
        keys[count_scope(module.organization)].append(module.key)
        counted[module.organization][module.registry_name] += 1
        counted[module.organization][provider_part(module.provider)] += 1
        entry = protocol_entry(module)
        if entry is not None:
            item = protocol_item(module, entry)
            wanted[(module.organization, item.protocol_key)] = (module.key, entry)
    existing = {
        (e.organization, e.protocol_key): (e.version, e.published_at)
        for e in ProtocolEntryModel.scan()
    }
    report = Counter(modules=sum(c[part] for c in counted.values() for part in REGISTRY_PARTS))
    for (organization, entry_key), (key, entry) in wanted.items():
        if existing.get((organization, entry_key)) != entry:
            refresh_listing(organization, key)
            report["entries written"] += 1
    for organization, entry_key in existing.keys() - wanted.keys():
        registry, namespace, name, provider = ProtocolEntryModel(organization, entry_key).address
        refresh_listing(organization, module_key(registry, namespace, name, provider))
        report["entries removed"] += 1
    kept: dict[str, dict[str, int]] = defaultdict(dict)
    for kept_count in lists.CountModel.scan():
        if kept_count.scope.startswith("registry-modules#"):
            kept[kept_count.scope][kept_count.part] = int(kept_count.count)
    scopes = {count_scope(org): dict(parts) for org, parts in counted.items()}
    for scope in kept.keys() | scopes.keys():
        target = scopes.get(scope, {})
        target = {part: target.get(part, 0) for part in target.keys() | kept.get(scope, {}).keys()}
        if target != kept.get(scope, {}):
            lists.set_counts(scope, target)
            report["counts written"] += 1
    if written := lists.backfill_key_sets(count_scope(""), keys):
        report["key sets written"] = written
    report["organizations"] = len(counted)
    return dict(report)
