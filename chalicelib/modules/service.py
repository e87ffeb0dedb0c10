"""Registry modules and versions: validation, permissions, lifecycle and deletion cascades.

A "module" resource is one (registry, namespace, name, provider) record. Deleting a
module's last version deletes that record (the provider); deleting the last provider of a
name leaves nothing of the name, which is SPEC.md's "module deleted".
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar
from urllib.parse import urlsplit

from chalicelib.accounts import authorization
from chalicelib.accounts import service as accounts
from chalicelib.artifacts import objects, queue, semver
from chalicelib.core import tagbindings
from chalicelib.core.api.errors import Conflict, Forbidden, NotFound, Unprocessable
from chalicelib.core.api.pagination import Page
from chalicelib.core.auth import Principal
from chalicelib.core.data import lists
from chalicelib.core.data.ids import new_id, now
from chalicelib.core.settings import get_settings
from chalicelib.core.tagbindings import Binding
from chalicelib.modules import keys, store
from chalicelib.modules.statuses import (
    DeprecationStatus,
    ModuleStatus,
    RevocationStatus,
    VersionStatus,
    is_revoked,
)
from chalicelib.modules.store import ModuleModel, ModuleVersionModel, module_key, name_prefix

log = logging.getLogger("registry")

NAME = re.compile(r"^[0-9A-Za-z](?:[0-9A-Za-z_-]*[0-9A-Za-z])?$")
PROVIDER = re.compile(r"^[0-9a-z]+$")
MAX_LENGTH = 64
REGISTRIES = ("private", "public")


@dataclass(frozen=True)
class ModuleRef:
    organization: str
    registry: str
    namespace: str
    name: str
    provider: str

    @property
    def key(self) -> str:
        return module_key(self.registry, self.namespace, self.name, self.provider)


# ----- validation ---------------------------------------------------------------------------


def validate_name(value: str | None, field: str) -> str:
    if not value:
        raise Unprocessable(f"{field} is required", pointer=f"/data/attributes/{field}")
    if len(value) > MAX_LENGTH:
        raise Unprocessable(
            f"{field} must be at most {MAX_LENGTH} characters", pointer=f"/data/attributes/{field}"
        )
    if not NAME.match(value):
        raise Unprocessable(
            f"{field} may contain letters, numbers, dashes and underscores, "
            "and must start and end with a letter or number",
            pointer=f"/data/attributes/{field}",
        )
    return value


def validate_provider(value: str | None) -> str:
    if not value:
        raise Unprocessable("provider is required", pointer="/data/attributes/provider")
    if len(value) > MAX_LENGTH or not PROVIDER.match(value):
        raise Unprocessable(
            f"provider must be lowercase letters and numbers only, at most {MAX_LENGTH}",
            pointer="/data/attributes/provider",
        )
    return value


def check_registry(registry: str) -> str:
    """``private`` always; ``public`` only where public curation exists (hosted edition)."""
    if registry not in REGISTRIES:
        raise NotFound(f"registry {registry!r} not found: use 'private' or 'public'")
    if registry == "public" and not get_settings().hosted:
        raise Forbidden("public module curation is disabled on this instance", title="forbidden")
    return registry


# ----- reading ------------------------------------------------------------------------------


def _readable(principal: Principal, organization: str) -> accounts.OrgAccess:
    return accounts.organization_access(principal, organization)


def require_rights(rights: accounts.OrgAccess, what: str, *, owner: bool = False) -> None:
    need = "the owners team" if owner else "a team with the manage-modules permission"
    refusal = f"not found: {what} needs a user or team token of {need}"
    authorization.require(rights, "own" if owner else "manage-modules", refusal)


def list_modules(
    principal: Principal, organization: str, q: str | None, filters: dict[str, str]
) -> tuple[list[ModuleModel], accounts.OrgAccess]:
    rights = _readable(principal, organization)
    wanted_org = filters.get("organization_name")
    if wanted_org and wanted_org != organization:
        return [], rights
    modules = list(ModuleModel.query(organization))
    if registry := filters.get("registry_name"):
        modules = [m for m in modules if m.registry_name == registry]
    if provider := filters.get("provider"):
        modules = [m for m in modules if m.provider == provider]
    if q:
        needle = q.lower()
        modules = [
            m
            for m in modules
            if needle in m.name.lower()
            or needle in m.namespace.lower()
            or needle in m.provider.lower()
        ]
    return modules, rights


def page_modules(
    principal: Principal,
    organization: str,
    q: str | None,
    filters: dict[str, str],
    page: Page,
    counts: dict[str, int] | None = None,
) -> tuple[list[ModuleModel], int, accounts.OrgAccess]:
    """One page of the organization's modules (key order: registry, namespace, name,
    provider) and how many match, reading only what the page needs
    (``chalicelib.core.data.lists``): the kept count and the page; the lean index before a later
    page; the lean index for ``q`` and ``filter[provider]`` (a key holds everything they
    match), then the page's modules by key. ``counts``: ``module_counts`` when the caller
    has read them already."""
    rights = _readable(principal, organization)
    wanted_org = filters.get("organization_name")
    if wanted_org and wanted_org != organization:
        return [], 0, rights
    registry = filters.get("registry_name")
    source = lists.KeyedList(
        ModuleModel,
        organization,
        lean=ModuleModel.listed,
        condition=ModuleModel.key.startswith(f"{registry}#") if registry else None,
    )
    provider = filters.get("provider")
    needle = q.lower() if q else None
    matches = None
    if provider or needle:

        def matches(entry: ModuleModel) -> bool:
            _, namespace, name, module_provider = store.parse_key(entry.key)
            if provider and module_provider != provider:
                return False
            return not needle or any(
                needle in part.lower() for part in (name, namespace, module_provider)
            )

    total = None
    # No count at all: an organization without modules, or data written before counts were
    # kept and not backfilled yet; the lean index is counted instead.
    if matches is None and counts is None:
        counts = module_counts(organization)
    if matches is None and counts:
        parts = [registry] if registry else store.REGISTRY_PARTS
        total = sum(counts.get(part, 0) for part in parts)
    modules, total = lists.read_page(source, page, total=total, matches=matches)
    return modules, total, rights


def module_counts(organization: str) -> dict[str, int]:
    """The organization's kept module counts, per registry and per provider (one Query of a
    few small items); empty before they are kept."""
    return lists.counts(store.count_scope(organization))


def providers_in_use(organization: str, counts: dict[str, int] | None = None) -> list[str]:
    """The providers of the organization's modules, sorted (the web UI's provider menu): from
    the kept counts (``module_counts``, read here unless given), or, before they are kept (an
    organization without modules, or not backfilled yet), from the lean index. The caller
    has checked that the organization is readable."""
    if counts is None:
        counts = module_counts(organization)
    if counts:
        prefix = store.provider_part("")
        return sorted(
            part.removeprefix(prefix)
            for part, count in counts.items()
            if part.startswith(prefix) and count > 0
        )
    return sorted(
        {store.parse_key(entry.key)[3] for entry in ModuleModel.listed.query(organization)}
    )


def get_module(principal: Principal, ref: ModuleRef) -> tuple[ModuleModel, accounts.OrgAccess]:
    check_registry(ref.registry)
    rights = _readable(principal, ref.organization)
    try:
        return ModuleModel.get(ref.organization, ref.key), rights
    except ModuleModel.DoesNotExist:
        raise NotFound(f"module {ref.namespace}/{ref.name}/{ref.provider} not found") from None


def get_module_by_id(principal: Principal, module_id: str):
    module = store.module_by_id(module_id)
    if module is None:
        raise NotFound(f"registry module {module_id} not found")
    rights = accounts.access(principal, module.organization)
    if not rights.can_read:
        raise NotFound(f"registry module {module_id} not found")
    return module, rights


def list_versions(module: ModuleModel) -> list[ModuleVersionModel]:
    return list(ModuleVersionModel.query(module.id))


def page_versions(module: ModuleModel, page: Page) -> tuple[list[ModuleVersionModel], int]:
    """One page of the module's versions, newest first, and how many there are. The module
    item (read already) names every version in its statuses, which the transactions that
    create and delete versions keep: that is the count, and the order key of the version
    just before the page, so a page is one Query of its own versions
    (``chalicelib.core.data.lists``) and nothing else is read."""
    order_keys = sorted(
        (semver.parse(v).order_key for v in module.statuses() if semver.is_valid(v)),
        reverse=True,
    )
    total = len(order_keys)
    if page.offset >= total:
        return [], total
    source = lists.KeyedList(ModuleVersionModel, module.id, forward=False)
    before = ModuleVersionModel(module.id, order_keys[page.offset - 1]) if page.offset else None
    return source.after(before, page.size), total


def find_version(principal: Principal, ref: ModuleRef, version: str):
    module, rights = get_module(principal, ref)
    return version_of(module, version), rights


def version_of(module: ModuleModel, version: str) -> ModuleVersionModel:
    try:
        parsed = semver.parse(version)
        return ModuleVersionModel.get(module.id, parsed.order_key)
    except (semver.InvalidVersion, ModuleVersionModel.DoesNotExist):
        raise NotFound(
            f"version {version!r} of {module.name}/{module.provider} not found"
        ) from None


def latest_description(module: ModuleModel) -> str:
    """The short description of the module's latest servable version ("" without one). Kept
    on the module item (``latest_summary``), so nothing is read; for a module the backfill
    has not reached yet (``backfill_descriptions``), read from its version item, or for a
    version ingested before descriptions were kept, from its README's parsed metadata."""
    latest = module.latest_servable()
    if latest is None:
        return ""
    kept = module.latest_summary or {}
    if kept.get("version") == latest and "description" in kept:
        return str(kept["description"])
    try:
        return _description(version_of(module, latest))
    except NotFound:
        return ""


