"""End-to-end layer: the real local stack in a subprocess (moto server + poller + API)."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import requests

ROOT = Path(__file__).resolve().parents[2]
ADMIN_TOKEN = "e2e-admin-token"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@dataclass
class Stack:
    url: str
    moto_url: str
    process: subprocess.Popen[str]
    startup_seconds: float

    def session(self, token: str | None = ADMIN_TOKEN) -> requests.Session:
        session = requests.Session()
        session.headers["Content-Type"] = "application/vnd.api+json"
        if token:
            session.headers["Authorization"] = f"Bearer {token}"
        return session

    def api(self, path: str) -> str:
        return f"{self.url}/api/v2{path}"


def start_stack(**env: str) -> Stack:
    port, moto_port = free_port(), free_port()
    environment = {
        **{k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "REGISTRY_"))},
        "PORT": str(port),
        "MOTO_PORT": str(moto_port),
        "REGISTRY_ADMIN_TOKEN": ADMIN_TOKEN,
        "REGISTRY_ACCESS_LOG": "0",
        "PYTHONUNBUFFERED": "1",
        **env,
    }
    started = time.monotonic()
    process = subprocess.Popen(
        [sys.executable, "-m", "infrastructure.local"],
        cwd=ROOT,
        env=environment,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    assert process.stdout is not None
    lines = []
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        line = process.stdout.readline()
        if not line:
            break
        lines.append(line)
        if line.strip() == "READY":
            return Stack(
                f"http://127.0.0.1:{port}",
                f"http://127.0.0.1:{moto_port}",
                process,
                time.monotonic() - started,
            )
    process.kill()
    raise RuntimeError("local stack did not start:\n" + "".join(lines))


def stop_stack(stack: Stack) -> str:
    """Ctrl-C, as a person would; the runner must exit cleanly and promptly."""
    stack.process.send_signal(signal.SIGINT)
    try:
        output, _ = stack.process.communicate(timeout=20)
    except subprocess.TimeoutExpired:
        stack.process.kill()
        raise
    assert stack.process.returncode == 0, output
    return output


@pytest.fixture(scope="session")
def stack() -> Iterator[Stack]:
    running = start_stack()
    yield running
    output = stop_stack(running)
    assert "stopped" in output


def wait_for(fetch: Any, done: Any, timeout: float = 30.0) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = fetch()
        if done(value) or time.monotonic() > deadline:
            return value
        time.sleep(0.2)
