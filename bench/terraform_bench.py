"""Time ``terraform get`` of 20 modules from the local stack (moto server + API + poller).

Publishes 20 modules through the API and presigned uploads, then runs the real ``terraform``
binary three times in fresh directories and prints the median wall time.
"""

from __future__ import annotations

import io
import json
import os
import shutil
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

import requests

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from infrastructure import spawn  # noqa: E402

MODULES = 20
TOKEN = "bench-admin-token"


def archive(name: str) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        for file, text in {
            "main.tf": f'variable "name" {{\n  default = "{name}"\n}}\noutput "name" {{\n'
            "  value = var.name\n}\n",
            "README.md": f"# {name}\n",
        }.items():
            data = text.encode()
            info = tarfile.TarInfo(file)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


def main() -> None:
    if shutil.which("terraform") is None:
        print("terraform get: skipped (terraform is not on PATH)")
        return
    stack = spawn.start(TOKEN)
    try:
        api = requests.Session()
        api.headers.update(
            {"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/vnd.api+json"}
        )
        base = f"{stack.url}/api/v2"

        def doc(type_: str, **attributes: object) -> str:
            return json.dumps({"data": {"type": type_, "attributes": attributes}})

        api.post(
            f"{base}/organizations", data=doc("organizations", name="acme", email="a@acme.io")
        ).raise_for_status()
        for i in range(MODULES):
            api.post(
                f"{base}/organizations/acme/registry-modules",
                data=doc("registry-modules", name=f"m{i}", provider="aws"),
            ).raise_for_status()
            created = api.post(
                f"{base}/registry-modules/acme/m{i}/aws/versions",
                data=doc("registry-module-versions", version="1.0.0"),
            )
            created.raise_for_status()
            requests.put(
                created.json()["data"]["links"]["upload"],
                data=archive(f"m{i}"),
                headers={"Content-Type": "application/octet-stream"},
            ).raise_for_status()
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            listed = api.get(f"{stack.url}/api/registry/v1/modules/acme?limit=100").json()
            if len(listed["modules"]) == MODULES:
                break
            time.sleep(0.3)
        workdir = Path(tempfile.mkdtemp())
        config = workdir / "cli.tfrc"
        config.write_text(
            'host "registry.test" {\n  services = {\n'
            f'    "modules.v1" = "{stack.url}/api/registry/v1/modules/"\n  }}\n}}\n'
            f'credentials "registry.test" {{\n  token = "{TOKEN}"\n}}\n'
        )
        env = {**os.environ, "TF_CLI_CONFIG_FILE": str(config), "CHECKPOINT_DISABLE": "1"}
        samples = []
        for run in range(3):
            directory = workdir / f"run{run}"
            directory.mkdir()
            (directory / "main.tf").write_text(
                "".join(
                    f'module "m{i}" {{\n  source  = "registry.test/acme/m{i}/aws"\n'
                    '  version = "~> 1.0"\n}\n'
                    for i in range(MODULES)
                )
            )
            started = time.perf_counter()
            subprocess.run(
                ["terraform", "get", "-no-color"],
                cwd=directory,
                env=env,
                check=True,
                capture_output=True,
            )
            samples.append(time.perf_counter() - started)
        print(
            f"terraform get of {MODULES} modules from the local stack: "
            f"median {statistics.median(samples):.2f} s over 3 runs "
            f"(runs: {', '.join(f'{s:.2f}' for s in samples)}); "
            f"stack ready in {stack.startup_seconds:.1f} s"
        )
    finally:
        spawn.stop(stack)


if __name__ == "__main__":
    main()
