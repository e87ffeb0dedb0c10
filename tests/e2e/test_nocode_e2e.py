"""No-code modules through pytfe 1.5.0's client, and a module's tag bindings over HTTP, against
the real local stack (moto server, ingest poller, API)."""

from __future__ import annotations

import io

import pytest

pytest.importorskip("pytfe")

from pytfe import TFEClient, TFEConfig
from pytfe.errors import NotFound, TFEError
from pytfe.models import OrganizationCreateOptions
from pytfe.models.no_code_module import (
    NoCodeModuleCreateOptions,
    NoCodeModuleIncludeOpt,
    NoCodeModuleReadOptions,
    NoCodeModuleUpdateOptions,
    NoCodeVariableOption,
    NoCodeWorkspaceCreateOptions,
)
from pytfe.models.registry_module import (
    RegistryModuleCreateOptions,
    RegistryModuleCreateVersionOptions,
    RegistryModuleID,
    RegistryModuleVersionStatus,
)

from tests.conftest import tar_gz
from tests.e2e.conftest import ADMIN_TOKEN, Stack, wait_for

pytestmark = pytest.mark.e2e

ORG = "nocode-co"
MODULE_TF = """
variable "region" {
  type        = string
  description = "Where to deploy"
  default     = "eu-west-1"
}
variable "size" { type = string }
output "region" { value = var.region }
"""


def test_no_code_module_through_pytfe_and_module_tag_bindings_over_http(stack: Stack):
    config = TFEConfig(
        address=stack.url, token=ADMIN_TOKEN, max_retries=1, timeout=15, ca_bundle=None
    )
    tfe = TFEClient(config)
    tfe.organizations.create(OrganizationCreateOptions(name=ORG, email="ops@nocode.io"))
    try:
        module = tfe.registry_modules.create(
            ORG, RegistryModuleCreateOptions(name="app", provider="aws")
        )
        address = RegistryModuleID(organization=ORG, name="app", provider="aws")
        version = tfe.registry_modules.create_version(
            address, RegistryModuleCreateVersionOptions(version="1.0.0")
        )
        tfe.registry_modules.upload_tar_gzip(
            version.links["upload"], io.BytesIO(tar_gz({"main.tf": MODULE_TF}))
        )
        settled = wait_for(
            lambda: tfe.registry_modules.read_version(address, "1.0.0"),
            lambda v: v.status == RegistryModuleVersionStatus.OK,
        )
        assert settled.status == RegistryModuleVersionStatus.OK

        # create, with variable options and a pin
        options = [
            NoCodeVariableOption(
                variable_name="region", variable_type="string", options=["eu-west-1", "us-east-1"]
            ),
            NoCodeVariableOption(variable_name="size", variable_type="string", options=["s", "m"]),
        ]
        created = tfe.no_code_modules.create(
            ORG,
            NoCodeModuleCreateOptions(
                registry_module_id=module.id, version_pin="1.0.0", variable_options=options
            ),
        )
        assert created.id.startswith("nocode-")
        assert (created.enabled, created.version_pin) == (True, "1.0.0")
        assert created.organization.id == ORG
        assert created.registry_module.id == module.id
        assert len(created.variable_options) == 2

        # read, with the variable options included
        read = tfe.no_code_modules.read(
            created.id, NoCodeModuleReadOptions(include=[NoCodeModuleIncludeOpt.VARIABLE_OPTIONS])
        )
        assert read.id == created.id
        assert [(o.variable_name, o.variable_type, o.options) for o in read.variable_options] == [
            ("region", "string", ["eu-west-1", "us-east-1"]),
            ("size", "string", ["s", "m"]),
        ]

        # update (pytfe reads the module's relationship first, then PATCHes)
        updated = tfe.no_code_modules.update(created.id, NoCodeModuleUpdateOptions(enabled=False))
        assert (updated.id, updated.enabled, updated.version_pin) == (created.id, False, "1.0.0")

        # the version's variables, with the allowed values
        variables = {v.name: v for v in tfe.no_code_modules.read_variables(created.id, "1.0.0")}
        assert set(variables) == {"region", "size"}
        assert variables["region"].options == ["eu-west-1", "us-east-1"]
        assert variables["region"].required is False
        assert variables["size"].required is True and variables["size"].default is None

        # provisioning is refused with a clear error, not a server error
        with pytest.raises(TFEError) as refused:
            tfe.no_code_modules.create_workspace(
                created.id, NoCodeWorkspaceCreateOptions(name="app-dev", project_id="prj-x")
            )
        assert "runs no Terraform" in str(refused.value)

        # the module lists its no-code module, and includes it
        http = stack.session()
        listed = http.get(
            stack.api(f"/organizations/{ORG}/registry-modules?include=no-code-modules")
        )
        assert listed.status_code == 200
        body = listed.json()
        assert body["data"][0]["relationships"]["no-code-modules"]["data"] == [
            {"id": created.id, "type": "no-code-modules"}
        ]
        assert [i["id"] for i in body["included"]] == [created.id]

        # tag bindings on the module: PATCH replaces them, GET lists them
        patched = http.patch(
            stack.api(f"/organizations/{ORG}/registry-modules/private/{ORG}/app/aws"),
            json={
                "data": {
                    "type": "registry-modules",
                    "relationships": {
                        "tag-bindings": {
                            "data": [
                                {
                                    "type": "tag-bindings",
                                    "attributes": {"key": "team", "value": "apps"},
                                }
                            ]
                        }
                    },
                }
            },
        )
        assert patched.status_code == 200, patched.text
        related = patched.json()["data"]["relationships"]["tag-bindings"]["links"]["related"]
        assert related == f"/api/v2/registry-modules/{module.id}/tag-bindings"
        bindings = http.get(stack.url + related)
        assert bindings.status_code == 200
        assert [(b["type"], b["attributes"]) for b in bindings.json()["data"]] == [
            ("tag-bindings", {"key": "team", "value": "apps"})
        ]

        # delete
        tfe.no_code_modules.delete(created.id)
        with pytest.raises(NotFound):
            tfe.no_code_modules.read(created.id)
    finally:
        tfe.organizations.delete(ORG)


