"""Publishing from VCS through the real local stack: a git server on loopback, pytfe
creating the module, the stack's own queue poller doing the import, a signed webhook for a
new tag, and the real ``terraform`` installing what was published."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("pytfe")

from pytfe import TFEClient, TFEConfig
from pytfe.models.registry_module import (
    RegistryModuleCreateWithVCSConnectionOptions,
    RegistryModuleID,
    RegistryModuleVCSRepoOptions,
)

from tests.conftest import doc
from tests.e2e.conftest import ADMIN_TOKEN, VCS_HOST, Stack, wait_for
from tests.e2e.test_terraform_cli import HOST, terraform_get, write_cli_config
from tests.support.mirror_upstream import Listener
from tests.support.vcs_git_server import TOKEN, GitServer, serve

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(shutil.which("terraform") is None, reason="terraform is not on PATH"),
]

ORG = "vcs-co"


@pytest.fixture
def git_server() -> Iterator[tuple[GitServer, dict[str, str]]]:
    yield from serve()


def installed(workdir: Path, cli_config: Path, constraint: str) -> str:
    version, directory = terraform_get(workdir, cli_config, constraint, f"{HOST}/{ORG}/net/aws")
    assert 'variable "cidr"' in (directory / "main.tf").read_text()
    return version


def test_publish_from_git_then_a_webhook_tag_reaches_terraform(
    stack: Stack, git_server: tuple[GitServer, dict[str, str]], tmp_path: Path
) -> None:
    server, shas = git_server
    admin = stack.session()
    assert admin.post(
        stack.api("/organizations"), json=doc("organizations", name=ORG, email="o@x.io")
    ).ok
    base = server.url.replace("127.0.0.1", VCS_HOST)  # the name the stack may reach
    connection = admin.post(
        stack.api(f"/organizations/{ORG}/oauth-clients"),
        json=doc(
            "oauth-clients",
            **{
                "service-provider": "gitlab_enterprise_edition",
                "http-url": base,
                "api-url": base + "/api/v4",
                "oauth-token-string": TOKEN,
            },
        ),
    )
    assert connection.status_code == 201, connection.text
    token_id = connection.json()["data"]["relationships"]["oauth-tokens"]["data"][0]["id"]

    # pytfe, unchanged: tag-based publishing goes to the deprecated POST /registry-modules.
    client = TFEClient(TFEConfig(address=stack.url, token=ADMIN_TOKEN))
    module = client.registry_modules.create_with_vcs_connection(
        RegistryModuleCreateWithVCSConnectionOptions(
            vcs_repo=RegistryModuleVCSRepoOptions(
                identifier="acme/terraform-aws-net",
                display_identifier="acme/terraform-aws-net",
                oauth_token_id=token_id,
            )
        )
    )
    assert (module.name, module.provider, module.namespace) == ("net", "aws", ORG)
    assert module.vcs_repo is not None and module.vcs_repo.webhook_url
    module_id = RegistryModuleID(organization=ORG, name="net", provider="aws")

    def version_statuses() -> dict[str, str]:
        read = client.registry_modules.read(module_id)
        return {v.version: v.status.value for v in read.version_statuses}

    settled = wait_for(
        version_statuses,
        lambda s: len(s) == 4 and all(v in ("ok", "reg_ingress_failed") for v in s.values()),
    )
    assert settled == {
        "1.0.0": "ok",
        "1.1.0-rc.1": "ok",
        "1.1.0": "ok",
        "1.2.0": "reg_ingress_failed",
    }
    commits = client.registry_modules.list_commits(module_id)
    assert commits.items[0].sha == shas["net-main"]

    cli = write_cli_config(tmp_path, stack, ADMIN_TOKEN)
    assert installed(tmp_path / "first", cli, "~> 1.0") == "1.1.0"

    # A new tag, and GitLab's tag push delivery with the module's secret token.
    server.repos["acme/terraform-aws-net"].refs[b"refs/tags/v1.3.0"] = shas["net-main"].encode()
    secret = admin.post(
        stack.api(f"/registry-modules/{module.id}/actions/regenerate-webhook-secret")
    ).json()["data"]["attributes"]["secret"]
    hook = module.vcs_repo.webhook_url
    payload = json.dumps({"object_kind": "tag_push", "ref": "refs/tags/v1.3.0"})
    forged = admin.post(
        hook,
        data=payload,
        headers={
            "Content-Type": "application/json",
            "X-Gitlab-Event": "Tag Push Hook",
            "X-Gitlab-Token": "guess",
        },
    )
    assert forged.status_code == 401
    delivered = admin.post(
        hook,
        data=payload,
        headers={
            "Content-Type": "application/json",
            "X-Gitlab-Event": "Tag Push Hook",
            "X-Gitlab-Token": secret,
        },
    )
    assert delivered.status_code == 202, delivered.text
    assert wait_for(version_statuses, lambda s: s.get("1.3.0") == "ok").get("1.3.0") == "ok"
    assert installed(tmp_path / "second", cli, "~> 1.0") == "1.3.0"


def test_an_owners_vcs_host_at_an_unlisted_loopback_port_is_refused_unconnected(
    stack: Stack,
) -> None:
    """An owner names a VCS host at 127.0.0.1 (which the stack does not list): the import
    fails, saying the fetch was refused, and nothing connected to that port."""
    listener = Listener()
    org = "vcs-refused"
    admin = stack.session()
    try:
        assert admin.post(
            stack.api("/organizations"), json=doc("organizations", name=org, email="o@x.io")
        ).ok
        base = f"http://127.0.0.1:{listener.port}"
        connection = admin.post(
            stack.api(f"/organizations/{org}/oauth-clients"),
            json=doc(
                "oauth-clients",
                **{
                    "service-provider": "github_enterprise",
                    "http-url": base,
                    "api-url": base + "/api/v3",
                    "oauth-token-string": TOKEN,
                },
            ),
        )
        assert connection.status_code == 201, connection.text
        token = connection.json()["data"]["relationships"]["oauth-tokens"]["data"][0]["id"]
        repo = {"identifier": "acme/terraform-aws-net", "oauth-token-id": token}
        created = admin.post(
            stack.api(f"/organizations/{org}/registry-modules/vcs"),
            json=doc("registry-modules", **{"vcs-repo": {**repo, "display-identifier": "x"}}),
        )
        assert created.status_code == 201, created.text
        module = stack.api(f"/organizations/{org}/registry-modules/private/{org}/net/aws")

        def sync() -> dict[str, Any]:
            return admin.get(module).json()["data"]["attributes"]["vcs-sync"] or {}

        settled = wait_for(sync, lambda s: s.get("status") == "failed")
    finally:
        listener.close()
    assert settled.get("status") == "failed", settled
    assert "not an allowed destination" in settled["error"]
    assert not listener.told(settled["error"]), settled["error"]
    assert listener.connections == []
