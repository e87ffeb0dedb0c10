"""Module metadata (inputs, outputs, providers, ...) from Terraform ``.tf``/``.tf.json`` files
and OpenTofu's ``.tofu``/``.tofu.json`` files (which hide the ``.tf`` file of their name).

Each directory's files are read by syntax (``hcl_native`` for HCL with tree-sitter,
``hcl_json`` for JSON) into a ``declarations.Collector``; this module picks the files,
checks the sizes, and describes each directory as the registry stores it.

Ordering: inputs, outputs, dependencies and resources are in file-name order, then position
in the file (like terraform-config-inspect); provider lists are sorted by name.  Override
files (``override.tf``, ``*_override.tf``) are applied last and only replace the fields they
set, as Terraform merges them; otherwise the first declaration of a name wins.

Hostile input: every size is capped (``limits``: bytes parsed in total and per ``.tf`` file,
each stored text and name, each README) and nesting depth is bounded for both syntaxes
(``limits.MAX_NESTING_DEPTH``), with a reason the publisher can act on.
``parse_module`` raises nothing but HclError for any input (``tests/unit/test_hcl_fuzz.py``).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from chalicelib.modules.ingest import hcl_json, hcl_native
from chalicelib.modules.ingest.declarations import Collector, HclError
from chalicelib.modules.ingest.limits import Limits, readme_text, utf8_size

if TYPE_CHECKING:
    from tree_sitter import Parser

__all__ = ["HclError", "parse_module"]


# --- public API ---------------------------------------------------------------------------------


def parse_module(files: dict[str, bytes], limits: Limits | None = None) -> dict[str, Any]:
    """Describe the root module, its submodules (modules/...) and examples (examples/...).

    ``files`` maps normalised relative paths to contents (as returned by read_archive).
    Raises HclError for syntax errors, undecodable files, nesting too deep or anything over
    ``limits`` (the defaults of ``chalicelib.core.settings`` when not given) in any
    described directory.
    """
    limits = limits or Limits()
    dirs: dict[str, dict[str, bytes]] = {}
    for path, content in files.items():
        parts = path.split("/")
        if any(part.startswith(".") for part in parts):
            continue
        directory = "/".join(parts[:-1])
        if directory and not directory.startswith(("modules/", "examples/")):
            continue
        dirs.setdefault(directory, {})[parts[-1]] = content
    _check_sizes(dirs, limits)

    parser: list[Parser] = []  # created on first .tf file only
    described = {d: _describe_dir(d, names, parser, limits) for d, names in sorted(dirs.items())}
    root = described.pop("") if "" in described else _describe_dir("", {}, parser, limits)
    # Kept beside the directories, not in them: the registry protocol serves the root as
    # terraform-config-inspect describes it, which has no such field.
    required_version = root.pop(REQUIRED_VERSION)
    for other in described.values():
        other.pop(REQUIRED_VERSION)
    submodules = [d for p, d in described.items() if p.startswith("modules/") and not d["empty"]]
    examples = [d for p, d in described.items() if p.startswith("examples/") and not d["empty"]]
    return {
        "root": root,
        "submodules": submodules,
        "examples": examples,
        "providers": [p["name"] for p in root["provider_dependencies"]],
        # The root's ``terraform { required_version }`` constraints ("" when it sets none).
        "required_version": required_version,
    }


# --- per-directory collection -------------------------------------------------------------------


# OpenTofu reads ``.tofu`` and ``.tofu.json`` beside ``.tf`` and ``.tf.json``; a ``.tofu`` file
# replaces the ``.tf`` file of the same base name (``main.tofu`` hides ``main.tf``, and
# ``main.tofu.json`` hides ``main.tf.json``), so a module can serve both tools.
SUFFIXES = (".tf", ".tf.json", ".tofu", ".tofu.json")
JSON_SUFFIXES = (".tf.json", ".tofu.json")
TOFU_INSTEAD = {".tf": ".tofu", ".tf.json": ".tofu.json"}
REQUIRED_VERSION = "required_version"


def _is_tf(name: str) -> bool:
    return name.endswith(SUFFIXES) and not _is_ignored(name)


def _is_json(name: str) -> bool:
    return name.endswith(JSON_SUFFIXES)


def _config_files(names: Iterable[str]) -> list[str]:
    """The configuration files of one directory that are read: every ``.tf``, ``.tf.json``,
    ``.tofu`` and ``.tofu.json`` file except a ``.tf``/``.tf.json`` file that has a
    ``.tofu``/``.tofu.json`` file of the same base name (OpenTofu's rule)."""
    present = set(names)
    kept = []
    for name in present:
        if not _is_tf(name):
            continue
        hidden = any(
            name.endswith(tf) and name.removesuffix(tf) + tofu in present
            for tf, tofu in TOFU_INSTEAD.items()
        )
        if not hidden:
            kept.append(name)
    return kept


def _is_ignored(name: str) -> bool:
    # Terraform ignores editor/backup files: ".x", "#x#", "x~".
    return name.startswith((".", "#")) or name.endswith("~")


def _is_override(name: str) -> bool:
    stem = name.removesuffix(".json").removesuffix(".tf").removesuffix(".tofu")
    return stem == "override" or stem.endswith("_override")


def _check_sizes(dirs: dict[str, dict[str, bytes]], limits: Limits) -> None:
    """Refuse before parsing anything when the Terraform files are over the caps."""
    total = 0
    for directory, names in sorted(dirs.items()):
        for name in sorted(_config_files(names)):
            content = names[name]
            total += len(content)
            if not _is_json(name) and len(content) > limits.max_hcl_file_bytes:
                path = f"{directory}/{name}" if directory else name
                raise HclError(
                    f"{path}: file is {len(content)} bytes, over the limit of "
                    f"{limits.max_hcl_file_bytes} bytes for one .tf file"
                )
    if total > limits.max_parsed_bytes:
        raise HclError(
            f"the module's Terraform files (root, modules/ and examples/) total {total} bytes, "
            f"over the limit of {limits.max_parsed_bytes} bytes"
        )


def _check_fields(directory: str, described: dict[str, Any], limits: Limits) -> None:
    """Refuse a stored text or name over its cap, naming the declaration it belongs to."""
    where = f"{directory}: " if directory else ""
    size = utf8_size(described[REQUIRED_VERSION])
    if size > limits.max_name_bytes:
        raise HclError(
            f"{where}terraform's required_version is {size} bytes, over the limit of "
            f"{limits.max_name_bytes} bytes"
        )
    checks = (
        ("variable", "inputs", ("name",), ("description", "type", "default")),
        ("output", "outputs", ("name",), ("description",)),
        ("module", "dependencies", ("name", "source", "version"), ()),
        ("provider", "provider_dependencies", ("name", "namespace", "source", "version"), ()),
        ("resource", "resources", ("type", "name"), ()),
    )
    for kind, key, names, texts in checks:
        for item in described[key]:
            for field in (*names, *texts):
                value = item.get(field)
                if not isinstance(value, str):
                    continue
                cap = limits.max_name_bytes if field in names else limits.max_text_bytes
                size = utf8_size(value)
                if size <= cap:
                    continue
                if field == "name":
                    raise HclError(
                        f"{where}the name of {_article(kind)} {kind} is {size} bytes (it starts "
                        f"{value[:40]!r}), over the limit of {cap} bytes"
                    )
                label = str(item.get("name", ""))[:60]
                raise HclError(
                    f"{where}{kind} {label!r}: its {field} is {size} bytes, over the limit of "
                    f"{cap} bytes"
                )


def _article(word: str) -> str:
    return "an" if word[0] in "aeiou" else "a"


def _pick_readme(names: dict[str, bytes], max_bytes: int) -> str:
    candidates = [n for n in names if n.lower().startswith("readme")]
    if not candidates:
        return ""

    def rank(name: str) -> tuple[int, str]:
        lowered = name.lower()
        order = {"readme.md": 0, "readme": 1, "readme.markdown": 2, "readme.txt": 3}
        return (0 if name == "README.md" else 1 + order.get(lowered, 9), name)

    return readme_text(names[min(candidates, key=rank)], max_bytes)


def _describe_dir(
    directory: str, names: dict[str, bytes], parser: list[Parser], limits: Limits
) -> dict:
    tf_names = sorted(_config_files(names), key=lambda n: (_is_override(n), n))
    collector = Collector()
    for name in tf_names:
        path = f"{directory}/{name}" if directory else name
        collector.override = _is_override(name)
        if _is_json(name):
            hcl_json.collect(path, names[name], collector, limits.max_depth)
        else:
            if not parser:
                parser.append(hcl_native.new_parser())
            hcl_native.collect(path, names[name], parser[0], collector, limits.max_depth)

    inputs = []
    for name, fields in collector.variables.items():
        default = fields.get("default")
        inputs.append(
            {
                "name": name,
                "type": fields.get("type") or "",
                "description": fields.get("description") or "",
                "default": "" if default is None else default,
                "required": default is None,
            }
        )
    outputs = [
        {
            "name": name,
            "description": f.get("description") or "",
            "sensitive": bool(f.get("sensitive")),
        }
        for name, f in collector.outputs.items()
    ]
    dependencies = [
        {"name": name, "source": f.get("source") or "", "version": f.get("version") or ""}
        for name, f in collector.modules.items()
    ]
    described = {
        "path": directory,
        "name": directory.rsplit("/", 1)[-1] if directory else "",
        "readme": _pick_readme(names, limits.max_readme_bytes),
        "empty": not tf_names,
        "inputs": inputs,
        "outputs": outputs,
        "dependencies": dependencies,
        "provider_dependencies": collector.providers(),
        "resources": list(collector.resources.values()),
        REQUIRED_VERSION: ", ".join(collector.core_versions),
    }
    _check_fields(directory, described, limits)
    return described
