"""What one directory of a module declares (variables, outputs, module calls, resources,
providers), gathered alike from both syntaxes (``hcl_native``, ``hcl_json``) for ``hcl``'s
description, and the one error every step raises.

Override files (``override.tf``, ``*_override.tf``) are applied last and only replace the
fields they set, as Terraform merges them; otherwise the first declaration of a name wins.
"""

from __future__ import annotations

from typing import Any

_BUILTIN_PROVIDERS = frozenset({"terraform"})
_BOM = b"\xef\xbb\xbf"


class HclError(Exception):
    """A Terraform file cannot be parsed; ``message`` names the file (and line)."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


def decode(path: str, content: bytes) -> bytes:
    """Validate UTF-8 (Terraform requires it) and drop a BOM."""
    try:
        content.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = content.count(b"\n", 0, exc.start) + 1
        raise HclError(f"{path}:{line}: file is not valid UTF-8") from None
    return content[len(_BOM) :] if content.startswith(_BOM) else content


class Collector:
    """Accumulates one directory's declarations from HCL and JSON files alike."""

    def __init__(self) -> None:
        self.variables: dict[str, dict[str, Any]] = {}
        self.outputs: dict[str, dict[str, Any]] = {}
        self.modules: dict[str, dict[str, Any]] = {}
        self.resources: dict[tuple[str, str], dict[str, str]] = {}
        self.required: dict[str, tuple[list[str], list[str]]] = {}  # name -> sources, versions
        self.implicit: set[str] = set()
        # ``terraform { required_version }`` of every file: constraints add up, as Terraform's.
        self.core_versions: list[str] = []
        self.override = False

    @staticmethod
    def _merge(table: dict[Any, dict[str, Any]], key: Any, fields: dict[str, Any], over: bool):
        if key not in table:
            table[key] = fields
        elif over:
            table[key].update(fields)

    def variable(self, name: str, fields: dict[str, Any]) -> None:
        self._merge(self.variables, name, fields, self.override)

    def output(self, name: str, fields: dict[str, Any]) -> None:
        self._merge(self.outputs, name, fields, self.override)

    def module(self, name: str, fields: dict[str, Any]) -> None:
        self._merge(self.modules, name, fields, self.override)

    def resource(self, rtype: str, name: str, provider: str | None, managed: bool) -> None:
        local = provider.split(".", 1)[0].strip() if provider else rtype.split("_", 1)[0]
        if local and local not in _BUILTIN_PROVIDERS:
            self.implicit.add(local)
        if managed:
            self.resources.setdefault((rtype, name), {"name": name, "type": rtype})

    def provider_block(self, name: str, version: str | None) -> None:
        self.implicit.add(name)
        if version:
            self.required_provider(name, None, version)

    def required_provider(self, name: str, source: str | None, version: str | None) -> None:
        """Several declarations of one provider: first source wins, constraints add up."""
        sources, versions = self.required.setdefault(name, ([], []))
        if source and source.strip():
            sources.append(source.strip())
        if version and version.strip() and version.strip() not in versions:
            versions.append(version.strip())

    def required_core(self, version: str | None) -> None:
        if version and version.strip() and version.strip() not in self.core_versions:
            self.core_versions.append(version.strip())

    def providers(self) -> list[dict[str, str]]:
        result = []
        for name in sorted(set(self.required) | self.implicit):
            sources, versions = self.required.get(name, ([], []))
            source = sources[0] if sources else name
            parts = source.split("/")
            if len(parts) == 1:
                namespace, source = "hashicorp", f"hashicorp/{source}"
            else:
                namespace = parts[-2]
            result.append(
                {
                    "name": name,
                    "namespace": namespace,
                    "source": source,
                    "version": ", ".join(versions),
                }
            )
        return result
