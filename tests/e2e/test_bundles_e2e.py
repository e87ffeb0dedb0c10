"""Air-gapped bundles between two local stacks, as two operators would move them: a module
and a signed provider published on the shared stack (the source), exported with
``python -m infrastructure.bundle export``, imported into a second stack of its own (other
ports, other tables, nothing shared) with ``... import``; ``terraform init`` against the
second stack installs the module and the signed provider. A second import skips both.
A module cached on the first stack (its upstream, the shared stand-in) travels as a
``cached-module``; the second stack, with no upstream at all, installs it."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import requests

from infrastructure import spawn
from tests.conftest import doc, tar_gz
from tests.e2e.conftest import ADMIN_TOKEN, Stack, wait_for
from tests.e2e.test_terraform_providers import machine
from tests.support.mirror_upstream import Upstream
from tests.support.provider_files import new_signing_key, provider_zip, sha256, shasums

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(shutil.which("terraform") is None, reason="terraform is not on PATH"),
]

HOST = "registry.test"  # never resolved: the CLI config's host block maps its services
ORG = "bundled"  # this module's own on the shared stack, and the second stack's
TARGET_TOKEN = "e2e-bundle-target-token"
VERSION = "1.0.0"
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def target() -> Iterator[Stack]:
    """The second registry: its own stack, nothing shared with the first."""
    # No upstream: what its module cache serves comes from bundles only.
    running = spawn.start(
        TARGET_TOKEN, REGISTRY_RATE_LIMITING="off", REGISTRY_MIRROR_UPSTREAM_URL="off"
    )
    yield Stack(running.url, running.moto_url, running.startup_seconds, running.later_output)
    assert "stopped" in spawn.stop(running)


def put(url: str, body: bytes) -> None:
    reply = requests.put(url, data=body, headers={"Content-Type": "application/octet-stream"})
    assert reply.status_code == 200, reply.text


def publish(stack: Stack, archive: bytes, provider_archive: bytes, filename: str) -> str:
    """The module vpc/aws 1.0.0 and the provider demo 1.0.0 (this machine's platform),
    signed by a new key, on ``stack``; the key's id."""
    admin = stack.session()
    made = admin.post(
        stack.api("/organizations"), json=doc("organizations", name=ORG, email="o@b.io")
    )
    assert made.status_code == 201, made.text
    modules = stack.api(f"/organizations/{ORG}/registry-modules")
    assert admin.post(modules, json=doc("registry-modules", name="vpc", provider="aws")).ok
    version = admin.post(
        stack.api(f"/registry-modules/{ORG}/vpc/aws/versions"),
        json=doc("registry-module-versions", version=VERSION),
    )
    assert version.status_code == 201, version.text
    put(version.json()["data"]["links"]["upload"], archive)

    signer = new_signing_key()
    key = admin.post(
        f"{stack.url}/api/registry/private/v2/gpg-keys",
        json=doc("gpg-keys", namespace=ORG, **{"ascii-armor": signer.armor}),
    )
    assert key.status_code == 201, key.text
    providers = stack.api(f"/organizations/{ORG}/registry-providers")
    made = admin.post(
        providers,
        json=doc("registry-providers", name="demo", namespace=ORG, **{"registry-name": "private"}),
    )
    assert made.status_code == 201, made.text
    base = f"{providers}/private/{ORG}/demo"
    created = admin.post(
        f"{base}/versions",
        json=doc(
            "registry-provider-versions",
            version=VERSION,
            **{"key-id": signer.key_id, "protocols": ["5.0"]},
        ),
    )
    assert created.status_code == 201, created.text
    os_, arch = machine()
    platform = admin.post(
        f"{base}/versions/{VERSION}/platforms",
        json=doc(
            "registry-provider-version-platforms",
            os=os_,
            arch=arch,
            shasum=sha256(provider_archive),
            filename=filename,
        ),
    )
    assert platform.status_code == 201, platform.text
    sums = shasums({filename: provider_archive})
    links = created.json()["data"]["links"]
    put(links["shasums-upload"], sums)
    put(links["shasums-sig-upload"], signer.sign(sums))
    put(platform.json()["data"]["links"]["provider-binary-upload"], provider_archive)
    wait_until_served(stack)
    return signer.key_id


def wait_until_served(stack: Stack, token: str = "e2e-admin-token") -> None:
    admin = stack.session(token)
    os_, arch = machine()
    platform = stack.api(
        f"/organizations/{ORG}/registry-providers/private/{ORG}/demo/versions/{VERSION}"
        f"/platforms/{os_}/{arch}"
    )
    module = stack.api(f"/organizations/{ORG}/registry-modules/private/{ORG}/vpc/aws")

    def states() -> tuple[str, list[str]]:
        served = admin.get(platform).json()["data"]["attributes"]["status"]
        versions = admin.get(module).json()["data"]["attributes"]["version-statuses"]
        return served, [v["status"] for v in versions]

    assert wait_for(states, lambda s: s == ("verified", ["ok"]), timeout=60) == ("verified", ["ok"])


def command(*args: str, token: str) -> subprocess.CompletedProcess[str]:
    """The command as an operator runs it (its own process)."""
    return subprocess.run(
        [sys.executable, "-m", "infrastructure.bundle", *args, "--poll", "0.5", "--token", token],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=180,
    )


def terraform_init(workdir: Path, stack: Stack, token: str) -> subprocess.CompletedProcess[str]:
    workdir.mkdir(parents=True)
    config = workdir / "cli.tfrc"
    config.write_text(
        f'host "{HOST}" {{\n  services = {{\n'
        f'    "modules.v1" = "{stack.url}/api/registry/v1/modules/"\n'
        f'    "providers.v1" = "{stack.url}/api/registry/v1/providers/"\n  }}\n}}\n'
        f'credentials "{HOST}" {{\n  token = "{token}"\n}}\n'
    )
    (workdir / "main.tf").write_text(
        "terraform {\n  required_providers {\n"
        f'    demo = {{\n      source  = "{HOST}/{ORG}/demo"\n      version = "{VERSION}"\n'
        "    }\n  }\n}\n"
        f'module "vpc" {{\n  source  = "{HOST}/{ORG}/vpc/aws"\n  version = "{VERSION}"\n}}\n'
    )
    env = {
        **os.environ,
        "TF_CLI_CONFIG_FILE": str(config),
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
        timeout=180,
    )


def test_a_bundle_moves_a_module_and_a_signed_provider_to_another_registry(
    stack: Stack, target: Stack, tmp_path: Path
) -> None:
    archive = tar_gz({"main.tf": 'output "from" {\n  value = "the bundle"\n}\n'})
    os_, arch = machine()
    filename = f"terraform-provider-demo_{VERSION}_{os_}_{arch}.zip"
    provider_archive = provider_zip("demo", VERSION)
    key_id = publish(stack, archive, provider_archive, filename)
    # The target knows the organization (a bundle brings modules and providers, not people).
    made = target.session(TARGET_TOKEN).post(
        target.api("/organizations"), json=doc("organizations", name=ORG, email="o@b.io")
    )
    assert made.status_code == 201, made.text

    bundle = tmp_path / "bundle.tar"
    exported = command(
        "export",
        "--url",
        stack.url,
        "--module",
        f"{ORG}/{ORG}/vpc/aws@>= 1.0",
        "--provider",
        f"{ORG}/{ORG}/demo@{VERSION}",
        "-o",
        str(bundle),
        token="e2e-admin-token",
    )
    assert exported.returncode == 0, exported.stdout + exported.stderr
    assert f"wrote {bundle}" in exported.stdout
    assert f"provider {ORG}/{ORG}/demo {VERSION}" in exported.stdout

    imported = command("import", "--url", target.url, str(bundle), token=TARGET_TOKEN)
    assert imported.returncode == 0, imported.stdout + imported.stderr
    assert f"created: module {ORG}/{ORG}/vpc/aws {VERSION}" in imported.stdout
    assert f"created: gpg-key {ORG}/{key_id}" in imported.stdout
    assert f"created: provider {ORG}/{ORG}/demo {VERSION}" in imported.stdout
    wait_until_served(target, TARGET_TOKEN)

    result = terraform_init(tmp_path / "work", target, TARGET_TOKEN)
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"Installed {HOST}/{ORG}/demo v{VERSION} (self-signed, key ID {key_id})" in result.stdout
    modules = json.loads((tmp_path / "work/.terraform/modules/modules.json").read_text())
    (vpc,) = [m for m in modules["Modules"] if m["Key"] == "vpc"]
    assert vpc["Version"] == VERSION
    assert "the bundle" in (tmp_path / "work" / vpc["Dir"] / "main.tf").read_text()

    again = command("import", "--url", target.url, str(bundle), token=TARGET_TOKEN)
    assert again.returncode == 0, again.stdout
    assert "created:" not in again.stdout and again.stdout.count("skipped:") == 3


CACHED = "terraform-aws-modules/s3-bucket/aws"
CACHED_VERSION = "4.1.0"


def cache_settings(stack: Stack, token: str, namespaces: list[str]) -> None:
    attributes = {"allowed-namespaces": namespaces, "allowed-source-hosts": ["github.com"]}
    saved = stack.session(token).patch(
        stack.api("/admin/module-cache-settings"),
        json={"data": {"type": "module-cache-settings", "attributes": attributes}},
    )
    assert saved.status_code == 200, saved.text


def protocol(stack: Stack, token: str, path: str) -> requests.Response:
    return requests.get(
        f"{stack.url}/api/registry/v1/modules/{CACHED}{path}",
        headers={"Authorization": f"Bearer {token}"},
        allow_redirects=False,
        timeout=30,
    )


def test_a_bundle_moves_a_cached_module_to_a_registry_without_upstream(
    stack: Stack, target: Stack, mirror_upstream: Upstream, tmp_path: Path
) -> None:
    archive = tar_gz({"main.tf": 'output "from" {\n  value = "the cache, bundled"\n}\n'})
    mirror_upstream.files["/archives/s3-bucket-4.1.0.tar.gz"] = archive
    mirror_upstream.modules[CACHED] = {CACHED_VERSION: "/archives/s3-bucket-4.1.0.tar.gz"}
    cache_settings(stack, ADMIN_TOKEN, ["terraform-aws-modules"])
    try:
        # Cached on the first stack, as a first install caches it.
        listed = wait_for(
            lambda: protocol(stack, ADMIN_TOKEN, "/versions"), lambda r: r.status_code == 200
        )
        assert listed.status_code == 200, listed.text
        fetched = protocol(stack, ADMIN_TOKEN, f"/{CACHED_VERSION}/download")
        assert fetched.status_code == 204, fetched.text

        bundle = tmp_path / "cached.tar"
        exported = command(
            "export",
            "--url",
            stack.url,
            "--module",
            f"cache/{CACHED}@>= 4.0",
            "-o",
            str(bundle),
            token=ADMIN_TOKEN,
        )
        assert exported.returncode == 0, exported.stdout + exported.stderr
        assert f"cached-module {CACHED} {CACHED_VERSION}" in exported.stdout

        mirror_upstream.stop()  # gone, and the second stack has no upstream configured
        imported = command("import", "--url", target.url, str(bundle), token=TARGET_TOKEN)
        assert imported.returncode == 0, imported.stdout + imported.stderr
        assert f"created: cached-module {CACHED} {CACHED_VERSION}" in imported.stdout
        cache_settings(target, TARGET_TOKEN, ["terraform-aws-modules"])
        served = wait_for(
            lambda: protocol(target, TARGET_TOKEN, "/versions"), lambda r: r.status_code == 200
        )
        assert served.status_code == 200, served.text
        assert served.json()["meta"] == {"stale": True}  # no upstream to ask

        workdir = tmp_path / "work"
        workdir.mkdir()
        config = workdir / "cli.tfrc"
        config.write_text(
            f'host "{HOST}" {{\n  services = {{\n'
            f'    "modules.v1" = "{target.url}/api/registry/v1/modules/"\n  }}\n}}\n'
            f'credentials "{HOST}" {{\n  token = "{TARGET_TOKEN}"\n}}\n'
        )
        (workdir / "main.tf").write_text(
            f'module "bucket" {{\n  source  = "{HOST}/{CACHED}"\n'
            f'  version = "{CACHED_VERSION}"\n}}\n'
        )
        env = {**os.environ, "TF_CLI_CONFIG_FILE": str(config), "CHECKPOINT_DISABLE": "1"}
        result = subprocess.run(
            ["terraform", "init", "-no-color", "-input=false", "-backend=false"],
            cwd=workdir,
            env=env,
            capture_output=True,
            text=True,
            timeout=180,
        )
        assert result.returncode == 0, result.stdout + result.stderr
        installed = workdir / ".terraform/modules/bucket/main.tf"
        assert "the cache, bundled" in installed.read_text()

        again = command("import", "--url", target.url, str(bundle), token=TARGET_TOKEN)
        assert again.returncode == 0, again.stdout
        assert f"skipped: cached-module {CACHED} {CACHED_VERSION}" in again.stdout
    finally:
        mirror_upstream.start()
        mirror_upstream.modules.pop(CACHED, None)
        cache_settings(stack, ADMIN_TOKEN, [])