def _description(version: ModuleVersionModel) -> str:
    """A version's description, from its README when it was ingested before they were kept."""
    if version.description is not None:
        return version.description
    if version.status != VersionStatus.OK or not version.metadata_key:
        return ""
    from chalicelib.modules.describe import summary  # markdown-it: only for old versions

    return summary((objects.get_metadata(version.metadata_key).get("root") or {}).get("readme"))


def backfill_descriptions() -> dict[str, int]:
    """Keep on every module item its latest servable version's description (the web UI's
    module list reads nothing else per row), for modules whose latest version was ingested
    before descriptions were kept: the version's description from its README in S3, then
    the module's ``latest_summary`` through ``store.refresh_listing`` (which rereads the
    module, so a module changing meanwhile is not overwritten). Scans the modules (a
    one-off, ``python -m infrastructure.backfill``); a second run writes nothing. Older
    versions get theirs when they become the latest (a newer one revoked or deleted) and
    are read from S3 for the list until then."""
    report: dict[str, int] = {"modules": 0, "descriptions written": 0, "summaries written": 0}
    for module in ModuleModel.scan():
        report["modules"] += 1
        latest = module.latest_servable()
        kept = module.latest_summary or {}
        if (latest is None and not kept) or (
            kept.get("version") == latest and "description" in kept
        ):
            continue
        if latest is not None:
            try:
                version = version_of(module, latest)
            except NotFound:
                continue
            missing = version.description is None
            if missing and store.record_description(version, _description(version)):
                report["descriptions written"] += 1
        store.refresh_listing(module.organization, module.key)
        report["summaries written"] += 1
    return report


