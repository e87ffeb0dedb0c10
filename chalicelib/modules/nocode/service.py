"""No-code modules (TFE's no-code provisioning API): rules, permissions and cascades.

A no-code module marks one private registry module of an organization as usable for
no-code provisioning, with an optional version pin and the allowed values of some of its
variables (``variable-options``). Rules, as TFE and go-tfe's tests show them:

* Owners and teams with ``manage-modules`` create, update and delete them; whoever reads the
  organization reads them; anyone else gets 404, as for anything they may not see.
* One per registry module: a second create for the same module is a 422.
* ``enabled`` defaults to true (go-tfe's test creates one without it and expects true).
* ``version-pin``: ``latest``, or a version the module has, that has not failed and is not
  revoked: ``ok``, or still on its way there (``pending``: created and not yet uploaded,
  ``cloning``, ``reg_ingressing``). go-tfe's test pins the version it has just created and
  never uploads, and TFE's only rule is that the pin names an existing version of the module
  ("Provided version pin is not equal to latest or provided string does not represent an
  existing version of the module"). A failed version (``clone_failed``,
  ``reg_ingress_req_failed``, ``reg_ingress_failed``) serves nothing until it is retried,
  so it is refused, as is a revoked one. Anything else is a 422 that creates or changes
  nothing. Left out on create,
  nothing is pinned: ``version-pin`` is ``null`` (go-tfe's test expects back the empty pin it
  sent), meaning "whatever is latest when provisioning". On a PATCH, ``""`` removes the pin.
* Deleting a version keeps a pin that names it (as TFE does); ``module-variables`` of that
  version is a 404 from then on. Deleting the registry module, or the organization, deletes
  its no-code module.
* Provisioning (a workspace from the module, or its upgrade) needs TFE's runs, which this
  registry does not have: see ``provisioning_refusal``.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from chalicelib.accounts import authorization
from chalicelib.artifacts import objects, semver
from chalicelib.artifacts.statuses import VersionStatus
from chalicelib.core.api.errors import Conflict, NotFound, Unprocessable
from chalicelib.core.auth import Principal
from chalicelib.core.data.ids import new_id, now
from chalicelib.modules import service as registry
from chalicelib.modules.audit import events as audit_events
from chalicelib.modules.nocode import store
from chalicelib.modules.nocode.store import NoCodeModuleModel, VariableOptionAttribute
from chalicelib.modules.statuses import is_revoked
from chalicelib.modules.store import (
    ModuleModel,
    ModuleVersionModel,
    find_module,
    find_version,
    module_by_id,
)

OPTION_TYPE = "variable-options"
LATEST = "latest"
REGISTRY_MODULE = "/data/relationships/registry-module"
VARIABLE_OPTIONS = "/data/relationships/variable-options"
VERSION_PIN = "/data/attributes/version-pin"
# Version statuses a pin may not name: failed, so the version serves nothing.
PIN_REFUSED = (
    VersionStatus.CLONE_FAILED,
    VersionStatus.INGRESS_REQUEST_FAILED,
    VersionStatus.INGRESS_FAILED,
)
# What one no-code item may hold, so it stays far below DynamoDB's 400 KB item limit.
MAX_VARIABLE_OPTIONS = 50
MAX_OPTIONS = 100
MAX_TEXT = 256
MAX_ID = 255


@dataclass(frozen=True)
class OptionSpec:
    """One ``variable-options`` entry of a request; ``id`` when it names a stored one."""

    id: str | None
    name: str
    type: str
    options: tuple[str, ...]


@dataclass(frozen=True)
class Relationships:
    """What a create or PATCH document says in ``data.relationships``; None: left out."""

    registry_module_id: str | None
    variable_options: list[OptionSpec] | None


# ----- reading requests ----------------------------------------------------------------------


def parse_relationships(body: Any) -> Relationships:
    """``registry-module`` (``{data: {type, id}}``: only the id is used) and the inline
    ``variable-options`` (``{data: [{type, attributes: {variable-name, variable-type,
    options}}]}``, as go-tfe and pytfe send id-less related objects)."""
    data = body.get("data") if isinstance(body, dict) else None
    relationships = data.get("relationships") if isinstance(data, dict) else None
    if relationships is None:
        return Relationships(None, None)
    if not isinstance(relationships, dict):
        raise Unprocessable("relationships must be an object", pointer="/data/relationships")
    return Relationships(
        _module_id(relationships.get("registry-module")),
        _variable_options(relationships[OPTION_TYPE]) if OPTION_TYPE in relationships else None,
    )


def _module_id(relation: Any) -> str | None:
    if relation is None:
        return None
    target = relation.get("data") if isinstance(relation, dict) else None
    if not isinstance(target, dict):
        raise Unprocessable(
            "registry-module must be {data: {type: 'registry-modules', id}}",
            pointer=REGISTRY_MODULE,
        )
    # pytfe says "registry-module", go-tfe "registry-modules": both name the same thing.
    if target.get("type") not in (None, "", "registry-modules", "registry-module"):
        raise Unprocessable(
            "the type of registry-module must be 'registry-modules'",
            pointer=f"{REGISTRY_MODULE}/data/type",
        )
    module_id = target.get("id")
    if not isinstance(module_id, str) or not module_id or len(module_id) > MAX_ID:
        raise Unprocessable(
            "registry-module needs the id of a registry module",
            pointer=f"{REGISTRY_MODULE}/data/id",
        )
    return module_id


def _variable_options(relation: Any) -> list[OptionSpec]:
    items = relation.get("data") if isinstance(relation, dict) else None
    if relation is None or (isinstance(relation, dict) and items is None):
        return []  # go-tfe's nil slice
    if not isinstance(items, list):
        raise Unprocessable("variable-options must be {data: [...]}", pointer=VARIABLE_OPTIONS)
    pointer = f"{VARIABLE_OPTIONS}/data"
    if len(items) > MAX_VARIABLE_OPTIONS:
        raise Unprocessable(
            f"at most {MAX_VARIABLE_OPTIONS} variable options, not {len(items)}", pointer=pointer
        )
    found: list[OptionSpec] = []
    for index, item in enumerate(items):
        found.append(_variable_option(item, f"{pointer}/{index}"))
    names = [spec.name for spec in found]
    ids = [spec.id for spec in found if spec.id]
    for index, spec in enumerate(found):
        if names.index(spec.name) != index:
            raise Unprocessable(
                f"the variable {spec.name!r} is given twice",
                pointer=f"{pointer}/{index}/attributes/variable-name",
            )
        if spec.id and ids.count(spec.id) > 1:
            raise Unprocessable(
                f"the id {spec.id!r} is given twice", pointer=f"{pointer}/{index}/id"
            )
    return found


def _variable_option(item: Any, at: str) -> OptionSpec:
    if not isinstance(item, dict):
        raise Unprocessable("each variable option must be an object", pointer=at)
    if item.get("type") not in (None, "", OPTION_TYPE):
        raise Unprocessable(f"type must be {OPTION_TYPE!r}", pointer=f"{at}/type")
    option_id = item.get("id")
    if option_id in (None, ""):
        option_id = None
    elif not isinstance(option_id, str) or len(option_id) > MAX_ID:
        raise Unprocessable("id must be a variable option's id", pointer=f"{at}/id")
    attributes = item.get("attributes")
    if not isinstance(attributes, dict):
        raise Unprocessable(
            "a variable option needs attributes {variable-name, variable-type, options}",
            pointer=f"{at}/attributes",
        )
    at = f"{at}/attributes"
    name = _text(attributes.get("variable-name"), "variable-name", f"{at}/variable-name")
    type_ = _text(attributes.get("variable-type"), "variable-type", f"{at}/variable-type")
    options = attributes.get("options")
    if options is None:
        options = []
    if not isinstance(options, list):
        raise Unprocessable("options must be an array of strings", pointer=f"{at}/options")
    if len(options) > MAX_OPTIONS:
        raise Unprocessable(
            f"at most {MAX_OPTIONS} options per variable, not {len(options)}",
            pointer=f"{at}/options",
        )
    for index, option in enumerate(options):
        _text(option, "each option", f"{at}/options/{index}")
    if len(set(options)) != len(options):
        raise Unprocessable("options must not repeat a value", pointer=f"{at}/options")
    return OptionSpec(option_id, name, type_, tuple(options))


def _text(value: Any, field: str, pointer: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise Unprocessable(f"{field} must be a non-empty string", pointer=pointer)
    if len(value) > MAX_TEXT or any(not ch.isprintable() for ch in value):
        raise Unprocessable(
            f"{field} must be at most {MAX_TEXT} printable characters", pointer=pointer
        )
    return value


# ----- reading ------------------------------------------------------------------------------


def readable(
    principal: Principal, no_code_id: str
) -> tuple[NoCodeModuleModel, authorization.OrgAccess]:
    """The no-code module and the caller's rights in its organization; 404 when it does not
    exist or the caller cannot read that organization."""
    item = store.get(no_code_id) if 0 < len(no_code_id) <= MAX_ID else None
    if item is not None:
        rights = authorization.access(principal, item.organization)
        if rights.can_read:
            return item, rights
    raise NotFound(f"no-code module {no_code_id[:64]!r} not found")


def manageable(principal: Principal, no_code_id: str) -> NoCodeModuleModel:
    item, rights = readable(principal, no_code_id)
    registry.require_rights(rights, "changing a no-code module")
    return item


def of_modules(modules: Sequence[ModuleModel]) -> list[NoCodeModuleModel]:
    """The no-code modules of ``modules`` (one BatchGetItem), in the modules' order: what
    ``include=no-code-modules`` adds to a module list or read."""
    ids = [m.no_code_module_id for m in modules if m.no_code_module_id]
    found = store.batch_get(ids)
    return [found[i] for i in ids if i in found]


def _registry_module(organization: str, module_id: str) -> ModuleModel:
    """A module of ``organization`` by id (the ``registry-module`` relationship); one in
    another organization answers exactly like an unknown one."""
    module = module_by_id(module_id)
    if module is None or module.organization != organization:
        raise NotFound(f"registry module {module_id[:64]!r} not found in {organization!r}")
    return module


def _module_of(item: NoCodeModuleModel) -> ModuleModel:
    module = find_module(item.organization, item.module_key)
    if module is None:
        raise NotFound("the no-code module's registry module was deleted")
    return module


# ----- creating, changing, deleting ---------------------------------------------------------


def create(
    principal: Principal,
    organization: str,
    relationships: Relationships,
    *,
    version_pin: str | None,
    enabled: bool | None,
) -> NoCodeModuleModel:
    """Everything is checked before the one transaction that writes the no-code module and
    the module's pointer to it."""
    rights = authorization.organization_access(principal, organization)
    registry.require_rights(rights, "creating a no-code module")
    if relationships.registry_module_id is None:
        raise Unprocessable(
            "the registry-module relationship is required: {data: {type, id}}",
            pointer=REGISTRY_MODULE,
        )
    module = _registry_module(organization, relationships.registry_module_id)
    if module.registry_name != "private":
        raise Unprocessable(
            "no-code provisioning takes a module of the organization's private registry",
            pointer=f"{REGISTRY_MODULE}/data/id",
        )
    _check_free(module)
    item = _new_item(
        module,
        version_pin=_pin(module, version_pin),
        enabled=True if enabled is None else enabled,
        variable_options=_stored([], relationships.variable_options or []),
    )
    meta = {"version-pin": item.version_pin, "enabled": item.enabled}
    try:
        store.insert(item, module, audit_events.of_no_code(principal, item, "created", meta))
    except store.ModuleUnavailable:
        current = find_module(module.organization, module.key)
        if current is None:
            raise NotFound("the registry module was deleted meanwhile") from None
        _check_free(current)
        raise Conflict(
            "the registry module's no-code module changed meanwhile: try again"
        ) from None
    return item


