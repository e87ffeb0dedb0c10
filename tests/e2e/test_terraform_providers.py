"""The real ``terraform`` binary installs a private provider from the local stack
(``providers.v1``): published through the API with a throwaway signing key, verified by the
registry, installed and recorded in ``.terraform.lock.hcl``; a SHA256SUMS tampered with after
verification is refused."""

from __future__ import annotations

import os
import platform
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
import requests

from tests.conftest import doc
from tests.e2e.conftest import Stack, wait_for
from tests.support.provider_files import new_signing_key, provider_zip, sha256, shasums

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(shutil.which("terraform") is None, reason="terraform is not on PATH"),
]

HOST = "registry.test"  # never resolved: the CLI config's host block maps its services
ORG = "tf-providers"  # this module's own: the e2e modules share one stack
NAME = "demo"
VERSION = "1.0.0"


def machine() -> tuple[str, str]:
    """terraform's name of this machine's platform."""
    arch = {"x86_64": "amd64", "aarch64": "arm64", "arm64": "arm64"}[platform.machine().lower()]
    return platform.system().lower(), arch


def write_cli_config(directory: Path, stack: Stack, token: str) -> Path:
    config = directory / "cli.tfrc"
    config.write_text(
        f'host "{HOST}" {{\n  services = {{\n'
        f'    "providers.v1" = "{stack.url}/api/registry/v1/providers/"\n  }}\n}}\n'
        f'credentials "{HOST}" {{\n  token = "{token}"\n}}\n'
    )
    return config


def terraform_init(workdir: Path, cli_config: Path) -> subprocess.CompletedProcess[str]:
    workdir.mkdir(parents=True)
    (workdir / "main.tf").write_text(
        "terraform {\n  required_providers {\n"
        f'    {NAME} = {{\n      source  = "{HOST}/{ORG}/{NAME}"\n'
        f'      version = "{VERSION}"\n    }}\n  }}\n}}\n'
    )
    env = {
        **os.environ,
        "TF_CLI_CONFIG_FILE": str(cli_config),
        "CHECKPOINT_DISABLE": "1",
        "TF_IN_AUTOMATION": "1",
    }
    env.pop("TF_PLUGIN_CACHE_DIR", None)
    return subprocess.run(
        ["terraform", "init", "-no-color", "-input=false"],
        cwd=workdir,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def put(url: str, body: bytes) -> None:
    reply = requests.put(url, data=body, headers={"Content-Type": "application/octet-stream"})
    assert reply.status_code == 200, reply.text


def test_terraform_installs_a_signed_private_provider(stack: Stack, tmp_path: Path) -> None:
    started = time.monotonic()
    admin = stack.session()
    created = admin.post(
        stack.api("/organizations"), json=doc("organizations", name=ORG, email=f"ops@{ORG}.io")
    )
    assert created.status_code == 201, created.text
    team = admin.post(
        stack.api(f"/organizations/{ORG}/teams"),
        json=doc("teams", name="ci", **{"organization-access": {"manage-providers": True}}),
    )
    assert team.status_code == 201, team.text
    minted = admin.post(stack.api(f"/teams/{team.json()['data']['id']}/authentication-token"))
    token = minted.json()["data"]["attributes"]["token"]
    ci = stack.session(token)

    # The publisher's side: a key, the provider, a version, this machine's platform.
    signer = new_signing_key()
    key = ci.post(
        f"{stack.url}/api/registry/private/v2/gpg-keys",
        json=doc("gpg-keys", namespace=ORG, **{"ascii-armor": signer.armor}),
    )
    assert key.status_code == 201, key.text
    providers = stack.api(f"/organizations/{ORG}/registry-providers")
    provider = ci.post(
        providers,
        json=doc("registry-providers", name=NAME, namespace=ORG, **{"registry-name": "private"}),
    )
    assert provider.status_code == 201, provider.text
    base = f"{providers}/private/{ORG}/{NAME}"
    version = ci.post(
        f"{base}/versions",
        json=doc(
            "registry-provider-versions",
            version=VERSION,
            **{"key-id": signer.key_id, "protocols": ["5.0"]},
        ),
    )
    assert version.status_code == 201, version.text
    links = version.json()["data"]["links"]
    os_, arch = machine()
    archive = provider_zip(NAME, VERSION)
    filename = f"terraform-provider-{NAME}_{VERSION}_{os_}_{arch}.zip"
    sums = shasums({filename: archive})
    created_platform = ci.post(
        f"{base}/versions/{VERSION}/platforms",
        json=doc(
            "registry-provider-version-platforms",
            os=os_,
            arch=arch,
            shasum=sha256(archive),
            filename=filename,
        ),
    )
    assert created_platform.status_code == 201, created_platform.text
    put(links["shasums-upload"], sums)
    put(links["shasums-sig-upload"], signer.sign(sums))
    put(created_platform.json()["data"]["links"]["provider-binary-upload"], archive)

    def state() -> dict[str, Any]:
        return ci.get(f"{base}/versions/{VERSION}/platforms/{os_}/{arch}").json()["data"]

    checked = wait_for(state, lambda d: d["attributes"]["status"] != "pending")
    assert checked["attributes"]["status"] == "verified", checked["attributes"]
    # Over the wire, a retry with nothing to retry is a refusal that changes nothing.
    platform_url = f"{base}/versions/{VERSION}/platforms/{os_}/{arch}"
    again = ci.post(f"{platform_url}/actions/retry")
    assert again.status_code == 409, again.text
    assert "verified" in again.json()["errors"][0]["detail"]
    unknown = ci.post(f"{base}/versions/{VERSION}/platforms/plan9/amd64/actions/retry")
    assert unknown.status_code == 404 and unknown.json()["errors"], unknown.text
    assert state()["attributes"]["status"] == "verified"

    # The consumer's side: terraform init with a member's token.
    config = write_cli_config(tmp_path, stack, token)
    result = terraform_init(tmp_path / "work", config)
    assert result.returncode == 0, result.stdout + result.stderr
    # terraform verified the signature with the key the registry served ("self-signed": no
    # trust signature from HashiCorp, as for every private provider).
    installed_line = (
        f"Installed {HOST}/{ORG}/{NAME} v{VERSION} (self-signed, key ID {signer.key_id})"
    )
    assert installed_line in result.stdout, result.stdout
    lock = (tmp_path / "work" / ".terraform.lock.hcl").read_text()
    assert f'provider "{HOST}/{ORG}/{NAME}"' in lock
    assert f'"zh:{sha256(archive)}"' in lock and '"h1:' in lock
    installed = tmp_path / "work" / ".terraform/providers" / HOST / ORG / NAME / VERSION
    assert (installed / f"{os_}_{arch}" / f"terraform-provider-{NAME}_v{VERSION}_x5").exists()

    # A SHA256SUMS tampered with after verification (to the still valid upload link): the
    # registry checks it again and stops serving the version; terraform finds nothing.
    put(links["shasums-upload"], sums.replace(sha256(archive).encode(), b"0" * 64))
    version_url = f"{base}/versions/{VERSION}"
    failed = wait_for(
        lambda: ci.get(version_url).json()["data"]["attributes"],
        lambda a: a["status"] == "failed",
    )
    assert failed["status"] == "failed" and "does not verify" in failed["error"], failed
    refused = terraform_init(tmp_path / "after-tamper", config)
    assert refused.returncode != 0, refused.stdout
    # terraform reads a provider with no installable version as one that does not exist.
    assert "was not found in any of the search locations" in refused.stderr.replace("\n", " ")
    print(f"provider publish + verify + terraform init x2: {time.monotonic() - started:.1f} s")