# ----- creating -----------------------------------------------------------------------------


def create_module(
    principal: Principal,
    organization: str,
    *,
    name: str | None,
    provider: str | None,
    registry: str | None,
    namespace: str | None,
    no_code: bool | None,
    no_code_module: Callable[[ModuleModel], Any] | None = None,
) -> tuple[ModuleModel, accounts.OrgAccess]:
    """``no_code_module`` (the no-code sub-room's maker, which this core does not import):
    given a private module created with ``no-code: true``, the item of its no-code module,
    written in the module's transaction (go-tfe's test lists it with
    ``include=no-code-modules`` right after the create). A public module keeps only the flag:
    no-code modules are made of private ones."""
    rights = _readable(principal, organization)
    registry = registry or "private"
    if registry not in REGISTRIES:
        raise Unprocessable(
            "registry-name must be 'private' or 'public'", pointer="/data/attributes/registry-name"
        )
    name = validate_name(name, "name")
    provider = validate_provider(provider)
    if registry == "private":
        if namespace not in (None, "", organization):
            raise Unprocessable(
                "namespace cannot be set for private modules", pointer="/data/attributes/namespace"
            )
        namespace = organization
    else:
        check_registry(registry)
        namespace = validate_name(namespace, "namespace")
    require_rights(rights, "creating a module")
    moment = now()
    module = ModuleModel(
        organization,
        module_key(registry, namespace, name, provider),
        id=new_id("mod"),
        registry_name=registry,
        namespace=namespace,
        name=name,
        provider=provider,
        status=ModuleStatus.PENDING if registry == "private" else ModuleStatus.SETUP_COMPLETE,
        no_code=bool(no_code),
        created_at=moment,
        updated_at=moment,
    )
    companions = []
    if no_code and registry == "private" and no_code_module is not None:
        companion = no_code_module(module)
        module.no_code_module_id = companion.id
        companions.append(companion)
    save_new_module(module, companions)
    return module, rights