def for_new_module(module: ModuleModel) -> NoCodeModuleModel:
    """The no-code module of a private module created with ``no-code: true`` (go-tfe's
    ``RegistryModuleCreateOptions.NoCode``), as TFE makes it: enabled, no pin, no variable
    options. The registry's create writes it in the module's own transaction, so either both
    exist or neither does."""
    return _new_item(module, version_pin=None, enabled=True, variable_options=[])


def _new_item(
    module: ModuleModel,
    *,
    version_pin: str | None,
    enabled: bool,
    variable_options: list[VariableOptionAttribute],
) -> NoCodeModuleModel:
    moment = now()
    return NoCodeModuleModel(
        new_id("nocode"),
        organization=module.organization,
        registry_module_id=module.id,
        module_key=module.key,
        version_pin=version_pin,
        enabled=enabled,
        variable_options=variable_options,
        created_at=moment,
        updated_at=moment,
    )


def _check_free(module: ModuleModel) -> None:
    if module.no_code_module_id:
        raise Unprocessable(
            f"registry module {module.id} has a no-code module already "
            f"({module.no_code_module_id}): update that one",
            pointer=f"{REGISTRY_MODULE}/data/id",
            title="registry module has already been taken",
        )


def _pin(module: ModuleModel, wanted: str | None) -> str | None:
    """``latest``, or a version of the module that has not failed and is not revoked (see
    the module's docstring); "" or None: none."""
    if not wanted:
        return None
    if wanted == LATEST:
        return LATEST
    problem = f"version-pin must be {LATEST!r} or an existing version of {module.name}"
    try:
        version = semver.parse(wanted).text
    except semver.InvalidVersion:
        raise Unprocessable(
            f"{problem}: {wanted[:64]!r} is not a version", pointer=VERSION_PIN
        ) from None
    entry = module.statuses().get(version)
    if entry is None:
        raise Unprocessable(f"{problem}: it has no version {version}", pointer=VERSION_PIN)
    if entry.get("status") in PIN_REFUSED:
        raise Unprocessable(
            f"{problem}: version {version} is {entry.get('status')} (it failed; retry it first)",
            pointer=VERSION_PIN,
        )
    if is_revoked(entry.get("revocation")):
        raise Unprocessable(f"{problem}: version {version} is revoked", pointer=VERSION_PIN)
    return version


