"""Start and stop the local stack (``python -m infrastructure.local``) as a subprocess.

Used by the end-to-end tests and the benchmarks: free ports, wait for READY, Ctrl-C to stop.
The state is kept in memory only (``REGISTRY_DATA_DIR=""``) unless the caller passes a
``REGISTRY_DATA_DIR``: a spawned stack never reads or writes the checkout's ``.data/``.
It serves HTTPS too (on a free port, ``https_url``), and runs without the mail catcher
(``REGISTRY_MAIL_CATCHER=off``: the site's SMTP stays unconfigured) unless the caller passes
``REGISTRY_MAIL_CATCHER="on"``.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket() as sock:
        sock.bind((host, 0))
        return sock.getsockname()[1]


@dataclass
class Spawned:
    url: str
    moto_url: str
    process: subprocess.Popen[str]
    startup_seconds: float
    startup_output: str = ""  # everything printed up to READY
    https_url: str = ""
    # What it prints after READY, read as it comes: an unread pipe fills up (~64 KB of logs)
    # and then blocks the server mid-request.
    later_output: list[str] = field(default_factory=list)
    reader: threading.Thread | None = None

    def drain(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.later_output.append(line)


def start(admin_token: str, **env: str) -> Spawned:
    host = env.get("HOST", "127.0.0.1")
    port, moto_port = free_port(host), free_port(host)
    https_port, mail_port = free_port(host), free_port()
    environment = {
        **{k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "REGISTRY_"))},
        "HOST": host,
        "PORT": str(port),
        "MOTO_PORT": str(moto_port),
        "HTTPS_PORT": str(https_port),
        "MAIL_PORT": str(mail_port),
        "REGISTRY_MAIL_CATCHER": "off",
        "REGISTRY_ADMIN_TOKEN": admin_token,
        "REGISTRY_ACCESS_LOG": "0",
        "PYTHONUNBUFFERED": "1",
        "REGISTRY_DATA_DIR": "",
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
            spawned = Spawned(
                f"http://{host}:{port}",
                f"http://{host}:{moto_port}",
                process,
                time.monotonic() - started,
                "".join(lines),
                f"https://{host}:{https_port}",
            )
            spawned.reader = threading.Thread(target=spawned.drain, daemon=True)
            spawned.reader.start()
            return spawned
    process.kill()
    raise RuntimeError("local stack did not start:\n" + "".join(lines))


def stop(spawned: Spawned) -> str:
    """Ctrl-C, as a person would; returns the output. Raises if it does not exit cleanly."""
    spawned.process.send_signal(signal.SIGINT)
    try:
        # Generous: on a loaded machine (two test workers' stacks, other jobs) a clean stop
        # took more than 20 s; a hung stack still fails, a minute later.
        spawned.process.wait(timeout=60)
    except subprocess.TimeoutExpired:
        spawned.process.kill()
        raise
    if spawned.reader is not None:
        spawned.reader.join(timeout=5)
    output = "".join(spawned.later_output)
    if spawned.process.returncode != 0:
        raise RuntimeError(f"local stack exited with {spawned.process.returncode}:\n{output}")
    return output