def save_new_module(module: ModuleModel, companions: Sequence[Any] = ()) -> None:
    """Store a new module record (and ``companions``, new items of other tables, in the
    same transaction); 422 when that registry/namespace/name/provider exists."""
    try:
        store.insert_module(module, companions)
    except store.ModuleTaken:
        raise Unprocessable(
            f"module {module.namespace}/{module.name}/{module.provider} already exists "
            f"in the {module.registry_name} registry",
            pointer="/data/attributes/name",
            title="name has already been taken",
        ) from None


class ModuleChange(Protocol):
    """A change planned by another room (publishing's ``vcs-repo`` update): item updates
    written with the module's own, then the jobs it queues."""

    actions: list[Any]

    def queue_jobs(self, module: ModuleModel) -> None: ...


def update_module(
    principal: Principal,
    ref: ModuleRef,
    *,
    no_code: bool | None,
    tests_enabled: bool | None,
    plan: Callable[[ModuleModel], ModuleChange] | None = None,
    tag_bindings: Sequence[Binding] | None = None,
) -> tuple[ModuleModel, accounts.OrgAccess]:
    """Everything is validated before anything is written (``plan`` validates its part and
    writes nothing), then one conditional update. ``tag_bindings`` (already validated):
    the module's new set, replacing the old one (kept keys keep their ids); None leaves it.
    A curated public module (hosted edition) is updated the same way."""
    module, rights = get_module(principal, ref)
    require_rights(rights, "updating a module", owner=True)
    actions = [ModuleModel.updated_at.set(now())]
    change = plan(module) if plan else None
    if change is not None:
        actions += change.actions
    if no_code is not None:
        actions.append(ModuleModel.no_code.set(no_code))
    if tag_bindings is not None:
        replaced = tagbindings.replace(module.tag_bindings or [], tag_bindings)
        actions.append(ModuleModel.tag_bindings.set(replaced))
    if tests_enabled is not None:
        config = module.test_config or {"id": new_id("tc")}
        actions.append(ModuleModel.test_config.set({**config, "tests-enabled": tests_enabled}))
    try:
        store.update_module(module, actions)
    except store.ModuleGone:
        raise NotFound("the module was deleted while it was being updated") from None
    if change is not None:
        change.queue_jobs(module)
    return module, rights


BranchVersion = Callable[[ModuleModel, str, "str | None"], ModuleVersionModel]


def create_version(
    principal: Principal,
    ref: ModuleRef,
    version: str | None,
    commit_sha: str | None,
    *,
    from_vcs: BranchVersion,
) -> tuple[ModuleVersionModel, str | None]:
    """A pending version and its presigned upload URL. A VCS-backed module's version is
    ``from_vcs``'s (publishing fetches its archive from the repository: no upload URL)."""
    if ref.registry == "public":
        check_registry("public")
    module, rights = get_module(principal, ref)
    if module.registry_name != "private":
        raise Forbidden("versions cannot be created for public modules")
    require_rights(rights, "creating a version")
    if not version:
        raise Unprocessable("version is required", pointer="/data/attributes/version")
    if module.vcs_repo:
        return from_vcs(module, version, commit_sha), None
    item = insert_version(module, version, commit_sha=commit_sha)
    return item, objects.presigned_upload_url(item.upload_key)