def _stored(
    current: Sequence[VariableOptionAttribute], wanted: Iterable[OptionSpec]
) -> list[VariableOptionAttribute]:
    """The set ``wanted`` exactly, in its order. An entry keeps its id when it gives it (it
    must be one of ``current``'s) or names a variable ``current`` has; others get new ids."""
    by_id = {option.id: option for option in current}
    by_name = {option.name: option.id for option in current}
    stored = []
    for index, spec in enumerate(wanted):
        if spec.id is not None and spec.id not in by_id:
            raise Unprocessable(
                f"{spec.id[:64]!r} is not one of this no-code module's variable options",
                pointer=f"{VARIABLE_OPTIONS}/data/{index}/id",
            )
        option_id = spec.id or by_name.get(spec.name) or new_id("ncvo")
        stored.append(
            VariableOptionAttribute(
                id=option_id, name=spec.name, type=spec.type, options=list(spec.options)
            )
        )
    if len({option.id for option in stored}) != len(stored):
        raise Unprocessable(
            "two variable options would share one id: give each variable once",
            pointer=f"{VARIABLE_OPTIONS}/data",
        )
    return stored


def _plain(options: Iterable[VariableOptionAttribute]) -> str:
    return json.dumps([[o.id, o.name, o.type, list(o.options or [])] for o in options])


