"""A module version's SBOM: CycloneDX 1.6 JSON, built with ``cyclonedx-python-lib``.

What a Terraform module "contains" is what it asks ``terraform init`` to fetch: the
providers it requires (each with its version constraint), the modules it calls (each with
its source and version constraint), and the Terraform version it needs. The module itself is
the BOM's metadata component, named by its source address and identified by the SHA-256 of
the archive the registry serves (the same digest the provenance's subject names).

Constraints are not versions: CycloneDX's ``version`` says which version a component *is*,
so each constraint is a property (``terraform:version-constraint``) and ``version`` stays
empty. The document is deterministic for one version (its serial number derives from the
archive's digest, its timestamp is the caller's), so rebuilding it changes nothing.

The library (and its serializers) load on the first SBOM built: only the function that
attests versions pays for them.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from cyclonedx.model.component import Component

MEDIA_TYPE = "application/vnd.cyclonedx+json"
SPEC_VERSION = "1.6"
PUBLIC_REGISTRY = "registry.terraform.io"
# Properties in the ``terraform:`` namespace of this registry's SBOMs.
CONSTRAINT = "terraform:version-constraint"
LOCAL_NAME = "terraform:provider-local-name"
CALL_NAME = "terraform:module-call"
# Serial numbers are UUIDv5 in this namespace, of the archive's digest and the address.
_SERIALS = uuid.UUID("6f1c2a4e-2b8e-5d2a-9a51-3c1a9e0f7d21")


@dataclass(frozen=True)
class ModuleSubject:
    """The module version an SBOM describes: its source address
    (``registry.example.com/org/vpc/aws``), version and archive digest (hex SHA-256)."""

    address: str
    version: str
    sha256: str


@dataclass(frozen=True)
class Tool:
    """What made the SBOM (this registry), named in the BOM's ``metadata.tools``."""

    name: str
    version: str


def provider_address(source: str) -> str:
    """A provider's full source address: ``hashicorp/aws`` is the public registry's."""
    return source if source.count("/") >= 2 else f"{PUBLIC_REGISTRY}/{source}"


def _component(
    kind: str, name: str, ref: str, properties: dict[str, str], description: str
) -> Component:
    from cyclonedx.model import Property
    from cyclonedx.model.component import Component, ComponentScope, ComponentType

    return Component(
        type=ComponentType(kind),
        name=name,
        bom_ref=ref,
        scope=ComponentScope.REQUIRED,
        description=description,
        properties=[Property(name=k, value=v) for k, v in properties.items() if v],
    )


def build_sbom(
    subject: ModuleSubject, metadata: dict[str, Any], *, tool: Tool, timestamp: datetime
) -> str:
    """The CycloneDX 1.6 JSON document of one module version, from its parsed metadata
    (``modules.ingest.hcl.parse_module``'s shape: ``root.provider_dependencies``,
    ``root.dependencies``, ``required_version``)."""
    from cyclonedx.model import HashAlgorithm, HashType
    from cyclonedx.model.bom import Bom, BomMetaData
    from cyclonedx.model.component import Component, ComponentType
    from cyclonedx.model.tool import ToolRepository
    from cyclonedx.output.json import JsonV1Dot6

    root = metadata.get("root") or {}
    module = Component(
        type=ComponentType.LIBRARY,
        name=subject.address,
        version=subject.version,
        bom_ref=f"module:{subject.address}@{subject.version}",
        description="Terraform module",
        hashes=[HashType(alg=HashAlgorithm.SHA_256, content=subject.sha256)],
    )
    parts: list[Component] = []
    for provider in root.get("provider_dependencies") or []:
        address = provider_address(str(provider.get("source") or provider["name"]))
        parts.append(
            _component(
                "library",
                address,
                f"provider:{provider['name']}",
                {LOCAL_NAME: provider["name"], CONSTRAINT: provider.get("version") or ""},
                "Terraform provider",
            )
        )
    for call in root.get("dependencies") or []:
        parts.append(
            _component(
                "library",
                str(call.get("source") or call["name"]),
                f"module-call:{call['name']}",
                {CALL_NAME: call["name"], CONSTRAINT: call.get("version") or ""},
                "Terraform module call",
            )
        )
    required = str(metadata.get("required_version") or "")
    if required:
        parts.append(
            _component(
                "application", "terraform", "terraform", {CONSTRAINT: required}, "Terraform CLI"
            )
        )
    made_by = Component(type=ComponentType.APPLICATION, name=tool.name, version=tool.version)
    bom = Bom(
        serial_number=uuid.uuid5(_SERIALS, f"{subject.sha256}:{subject.address}"),
        metadata=BomMetaData(
            component=module,
            timestamp=timestamp,
            tools=ToolRepository(components=[made_by]),
        ),
        components=parts,
    )
    bom.register_dependency(module, parts)
    return JsonV1Dot6(bom).output_as_string(indent=2)
