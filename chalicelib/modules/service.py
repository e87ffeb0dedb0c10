"""Registry modules: validation, permissions, reading, creating, updating and deleting them
(their versions are ``versions``'; their descriptions ``describe``'s).

A "module" resource is one (registry, namespace, name, provider) record. Deleting a
module's last version deletes that record (the provider); deleting the last provider of a
name leaves nothing of the name, which is SPEC.md's "module deleted".
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from chalicelib.accounts import authorization
from chalicelib.artifacts import objects
from chalicelib.artifacts.statuses import VersionStatus
from chalicelib.core import observe, tagbindings
from chalicelib.core.api.errors import Forbidden, NotFound, Unprocessable
from chalicelib.core.api.pagination import Page
from chalicelib.core.audit import trail
from chalicelib.core.audit.events import Event
from chalicelib.core.auth import Principal
from chalicelib.core.data import lists
from chalicelib.core.data.ids import new_id, now
from chalicelib.core.settings import get_settings
from chalicelib.core.tagbindings import Binding
from chalicelib.modules import store, writes
from chalicelib.modules.audit import events as audit_events
from chalicelib.modules.statuses import ModuleStatus
from chalicelib.modules.store import ModuleModel, ModuleVersionModel, module_key

NAME = re.compile(r"^[0-9A-Za-z](?:[0-9A-Za-z_-]*[0-9A-Za-z])?\Z")
PROVIDER = re.compile(r"^[0-9a-z]+\Z")
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


def _readable(principal: Principal, organization: str) -> authorization.OrgAccess:
    return authorization.organization_access(principal, organization)


def require_rights(rights: authorization.OrgAccess, what: str, *, owner: bool = False) -> None:
    need = "the owners team" if owner else "a team with the manage-modules permission"
    refusal = f"not found: {what} needs a user or team token of {need}"
    authorization.require(rights, "own" if owner else "manage-modules", refusal)


def list_modules(
    principal: Principal, organization: str, q: str | None, filters: dict[str, str]
) -> tuple[list[ModuleModel], authorization.OrgAccess]:
    rights = _readable(principal, organization)
    wanted_org = filters.get("organization_name")
    if wanted_org and wanted_org != organization:
        return [], rights
    modules = store.modules_of(organization)
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
) -> tuple[list[ModuleModel], int, authorization.OrgAccess]:
    """One page of the organization's modules (key order: registry, namespace, name,
    provider) and how many match, reading only what the page needs
    (``chalicelib.core.data.lists``): the kept count and the page; the lean index before a later
    page. ``q`` and ``filter[provider]`` match on the key (it holds everything they match):
    the kept counts and key sets (``store.kept_keys``: two Queries of small items, however
    many modules the organization holds), then the page's modules by key; the lean index
    instead before the key sets are kept. ``counts``: ``module_counts`` when the caller has
    read them already."""
    rights = _readable(principal, organization)
    wanted_org = filters.get("organization_name")
    if wanted_org and wanted_org != organization:
        return [], 0, rights
    registry = filters.get("registry_name")
    source = store.module_list(organization, registry)
    provider = filters.get("provider")
    needle = q.lower() if q else None
    # No count at all: an organization without modules, or data written before counts were
    # kept and not backfilled yet; the lean index is counted instead.
    if counts is None:
        counts = module_counts(organization)
    if not provider and not needle:
        total = None
        if counts:
            parts = [registry] if registry else store.REGISTRY_PARTS
            total = sum(counts.get(part, 0) for part in parts)
        return *lists.read_page(source, page, total=total), rights

    def matches(key: str) -> bool:
        key_registry, namespace, name, module_provider = store.parse_key(key)
        if registry and key_registry != registry:
            return False
        if provider and module_provider != provider:
            return False
        return not needle or any(
            needle in part.lower() for part in (name, namespace, module_provider)
        )

    keys = store.kept_keys(organization, counts)
    if keys is None:
        found, total = lists.read_page(source, page, total=None, matches=lambda e: matches(e.key))
        return found, total, rights
    matched = [key for key in keys if matches(key)]
    window = matched[page.offset : page.offset + page.size]
    return source.full([ModuleModel(organization, key) for key in window]), len(matched), rights


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
    return sorted({store.parse_key(key)[3] for key in store.module_keys(organization)})


def get_module(principal: Principal, ref: ModuleRef) -> tuple[ModuleModel, authorization.OrgAccess]:
    check_registry(ref.registry)
    rights = _readable(principal, ref.organization)
    module = store.find_module(ref.organization, ref.key)
    if module is None:
        raise NotFound(f"module {ref.namespace}/{ref.name}/{ref.provider} not found")
    return module, rights


def get_module_by_id(principal: Principal, module_id: str):
    module = store.module_by_id(module_id)
    if module is None:
        raise NotFound(f"registry module {module_id} not found")
    rights = authorization.access(principal, module.organization)
    if not rights.can_read:
        raise NotFound(f"registry module {module_id} not found")
    return module, rights


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
) -> tuple[ModuleModel, authorization.OrgAccess]:
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
    meta: dict[str, Any] = {"no-code": module.no_code}
    if no_code and registry == "private" and no_code_module is not None:
        companion = no_code_module(module)
        module.no_code_module_id = companion.id
        companions.append(companion)
        meta["no-code-module"] = companion.id
    save_new_module(principal, module, companions, meta)
    return module, rights


def save_new_module(
    principal: Principal,
    module: ModuleModel,
    companions: Sequence[Any] = (),
    meta: dict[str, Any] | None = None,
) -> None:
    """Store a new module record (and ``companions``, new items of other tables, in the
    same transaction) with its audit event (``created``, with ``meta``); 422 when that
    registry/namespace/name/provider exists."""
    event = audit_events.of_module(principal, module, "created", meta, moment=module.created_at)
    try:
        writes.insert_module(module, event, companions)
    except writes.ModuleTaken:
        raise Unprocessable(
            f"module {module.namespace}/{module.name}/{module.provider} already exists "
            f"in the {module.registry_name} registry",
            pointer="/data/attributes/name",
            title="name has already been taken",
        ) from None


class ModuleChange(Protocol):
    """A change planned by another room (publishing's ``vcs-repo`` update): item updates
    written with the module's own, then the jobs it queues; ``vcs_repo``: the module's
    repository after it (what its audit event compares)."""

    actions: list[Any]
    vcs_repo: dict[str, Any]

    def queue_jobs(self, module: ModuleModel) -> None: ...


def update_module(
    principal: Principal,
    ref: ModuleRef,
    *,
    no_code: bool | None,
    tests_enabled: bool | None,
    plan: Callable[[ModuleModel], ModuleChange] | None = None,
    tag_bindings: Sequence[Binding] | None = None,
) -> tuple[ModuleModel, authorization.OrgAccess]:
    """Everything is validated before anything is written (``plan`` validates its part and
    writes nothing), then one conditional update. ``tag_bindings`` (already validated):
    the module's new set, replacing the old one (kept keys keep their ids); None leaves it.
    A curated public module (hosted edition) is updated the same way."""
    module, rights = get_module(principal, ref)
    require_rights(rights, "updating a module", owner=True)
    moment = now()
    actions = [ModuleModel.updated_at.set(moment)]
    before: dict[str, Any] = {}
    after: dict[str, Any] = {}
    change = plan(module) if plan else None
    if change is not None:
        actions += change.actions
        current = module.vcs_repo or {}
        for key in set(current) | set(change.vcs_repo):
            before[f"vcs-repo.{key}"] = current.get(key)
            after[f"vcs-repo.{key}"] = change.vcs_repo.get(key)
    if no_code is not None:
        actions.append(ModuleModel.no_code.set(no_code))
        before["no-code"], after["no-code"] = module.no_code, no_code
    if tag_bindings is not None:
        replaced = tagbindings.replace(module.tag_bindings or [], tag_bindings)
        actions.append(ModuleModel.tag_bindings.set(replaced))
        before["tag-bindings"] = tagbindings.as_dict(module.tag_bindings)
        after["tag-bindings"] = tagbindings.as_dict(replaced)
    if tests_enabled is not None:
        config = module.test_config or {"id": new_id("tc")}
        actions.append(ModuleModel.test_config.set({**config, "tests-enabled": tests_enabled}))
        before["test-config"] = (module.test_config or {}).get("tests-enabled")
        after["test-config"] = tests_enabled
    meta: dict[str, Any] = {"changed": trail.changed(before, after)}
    if "tag-bindings" in meta["changed"]:
        meta["tag-bindings"] = sorted(after["tag-bindings"])
    event = audit_events.of_module(principal, module, "updated", meta, moment=moment)
    try:
        writes.update_module(module, actions, event)
    except writes.ModuleGone:
        raise NotFound("the module was deleted while it was being updated") from None
    if change is not None:
        change.queue_jobs(module)
    return module, rights


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
    module = store.find_module(organization, module_key(registry, namespace, name, provider))
    if module is None:
        raise NotFound(f"module {namespace}/{name}/{provider} not found")
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
        public = store.modules_of(organization, "public#")
        modules += [module for module in public if module.name == name]
    if not modules:
        raise NotFound(f"module {name} not found")
    return modules


def _modules_named(
    organization: str, registry: str, namespace: str, name: str
) -> list[ModuleModel]:
    """Every provider of one name: one Query on the key prefix."""
    return store.modules_of(organization, store.name_prefix(registry, namespace, name))


def modules_of(organization: str) -> list[ModuleModel]:
    """Every module of an organization (its deletion's cascade)."""
    return store.modules_of(organization)


def module_at(organization: str, key: str) -> ModuleModel | None:
    """The module of that key (``ModuleRef.key``), for the registry's own workers (the
    notifications' fan-out): no caller, so no access check. None when there is none."""
    return store.find_module(organization, key)


def delete_module_record(module: ModuleModel, principal: Principal | None) -> list[str]:
    """Delete the module, its versions and their objects; returns the versions deleted.
    ``principal``: who deletes it, recorded (``deleted``) with the module's delete; None
    when its organization's deletion takes it (that deletion's event says so)."""
    event = None
    if principal is not None:
        meta = {"versions": sorted(module.statuses())}
        event = audit_events.of_module(principal, module, "deleted", meta)
    versions = writes.delete_module(module, event)
    objects.delete_objects([key for version in versions for key in version.object_keys])
    return [v.version for v in versions]


# ----- ingestion outcome --------------------------------------------------------------------


# A worker's progress marks: the version is on its way (``pending`` again for a retry's
# fetch, ``cloning``, ``reg_ingressing``); no one's change: the outcome that follows is.
PROGRESS = frozenset({VersionStatus.PENDING, VersionStatus.CLONING, VersionStatus.INGRESSING})


def mark_version(
    version: ModuleVersionModel,
    status: VersionStatus,
    *,
    error: str | None = None,
    event: Event | None = None,
    **fields: Any,
) -> bool:
    """Record a status on the version and the module, with the worker's outcome ``event``
    (None for a progress mark, ``PROGRESS``, written as ``observe.bookkeeping``); False if
    either is gone."""
    if event is None and status in PROGRESS:
        with observe.bookkeeping():
            return writes.record_version_status(version, status, now(), error=error, fields=fields)
    return writes.record_version_status(
        version, status, now(), error=error, fields=fields, event=event
    )