def test_go_tfe_no_code_cases_through_pytfe_and_http(stack: Stack):
    """go-tfe's TestRegistryModulesList/include_no-code_modules and
    TestRegistryNoCodeModulesCreate/with_version_pin_given, ported: a module created with
    ``no-code: true`` is listed with its no-code module under ``include=no-code-modules``;
    a no-code module may pin the version just created, still pending (never uploaded)."""
    org = "nocode-go-tfe"
    tfe = TFEClient(
        TFEConfig(address=stack.url, token=ADMIN_TOKEN, max_retries=1, timeout=15, ca_bundle=None)
    )
    tfe.organizations.create(OrganizationCreateOptions(name=org, email="ops@nocode.io"))
    try:
        plain = tfe.registry_modules.create(
            org, RegistryModuleCreateOptions(name="plain", provider="aws")
        )
        iam = tfe.registry_modules.create(
            org, RegistryModuleCreateOptions(name="iam", provider="aws", no_code=True)
        )
        assert iam.no_code is True
        listed = stack.session().get(
            stack.api(f"/organizations/{org}/registry-modules?include=no-code-modules")
        )
        assert listed.status_code == 200, listed.text
        body = listed.json()
        relation = {m["id"]: m["relationships"]["no-code-modules"]["data"] for m in body["data"]}
        assert relation[plain.id] == []
        (ref,) = relation[iam.id]
        assert [(i["type"], i["id"]) for i in body["included"]] == [("no-code-modules", ref["id"])]
        made = tfe.no_code_modules.read(ref["id"])
        assert (made.enabled, made.version_pin, made.registry_module.id) == (True, None, iam.id)

        # a pin on the version just created (pending: nothing uploaded)
        version = tfe.registry_modules.create_version(
            RegistryModuleID(organization=org, name="plain", provider="aws"),
            RegistryModuleCreateVersionOptions(version="1.2.3"),
        )
        assert version.status == RegistryModuleVersionStatus.PENDING
        pinned = tfe.no_code_modules.create(
            org, NoCodeModuleCreateOptions(registry_module_id=plain.id, version_pin="1.2.3")
        )
        assert (pinned.enabled, pinned.version_pin) == (True, "1.2.3")
        assert pinned.registry_module.id == plain.id
        with pytest.raises(TFEError):  # a version the module does not have
            tfe.no_code_modules.update(pinned.id, NoCodeModuleUpdateOptions(version_pin="1.2.5"))
    finally:
        tfe.organizations.delete(org)