def insert_version(
    module: ModuleModel,
    version: str,
    *,
    commit_sha: str | None = None,
    source: str = "tfe-api",
    tag: str | None = None,
) -> ModuleVersionModel:
    """Create a pending version item and its entry in the module's statuses, in one
    transaction; 422 when the version exists, 404 when the module went away."""
    try:
        parsed = semver.parse(version)
    except semver.InvalidVersion as exc:
        raise Unprocessable(str(exc), pointer="/data/attributes/version") from None
    moment = now()
    version_id = new_id("modver")
    upload = keys.UploadKey(module.id, parsed.text, version_id)
    item = ModuleVersionModel(
        module.id,
        parsed.order_key,
        id=version_id,
        version=parsed.text,
        source=source,
        commit_sha=commit_sha,
        tag=tag,
        organization=module.organization,
        module_key=module.key,
        upload_key=upload.key,
        created_at=moment,
        updated_at=moment,
    )
    try:
        store.insert_version(module, item, moment)
    except store.VersionTaken:
        raise Unprocessable(
            f"version {parsed.text} already exists",
            pointer="/data/attributes/version",
            title="version has already been taken",
        ) from None
    except store.ModuleGone:
        raise NotFound("the module was deleted while the version was being created") from None
    return item


def upload_url(version: ModuleVersionModel, rights: accounts.OrgAccess) -> str | None:
    """The upload link stays usable until the version is ok (CI retries, failed ingests), but
    only for a caller who could create the version: a presigned PUT publishes whatever it
    carries, so a reader must never receive one. VCS versions have none: their archive comes
    from the repository."""
    if (
        not authorization.allows(rights, "manage-modules")
        or version.status == VersionStatus.OK
        or version.source != "tfe-api"
    ):
        return None
    return objects.presigned_upload_url(version.upload_key)


def requeue_uploads(module: ModuleModel) -> list[str]:
    """Ingest again the uploaded archives of versions that are not ok (their S3 event was
    lost, or ingest crashed and the event went to the dead-letter queue). A refused archive
    was deleted when it was refused: that version needs a new upload, which its upload link
    still takes."""
    stuck = [
        version
        for version in list_versions(module)
        if version.status != VersionStatus.OK and objects.exists(version.upload_key)
    ]
    queue.enqueue_upload_events(version.upload_key for version in stuck)
    return [version.version for version in stuck]


# ----- deprecating and revoking -------------------------------------------------------------

# Caps on what a deprecation or revocation stores (each copy lives in the version item and in
# the module item, and a revocation message is what ``terraform init`` prints).
MAX_LIFECYCLE_TEXT = 1000
MAX_LIFECYCLE_LINK = 2048
DEPRECATION = "/data/attributes/deprecation"
REVOCATION = "/data/attributes/revocation"


@dataclass(frozen=True)
class LifecycleChange:
    """``attributes.deprecation`` (``deprecated-status``, ``reason``, ``link``) or
    ``attributes.revocation`` (``status``, ``message``, ``link``) of a version PATCH."""

    status: str | None
    text: str | None
    link: str | None


S = TypeVar("S", DeprecationStatus, RevocationStatus)


def _lifecycle_status(value: str | None, kind: type[S], pointer: str) -> S:
    names = " or ".join(repr(str(member)) for member in kind)
    field = pointer.rsplit("/", 1)[1]
    if not value:
        raise Unprocessable(f"{field} is required: {names}", pointer=pointer)
    for member in kind:
        if member.lower() == value.lower():
            return member
    raise Unprocessable(f"{field} must be {names}, not {value[:64]!r}", pointer=pointer)


def _lifecycle_text(value: str | None, pointer: str) -> str | None:
    if value and len(value) > MAX_LIFECYCLE_TEXT:
        field = pointer.rsplit("/", 1)[1]
        raise Unprocessable(
            f"{field} must be at most {MAX_LIFECYCLE_TEXT} characters", pointer=pointer
        )
    return value or None


def _lifecycle_link(value: str | None, pointer: str) -> str | None:
    if not value:
        return None
    problem = None
    if len(value) > MAX_LIFECYCLE_LINK:
        problem = f"must be at most {MAX_LIFECYCLE_LINK} characters"
    elif any(ch.isspace() or not ch.isprintable() for ch in value):
        problem = "must not contain spaces or control characters"
    else:
        try:
            parts = urlsplit(value)
            valid = parts.scheme in ("http", "https") and bool(parts.hostname)
        except ValueError:
            valid = False
        if not valid:
            problem = "must be an http:// or https:// URL"
    if problem:
        raise Unprocessable(f"link {problem}", pointer=pointer)
    return value


