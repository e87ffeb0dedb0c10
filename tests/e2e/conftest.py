"""End-to-end layer: the real local stack in a subprocess (moto server + poller + API).

The modules share one stack (``stack``, per session) and run in any order: each creates the
organizations it uses under names of its own, and assumes nothing another module created."""

from __future__ import annotations

import shutil
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest
import requests
from playwright.sync_api import Browser, sync_playwright

from infrastructure import spawn
from tests.support.mirror_upstream import Upstream

ADMIN_TOKEN = "e2e-admin-token"


@dataclass
class Stack:
    url: str
    moto_url: str
    startup_seconds: float
    # What the stack has printed since READY, growing as it runs (spawn reads it): a module
    # checks at its end that none of its secrets reached the shared stack's log.
    output: list[str] = field(default_factory=list)
    # What it printed up to READY, as ``make run`` prints it (the walkthroughs read their
    # variables from it, as a reader does).
    startup: str = ""

    def log(self) -> str:
        return "".join(self.output)

    def session(self, token: str | None = ADMIN_TOKEN) -> requests.Session:
        session = requests.Session()
        session.headers["Content-Type"] = "application/vnd.api+json"
        if token:
            session.headers["Authorization"] = f"Bearer {token}"
        return session

    def api(self, path: str) -> str:
        return f"{self.url}/api/v2{path}"


# The name the shared stack's VCS stand-ins are reached by: REGISTRY_OUTBOUND_ALLOW lists it.
VCS_HOST = "localhost"

# The provider the stand-in public registry serves (test_provider_mirror_e2e installs it).
MIRRORED_BINARY = b"#!/bin/sh\necho fake provider\n"


@pytest.fixture(scope="session")
def mirror_upstream() -> Iterator[Upstream]:
    """The shared stack's public registries (never the internet): registry.terraform.io's
    hashicorp/fake 1.0.0 for the mirror's pull-through cache."""
    server = Upstream({"1.0.0": ["linux_amd64", "darwin_arm64"]}, binary=MIRRORED_BINARY)
    yield server
    server.close()


@pytest.fixture(scope="session")
def stack(mirror_upstream: Upstream) -> Iterator[Stack]:
    # Scenario tests burst with one token; test_admin_e2e runs its own stack with limiting on.
    running = spawn.start(
        ADMIN_TOKEN,
        REGISTRY_RATE_LIMITING="off",
        REGISTRY_MIRROR_UPSTREAM_URL=mirror_upstream.url,
        # The VCS stand-ins (test_vcs_e2e) are reached as ``localhost``, which outbound
        # fetches refuse unless listed; 127.0.0.1 stays refused, as deployed (the mirror's
        # upstream, configured, is allowed as such).
        REGISTRY_OUTBOUND_ALLOW=VCS_HOST,
        # The deprecation deadline sweep (test_deadlines_e2e) every 2 s rather than 30.
        REGISTRY_DEADLINE_SWEEP_SECONDS="2",
    )
    yield Stack(
        running.url,
        running.moto_url,
        running.startup_seconds,
        running.later_output,
        running.startup_output,
    )
    output = spawn.stop(running)  # Ctrl-C must stop everything cleanly
    assert "stopped" in output


@pytest.fixture(scope="session")
def browser() -> Iterator[Browser]:
    """Debian's headless Chromium driven by Playwright, one for the session: each module or
    test opens contexts of its own (cookies, viewport, base URL). Playwright's own browser
    downloads are never used; a missing browser fails the tests that need it, never skips."""
    executable = shutil.which("chromium")
    if executable is None:
        pytest.fail("Debian's chromium is missing: `make browser` installs it")
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=executable, headless=True)
        yield launched
        launched.close()


def wait_for(fetch: Any, done: Any, timeout: float = 30.0) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = fetch()
        if done(value) or time.monotonic() > deadline:
            return value
        time.sleep(0.2)
