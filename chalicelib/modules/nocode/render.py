"""JSON:API rendering of no-code modules, their variable options and a version's variables."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from typing import Any

from chalicelib.core.api.jsonapi import resource, to_many, to_one
from chalicelib.modules.nocode.store import NoCodeModuleModel, VariableOptionAttribute
from chalicelib.modules.store import ModuleVersionModel

TYPE = "no-code-modules"
OPTION_TYPE = "variable-options"
VARIABLE_TYPE = "registry-module-variables"


def path(no_code_id: str) -> str:
    return f"/api/v2/no-code-modules/{no_code_id}"


def render_no_code_module(item: NoCodeModuleModel) -> dict[str, Any]:
    """What create, read, update and ``include=no-code-modules`` answer (go-tfe compares an
    unchanged update with the create). ``version-pin`` is ``null`` when nothing is pinned."""
    options = item.variable_options or []
    return resource(
        TYPE,
        item.id,
        {"version-pin": item.version_pin, "enabled": item.enabled},
        relationships={
            "organization": to_one("organizations", item.organization),
            "registry-module": to_one("registry-modules", item.registry_module_id),
            "variable-options": to_many(OPTION_TYPE, (o.id for o in options)),
        },
        links={"self": path(item.id)},
    )


def render_variable_option(option: VariableOptionAttribute) -> dict[str, Any]:
    attributes = {
        "variable-name": option.name,
        "variable-type": option.type,
        "options": list(option.options or []),
    }
    return resource(OPTION_TYPE, option.id, attributes)


def render_variable_options(items: Sequence[NoCodeModuleModel]) -> list[dict[str, Any]]:
    """``include=variable-options``: every option of ``items``, in their stored order."""
    return [render_variable_option(o) for item in items for o in item.variable_options or []]


def render_module_variables(
    item: NoCodeModuleModel, version: ModuleVersionModel, inputs: Iterable[dict[str, Any]]
) -> list[dict[str, Any]]:
    """The version's root-module inputs as ``registry-module-variables``. ``options`` are the
    no-code module's allowed values for that variable ([] when it has none); ``default`` is
    the HCL source text of the default (``null`` for a required variable). Ingest does not
    read a variable's ``sensitive`` flag, so it is false unless the metadata says it."""
    allowed = {o.name: list(o.options or []) for o in item.variable_options or []}
    out = []
    for variable in inputs:
        name = str(variable["name"])
        required = bool(variable.get("required"))
        attributes = {
            "name": name,
            "type": variable.get("type") or "",
            "description": variable.get("description") or "",
            "default": None if required else variable.get("default"),
            "required": required,
            "sensitive": bool(variable.get("sensitive")),
            "options": allowed.get(name, []),
            "has-global": False,
        }
        out.append(resource(VARIABLE_TYPE, _variable_id(version.id, name), attributes))
    return out


def _variable_id(version_id: str, name: str) -> str:
    """Stable per version and variable, so clients can key a form on it."""
    digest = hashlib.sha256(f"{version_id}/{name}".encode()).hexdigest()[:16]
    return f"rmvar-{digest}"