def _compact(values: dict[str, str | None]) -> dict[str, str]:
    """Only the keys with a value (DynamoDB maps of the module item hold plain strings)."""
    return {key: value for key, value in values.items() if value}


def _deprecation(change: LifecycleChange) -> tuple[DeprecationStatus, dict[str, str]]:
    status = _lifecycle_status(change.status, DeprecationStatus, f"{DEPRECATION}/deprecated-status")
    fields = {
        "reason": _lifecycle_text(change.text, f"{DEPRECATION}/reason"),
        "link": _lifecycle_link(change.link, f"{DEPRECATION}/link"),
    }
    return status, _compact(fields)


def _revocation(change: LifecycleChange) -> tuple[RevocationStatus, dict[str, str]]:
    status = _lifecycle_status(change.status, RevocationStatus, f"{REVOCATION}/status")
    fields = {
        "message": _lifecycle_text(change.text, f"{REVOCATION}/message"),
        "link": _lifecycle_link(change.link, f"{REVOCATION}/link"),
    }
    return status, _compact(fields)


def change_version_lifecycle(
    principal: Principal,
    ref: ModuleRef,
    version: str,
    *,
    deprecation: LifecycleChange | None,
    revocation: LifecycleChange | None,
) -> tuple[ModuleVersionModel, accounts.OrgAccess]:
    """Deprecate, undeprecate, revoke or un-revoke one ok version of a private module (owners
    and manage-modules teams; 404 for everyone else). A version is deprecated before it can be
    revoked; un-revoking leaves it deprecated (``Unrevoked``); undeprecating a revoked version
    is refused; undeprecating clears both. Everything is checked before the one conditional
    write, which is decided again on the fresh item if the version changed meanwhile."""
    module, rights = get_module(principal, ref)
    require_rights(rights, "deprecating or revoking a version")
    if module.registry_name != "private":
        raise NotFound("only versions of private modules can be deprecated or revoked")
    item = version_of(module, version)
    if deprecation is None and revocation is None:
        raise Unprocessable("deprecation or revocation is required", pointer="/data/attributes")
    if deprecation is not None and revocation is not None:
        raise Unprocessable(
            "send either deprecation or revocation, not both", pointer="/data/attributes"
        )
    wanted_deprecation = _deprecation(deprecation) if deprecation is not None else None
    wanted_revocation = _revocation(revocation) if revocation is not None else None
    for _ in range(3):
        if item.status != VersionStatus.OK:
            raise Unprocessable(
                f"only published versions can be deprecated or revoked: {item.version} is "
                f"{item.status}",
                pointer="/data/attributes",
            )
        new_deprecation, new_revocation = item.deprecation, item.revocation
        if wanted_deprecation is not None:
            new_deprecation, new_revocation = _apply_deprecation(item, *wanted_deprecation)
        if wanted_revocation is not None:
            new_revocation = _apply_revocation(item, *wanted_revocation)
        moment = now()
        try:
            store.record_version_lifecycle(item, new_deprecation, new_revocation, moment)
        except store.VersionChanged:
            item = version_of(module, version)  # 404 when it was deleted meanwhile
            continue
        except store.ModuleGone:
            raise NotFound("the module was deleted while the version was being changed") from None
        item.deprecation, item.revocation, item.updated_at = new_deprecation, new_revocation, moment
        return item, rights
    raise Conflict(f"version {item.version} is being changed by another request: try again")


def _apply_deprecation(
    item: ModuleVersionModel, status: DeprecationStatus, fields: dict[str, str]
) -> tuple[dict[str, str] | None, dict[str, str] | None]:
    """The (deprecation, revocation) after ``status``: deprecating again replaces the reason
    and link (a revoked version stays revoked)."""
    if status == DeprecationStatus.DEPRECATED:
        kept_id = (item.deprecation or {}).get("id") or new_id("dep")
        deprecation = {"id": kept_id, "deprecated-status": str(status), **fields}
        return deprecation, item.revocation
    if is_revoked(item.revocation):
        raise Unprocessable(
            f"version {item.version} is revoked: un-revoke it (revocation status 'Unrevoked') "
            "before undeprecating it",
            pointer=f"{DEPRECATION}/deprecated-status",
        )
    return None, None