def update(
    principal: Principal,
    no_code_id: str,
    relationships: Relationships,
    *,
    version_pin: str | None,
    enabled: bool | None,
) -> NoCodeModuleModel:
    """Change what is given; a PATCH that changes nothing writes nothing and answers what
    create answered. The registry module cannot change (go-tfe sends it on every PATCH)."""
    item = manageable(principal, no_code_id)
    given_module = relationships.registry_module_id
    if given_module is not None and given_module != item.registry_module_id:
        raise Unprocessable(
            "a no-code module's registry module cannot change: delete it and create another",
            pointer=f"{REGISTRY_MODULE}/data/id",
        )
    actions: list[Any] = []
    changed: list[str] = []
    if version_pin is not None:
        pin = _pin(_module_of(item), version_pin)
        if pin != item.version_pin:
            field = NoCodeModuleModel.version_pin
            actions.append(field.set(pin) if pin else field.remove())
            changed.append("version-pin")
    if enabled is not None and enabled != item.enabled:
        actions.append(NoCodeModuleModel.enabled.set(enabled))
        changed.append("enabled")
    if relationships.variable_options is not None:
        options = _stored(item.variable_options or [], relationships.variable_options)
        if _plain(options) != _plain(item.variable_options or []):
            actions.append(NoCodeModuleModel.variable_options.set(options))
            changed.append("variable-options")
    if actions:
        actions.append(NoCodeModuleModel.updated_at.set(now()))
        event = audit_events.of_no_code(principal, item, "updated", {"changed": changed})
        try:
            store.update(item, actions, event)
        except store.NoCodeGone:
            raise NotFound(f"no-code module {no_code_id} was deleted meanwhile") from None
    return item


