"""What a newcomer meets first: a busy port is one clear line naming its variable, and HOST
puts the stack (and the links it hands out) on another address."""

from __future__ import annotations

import os
import socket
import subprocess
import sys

import requests

from infrastructure import spawn


def _run_local(**env: str) -> subprocess.CompletedProcess[str]:
    environment = {
        **{k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "REGISTRY_"))},
        "REGISTRY_DATA_DIR": "",
        **env,
    }
    return subprocess.run(
        [sys.executable, "-m", "infrastructure.local"],
        cwd=spawn.ROOT,
        env=environment,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_a_busy_port_is_one_line_naming_the_variable() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        busy = taken.getsockname()[1]
        for variable, other in (("PORT", "MOTO_PORT"), ("MOTO_PORT", "PORT")):
            done = _run_local(**{variable: str(busy), other: str(spawn.free_port())})
            assert done.returncode == 1
            lines = done.stderr.strip().splitlines()
            assert len(lines) == 1, done.stderr  # no traceback
            assert lines[0].startswith(f"error: {variable}={busy} is not free"), lines
            assert "Traceback" not in done.stdout + done.stderr


def test_an_address_not_on_this_machine_is_named() -> None:
    done = _run_local(HOST="192.0.2.1", PORT=str(spawn.free_port()))  # TEST-NET-1: never local
    assert done.returncode == 1
    assert done.stderr.strip().startswith("error: HOST=192.0.2.1:"), done.stderr
    assert "Traceback" not in done.stderr


def test_host_serves_the_api_and_puts_upload_links_on_that_address() -> None:
    host = "127.0.0.2"  # another loopback address: what a LAN address is to a team
    running = spawn.start("host-admin", HOST=host, REGISTRY_RATE_LIMITING="off")
    try:
        assert f"listening on http://{host}:" in running.startup_output
        session = requests.Session()
        session.headers.update(
            {"Authorization": "Bearer host-admin", "Content-Type": "application/vnd.api+json"}
        )
        api = f"{running.url}/api/v2"
        org = {"data": {"type": "organizations", "attributes": {"name": "lan", "email": "a@b.c"}}}
        assert session.post(f"{api}/organizations", json=org).status_code == 201
        module = {
            "data": {
                "type": "registry-modules",
                "attributes": {"name": "net", "provider": "aws", "registry-name": "private"},
            }
        }
        created = session.post(f"{api}/organizations/lan/registry-modules", json=module)
        assert created.status_code == 201, created.text
        version = {"data": {"type": "registry-module-versions", "attributes": {"version": "1.0.0"}}}
        made = session.post(
            f"{api}/organizations/lan/registry-modules/private/lan/net/aws/versions", json=version
        )
        assert made.status_code == 201, made.text
        upload = made.json()["data"]["links"]["upload"]
        assert upload.startswith(f"http://{host}:"), upload
    finally:
        spawn.stop(running)
