"""The SBOM of a module version: CycloneDX 1.6, valid against the library's bundled schema,
with the module, its providers, its module calls and its Terraform constraint."""

from __future__ import annotations

import json
from datetime import UTC, datetime

from cyclonedx.schema import SchemaVersion
from cyclonedx.validation.json import JsonStrictValidator

from chalicelib.modules.ingest.hcl import parse_module
from chalicelib.trust.sbom import CONSTRAINT, ModuleSubject, Tool, build_sbom

MAIN_TF = b"""
terraform {
  required_version = ">= 1.5"
  required_providers {
    aws = {
      source  = "hashicorp/aws"
      version = ">= 5.0"
    }
    widget = {
      source = "registry.example.com/acme/widget"
    }
  }
}

module "labels" {
  source  = "cloudposse/label/null"
  version = "0.25.0"
}

module "child" {
  source = "./modules/child"
}

resource "aws_s3_bucket" "this" {}
"""
SHA = "ab" * 32
SUBJECT = ModuleSubject("registry.test/acme/vpc/aws", "1.2.0", SHA)
WHEN = datetime(2026, 11, 28, 12, 0, tzinfo=UTC)


def _build(files: dict[str, bytes]) -> str:
    return build_sbom(
        SUBJECT, parse_module(files), tool=Tool("tfe-module-registry", "9.9"), timestamp=WHEN
    )


def _props(component: dict) -> dict[str, str]:
    return {p["name"]: p["value"] for p in component.get("properties", [])}


def test_sbom_is_valid_cyclonedx_1_6_with_every_part() -> None:
    text = _build({"main.tf": MAIN_TF})
    assert JsonStrictValidator(SchemaVersion.V1_6).validate_str(text) is None
    bom = json.loads(text)
    assert bom["bomFormat"] == "CycloneDX" and bom["specVersion"] == "1.6"
    module = bom["metadata"]["component"]
    assert module["name"] == "registry.test/acme/vpc/aws" and module["version"] == "1.2.0"
    assert module["hashes"] == [{"alg": "SHA-256", "content": SHA}]
    assert bom["metadata"]["tools"]["components"][0]["name"] == "tfe-module-registry"
    parts = {c["bom-ref"]: c for c in bom["components"]}
    assert parts["provider:aws"]["name"] == "registry.terraform.io/hashicorp/aws"
    assert _props(parts["provider:aws"])[CONSTRAINT] == ">= 5.0"
    widget = parts["provider:widget"]
    assert widget["name"] == "registry.example.com/acme/widget"
    assert CONSTRAINT not in _props(widget)  # no constraint: no property, never ""
    assert parts["module-call:labels"]["name"] == "cloudposse/label/null"
    assert _props(parts["module-call:labels"])[CONSTRAINT] == "0.25.0"
    assert parts["module-call:child"]["name"] == "./modules/child"
    assert _props(parts["terraform"])[CONSTRAINT] == ">= 1.5"
    # A constraint is not a version: no component claims one.
    assert all("version" not in c for c in bom["components"])
    (root,) = [d for d in bom["dependencies"] if d["ref"] == module["bom-ref"]]
    assert sorted(root["dependsOn"]) == sorted(parts)


def test_sbom_is_the_same_when_built_again() -> None:
    assert _build({"main.tf": MAIN_TF}) == _build({"main.tf": MAIN_TF})


def test_a_module_without_requirements_has_only_itself() -> None:
    text = _build({"main.tf": b'output "x" {\n  value = 1\n}\n'})
    assert JsonStrictValidator(SchemaVersion.V1_6).validate_str(text) is None
    bom = json.loads(text)
    assert bom.get("components", []) == []
    assert bom["metadata"]["component"]["hashes"][0]["content"] == SHA