def delete(principal: Principal, no_code_id: str) -> None:
    item = manageable(principal, no_code_id)
    try:
        store.delete(item, audit_events.of_no_code(principal, item, "deleted"))
    except store.NoCodeGone:
        raise NotFound(f"no-code module {no_code_id} not found") from None


def delete_for_modules(modules: Iterable[ModuleModel]) -> None:
    """The cascade of deleted registry modules: the no-code module each module item named
    (one DeleteItem each; nothing at all for a module without one, so deletes cost what they
    did). A no-code module created in the instant between a delete's read of the module and
    its delete of the module item is not seen here; the organization's delete still sweeps
    it (it is found by its organization), and until then it answers reads as before."""
    store.delete_ids(m.no_code_module_id for m in modules if m.no_code_module_id)


def delete_all_for_organization(organization: str) -> None:
    """The cascade of a deleted organization: one Query on the index."""
    store.delete_items(store.of_organization(organization))


# ----- the version's variables --------------------------------------------------------------


def module_variables(
    principal: Principal, no_code_id: str, version: str
) -> tuple[NoCodeModuleModel, ModuleVersionModel, list[dict[str, Any]]]:
    """The root module's inputs of one ``ok`` version, as ingest parsed and stored them
    (the version's metadata object); 404 for a version that is not there (or not ok)."""
    item, _ = readable(principal, no_code_id)
    module = _module_of(item)
    missing = NotFound(f"version {version[:64]!r} of {module.name}/{module.provider} not found")
    try:
        parsed = semver.parse(version)
    except semver.InvalidVersion:
        raise missing from None
    if module.statuses().get(parsed.text, {}).get("status") != VersionStatus.OK:
        raise missing
    stored = find_version(module.id, parsed.order_key)
    if stored is None:
        raise missing
    metadata = objects.get_metadata(stored.metadata_key) if stored.metadata_key else {}
    inputs = (metadata.get("root") or {}).get("inputs") or []
    return item, stored, [i for i in inputs if isinstance(i, dict) and i.get("name")]


# ----- provisioning -------------------------------------------------------------------------

PROVISIONING_TITLE = "no-code provisioning is not available"
PROVISIONING_DETAIL = (
    "creating or upgrading a workspace from a no-code module runs Terraform (a plan and an "
    "apply) in Terraform Enterprise's workspaces; this registry runs no Terraform, so it "
    "does not offer no-code provisioning. Use the module from a workspace of your own: "
    "its source and version are in the registry."
)


def provisioning_refusal(principal: Principal, no_code_id: str) -> Unprocessable:
    """The answer to a provisioning request (a workspace from the module, or its upgrade),
    for the route to raise.

    Always a 422 once the no-code module is known to be readable (a 404 first otherwise):
    the request is well-formed but cannot be carried out here, which is what 422 says and a
    status TFE documents for these endpoints, so clients report its title and detail as they
    would any refusal. Not a 501: that is a server error, which clients and monitors treat as
    an outage (and retry), and this refusal is permanent and deliberate. Not a 409: nothing
    about the resource's state would make the same request succeed later.
    """
    readable(principal, no_code_id)
    return Unprocessable(PROVISIONING_DETAIL, title=PROVISIONING_TITLE)
