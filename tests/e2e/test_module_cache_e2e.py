"""The real ``terraform`` binary installs a public module through the registry's module cache,
and keeps installing it with the upstream gone: the shared stack's stand-in public registry
(``mirror_upstream``, REGISTRY_MIRROR_UPSTREAM_URL) answers ``modules.v1`` for
``terraform-aws-modules/vpc/aws`` with a ``git::`` source on a local git server (never the
internet); ``terraform init`` against the stack's host installs it; the stand-in and the
git server are stopped, the kept version list is past its TTL, and a fresh ``terraform
init`` (new directory, nothing cached by terraform) still installs it from the cache."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import requests

from tests.e2e.conftest import ADMIN_TOKEN, VCS_HOST, Stack, wait_for
from tests.e2e.test_local_stack import aws
from tests.support.mirror_upstream import Upstream
from tests.support.vcs_git_server import GitServer, RepoBuilder

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(shutil.which("terraform") is None, reason="terraform is not on PATH"),
]

HOST = "registry.test"  # never resolved: the CLI config's host block maps its services
MODULE = "terraform-aws-modules/vpc/aws"
MAIN_TF = """
variable "cidr" {
  type        = string
  default     = "10.0.0.0/16"
  description = "The CIDR block of the VPC."
}

output "vpc_cidr_block" {
  value       = var.cidr
  description = "The CIDR block of the VPC."
}
"""


@pytest.fixture
def git_host() -> Iterator[GitServer]:
    """A public git host: terraform-aws-modules/terraform-aws-vpc tagged v5.0.0, served to
    anyone (the cache clones public sources without credentials)."""
    repo = RepoBuilder()
    repo.commit({"main.tf": MAIN_TF, "README.md": "# AWS VPC Terraform module\n"}, "v5.0.0")
    repo.tag("v5.0.0")
    with GitServer({"terraform-aws-modules/terraform-aws-vpc": repo.repo}, anonymous=True) as git:
        yield git


def table(stack: Stack, short: str) -> str:
    names = aws(stack, "dynamodb").list_tables()["TableNames"]
    (found,) = [n for n in names if n.endswith(f"-{short}")]
    return str(found)


def put_settings(stack: Stack, namespaces: list[str], hosts: list[str]) -> None:
    """The site settings, as a site admin sets them (the API)."""
    attributes = {"allowed-namespaces": namespaces, "allowed-source-hosts": hosts}
    saved = stack.session().patch(
        stack.api("/admin/module-cache-settings"),
        json={"data": {"type": "module-cache-settings", "attributes": attributes}},
    )
    assert saved.status_code == 200, saved.text


def terraform_init(workdir: Path, cli_config: Path) -> Path:
    """``terraform init`` of a configuration using the cached module; the installed
    module's directory."""
    workdir.mkdir(parents=True)
    (workdir / "main.tf").write_text(
        f'module "vpc" {{\n  source  = "{HOST}/{MODULE}"\n  version = "~> 5.0"\n}}\n'
    )
    env = {
        **os.environ,
        "TF_CLI_CONFIG_FILE": str(cli_config),
        "CHECKPOINT_DISABLE": "1",
        "TF_IN_AUTOMATION": "1",
    }
    env.pop("TF_PLUGIN_CACHE_DIR", None)
    result = subprocess.run(
        ["terraform", "init", "-no-color", "-input=false", "-backend=false"],
        cwd=workdir,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    return workdir / ".terraform/modules/vpc"


def versions(stack: Stack) -> requests.Response:
    return requests.get(
        f"{stack.url}/api/registry/v1/modules/{MODULE}/versions",
        headers={"Authorization": f"Bearer {ADMIN_TOKEN}"},
        timeout=30,
    )


def test_terraform_installs_a_cached_module_and_still_does_with_the_upstream_down(
    stack: Stack, mirror_upstream: Upstream, git_host: GitServer, tmp_path: Path
) -> None:
    git_url = git_host.url.replace("127.0.0.1", VCS_HOST)  # the name the stack may reach
    source = f"git::{git_url}/terraform-aws-modules/terraform-aws-vpc.git?ref=v5.0.0"
    mirror_upstream.modules[MODULE] = {"5.0.0": source}
    put_settings(stack, ["terraform-aws-modules"], [git_url.split("//", 1)[1]])
    config = tmp_path / "cli.tfrc"
    config.write_text(
        f'host "{HOST}" {{\n'
        f'  services = {{\n    "modules.v1" = "{stack.url}/api/registry/v1/modules/"\n  }}\n}}\n'
        f'credentials "{HOST}" {{\n  token = "{ADMIN_TOKEN}"\n}}\n'
    )
    try:
        # Each instance re-reads the settings within REGISTRY_SETTINGS_CACHE_SECONDS.
        listed = wait_for(lambda: versions(stack), lambda r: r.status_code == 200)
        assert listed.status_code == 200, listed.text
        assert [v["version"] for v in listed.json()["modules"][0]["versions"]] == ["5.0.0"]

        first = terraform_init(tmp_path / "first", config)
        assert 'variable "cidr"' in (first / "main.tf").read_text()
        assert git_host.requests > 0
        cached: Any = aws(stack, "dynamodb").get_item(
            TableName=table(stack, "module-cache"),
            Key={"address": {"S": MODULE}, "item": {"S": "v#5.0.0"}},
        )["Item"]
        assert cached["source_host"]["S"] == git_url.split("//", 1)[1]

        # The upstream and the git host go down; the kept list is past its TTL.
        mirror_upstream.stop()
        git_host.server.shutdown()
        git_host.server.server_close()
        aws(stack, "dynamodb").update_item(
            TableName=table(stack, "module-cache"),
            Key={"address": {"S": MODULE}, "item": {"S": "versions"}},
            UpdateExpression="SET fresh_until = :zero",
            ExpressionAttributeValues={":zero": {"N": "0"}},
        )
        stale = versions(stack)
        assert stale.status_code == 200, stale.text
        assert stale.json()["meta"] == {"stale": True}
        assert stale.headers["Warning"].startswith("110 ")

        second = terraform_init(tmp_path / "second", config)
        assert (second / "main.tf").read_text() == (first / "main.tf").read_text()

        # The detail routes over HTTP, upstream down: what the cached archive's ingest found.
        admin = {"Authorization": f"Bearer {ADMIN_TOKEN}"}
        base = f"{stack.url}/api/registry/v1/modules/{MODULE}"
        detail = requests.get(base, headers=admin, timeout=30)
        assert detail.status_code == 200, detail.text
        assert detail.json()["version"] == "5.0.0"
        assert [i["name"] for i in detail.json()["root"]["inputs"]] == ["cidr"]
        assert detail.json()["meta"] == {"stale": True}
        latest = requests.get(f"{base}/download", headers=admin, timeout=30, allow_redirects=False)
        assert latest.status_code == 302, latest.text
        assert latest.headers["Location"].endswith(f"/{MODULE}/5.0.0/download")
        assert requests.get(base, timeout=30).status_code == 401
    finally:
        mirror_upstream.start()
        mirror_upstream.modules.pop(MODULE, None)
        put_settings(stack, [], ["github.com"])