def _apply_revocation(
    item: ModuleVersionModel, status: RevocationStatus, fields: dict[str, str]
) -> dict[str, str] | None:
    """The revocation after ``status``: only a deprecated version can be revoked; un-revoking
    a version that is not revoked changes nothing."""
    if status == RevocationStatus.REVOKED:
        if not item.deprecation:
            raise Unprocessable(
                f"version {item.version} must be deprecated before it can be revoked",
                pointer=f"{REVOCATION}/status",
            )
        return {"status": str(status), **fields}
    if is_revoked(item.revocation):
        return {"status": str(status)}
    return item.revocation


# ----- deleting -----------------------------------------------------------------------------
# What goes with a deleted module or version (its download counts, no-code module, webhook) is
# the composer's (``chalicelib.modules.composed``): this core never imports its sub-rooms.


def to_delete(
    principal: Principal, organization: str, parts: list[str]
) -> tuple[list[ModuleModel], str | None]:
    """What a delete by ``[registry, namespace, name]`` + optional ``provider`` + optional
    ``version`` takes (owners only): the module records, or one module and the version to
    delete of it; 404 when there is nothing of that name."""
    registry, namespace, name, *rest = parts
    check_registry(registry)
    rights = _readable(principal, organization)
    require_rights(rights, "deleting a module", owner=True)
    if registry == "public" and rest:
        raise NotFound("public modules can only be deleted by namespace and name")
    if not rest:
        named = _modules_named(organization, registry, namespace, name)
        if not named:
            raise NotFound(f"module {namespace}/{name} not found")
        return named, None
    provider = rest[0]
    try:
        module = ModuleModel.get(organization, module_key(registry, namespace, name, provider))
    except ModuleModel.DoesNotExist:
        raise NotFound(f"module {namespace}/{name}/{provider} not found") from None
    return [module], (rest[1] if len(rest) > 1 else None)


def named_to_delete(principal: Principal, organization: str, name: str) -> list[ModuleModel]:
    """``POST /registry-modules/actions/delete/:org/:name`` takes the private module of that
    name and, where public curation is on, every curated public module of that name (any
    namespace), as SPEC's name-level delete applies to both registries (owners only; 404
    when there is none)."""
    rights = _readable(principal, organization)
    require_rights(rights, "deleting a module", owner=True)
    modules = _modules_named(organization, "private", organization, name)
    if get_settings().hosted:
        public = ModuleModel.query(organization, ModuleModel.key.startswith("public#"))
        modules += [module for module in public if module.name == name]
    if not modules:
        raise NotFound(f"module {name} not found")
    return modules


def _modules_named(
    organization: str, registry: str, namespace: str, name: str
) -> list[ModuleModel]:
    """Every provider of one name: one Query on the key prefix."""
    prefix = name_prefix(registry, namespace, name)
    return list(ModuleModel.query(organization, ModuleModel.key.startswith(prefix)))


def modules_of(organization: str) -> list[ModuleModel]:
    """Every module of an organization (its deletion's cascade)."""
    return list(ModuleModel.query(organization))


def delete_version(module: ModuleModel, version: ModuleVersionModel) -> bool:
    """Delete one version and its objects; True when it was the last one and took the module
    with it."""
    module_gone = store.delete_version(module, version, now())
    objects.delete_objects([version.upload_key, version.archive_key, version.metadata_key])
    return module_gone


def delete_module_record(module: ModuleModel) -> list[str]:
    """Delete the module, its versions and their objects; returns the versions deleted."""
    versions = store.delete_module(module)
    objects.delete_objects(
        [k for v in versions for k in (v.upload_key, v.archive_key, v.metadata_key)]
    )
    return [v.version for v in versions]


# ----- ingestion outcome --------------------------------------------------------------------


def mark_version(
    version: ModuleVersionModel, status: VersionStatus, *, error: str | None = None, **fields: Any
) -> bool:
    """Record a status on the version and the module; False if either is gone."""
    return store.record_version_status(version, status, now(), error=error, fields=fields)
