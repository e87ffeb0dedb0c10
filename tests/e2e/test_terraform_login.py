"""The real ``terraform login`` against the local stack, then ``terraform get`` with nothing but
the token it saved.

Terraform discovers services over HTTPS only, and the local stack speaks plain HTTP, so the
CLI configuration maps a made-up host name's services (as tests/e2e/test_terraform_cli.py
does): ``modules.v1`` and the stack's own ``login.v1`` entry, read from its discovery document
with the relative paths made absolute as terraform itself does. No ``credentials`` block:
``terraform login`` must provide the token.

The browser: terraform opens the authorization URL with ``$BROWSER`` (or ``xdg-open``); a
stand-in records the URL and returns at once (terraform waits for the launcher before it
reads the answer). Debian's headless Chromium (Playwright) then opens it, signs in to the UI
with the admin's user token and clicks Approve; Chromium follows the redirect to terraform's
loopback listener, which takes the code and exchanges it.

terraform's listener may drop its answer to the browser: its handler hands the code over
before writing the page, and the waiting goroutine then closes the server (``server.Close()``,
which closes active connections too) and exchanges the code. On a loaded machine that close
often wins while terraform still succeeds: Chromium gets an empty response
(``net::ERR_EMPTY_RESPONSE``), tries again and finds the listener gone
(``net::ERR_CONNECTION_REFUSED`` from ``wait_for_url``). So the test checks the request the
browser sent to the listener (terraform's redirect URI, its state, a code), terraform's exit and
saved token, and terraform's page whenever terraform did answer.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import parse_qs, urljoin, urlsplit

import pytest
import requests

from tests.conftest import doc, tar_gz
from tests.e2e.conftest import ADMIN_TOKEN, Stack, wait_for
from tests.e2e.pages import TIMEOUT_MS

if TYPE_CHECKING:
    from playwright.sync_api import Browser, Page

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(shutil.which("terraform") is None, reason="terraform is not on PATH"),
]

HOST = "registry.test"
ORG = "tflogin"
# Written then renamed: the test must never read a half-written (or still empty) file.
LAUNCHER = """#!/bin/sh
printf '%s' "$1" > "{target}.tmp" && mv "{target}.tmp" "{target}"
"""
# How Chromium reports terraform's listener closing the connection without an answer.
DROPPED = ("net::ERR_EMPTY_RESPONSE", "net::ERR_CONNECTION_CLOSED", "net::ERR_CONNECTION_RESET")


def publish_module(stack: Stack, org: str = ORG) -> None:
    admin = stack.session()
    created = admin.post(
        stack.api("/organizations"), json=doc("organizations", name=org, email="o@x.io")
    )
    assert created.status_code in (201, 422), created.text
    module = admin.post(
        stack.api(f"/organizations/{org}/registry-modules"),
        json=doc("registry-modules", name="network", provider="aws"),
    )
    assert module.status_code in (201, 422), module.text
    version = admin.post(
        stack.api(f"/registry-modules/{org}/network/aws/versions"),
        json=doc("registry-module-versions", version="1.0.0"),
    )
    if version.status_code == 201:
        archive = tar_gz({"main.tf": 'output "logged_in" {\n  value = true\n}\n'})
        put = requests.put(
            version.json()["data"]["links"]["upload"],
            data=archive,
            headers={"Content-Type": "application/octet-stream"},
        )
        assert put.status_code == 200

    def statuses() -> list[str]:
        path = f"/organizations/{org}/registry-modules/private/{org}/network/aws"
        reply = admin.get(stack.api(path))
        return [s["status"] for s in reply.json()["data"]["attributes"]["version-statuses"]]

    assert wait_for(statuses, lambda s: s == ["ok"]) == ["ok"]


def cli_config(directory: Path, stack: Stack) -> Path:
    """``directory/.terraformrc``: a host block with the stack's own modules.v1 and
    login.v1, made absolute."""
    discovery_url = f"{stack.url}/.well-known/terraform.json"
    services = requests.get(discovery_url, timeout=10).json()
    login = services["login.v1"]
    ports = ", ".join(str(p) for p in login["ports"])
    grants = ", ".join(f'"{g}"' for g in login["grant_types"])
    config = directory / ".terraformrc"
    config.write_text(
        f'host "{HOST}" {{\n'
        "  services = {\n"
        f'    "modules.v1" = "{urljoin(discovery_url, services["modules.v1"])}"\n'
        '    "login.v1" = {\n'
        f'      client      = "{login["client"]}"\n'
        f"      grant_types = [{grants}]\n"
        f'      authz       = "{urljoin(discovery_url, login["authz"])}"\n'
        f'      token       = "{urljoin(discovery_url, login["token"])}"\n'
        f"      ports       = [{ports}]\n"
        "    }\n"
        "  }\n"
        "}\n"
    )
    return config


def approve_in(browser: Browser) -> Callable[[str], tuple[str, str | None]]:
    """Sign in to the UI with the admin's user token and approve (see ``approve_on``), in a
    fresh context of ``browser``."""

    def approve(url: str) -> tuple[str, str | None]:
        context = browser.new_context()
        try:
            page = context.new_page()
            page.set_default_timeout(TIMEOUT_MS)
            page.goto(url)
            assert "/app/sign-in" in page.url  # no session yet: the sign-in detour
            page.fill("#token", ADMIN_TOKEN)
            page.click("#token-sign-in button[type=submit]")
            page.wait_for_url("**/app/oauth/authorize?**")
            return approve_on(page)
        finally:
            context.close()

    return approve


def approve_on(page: Page) -> tuple[str, str | None]:
    """Click Approve on the authorization page ``page`` shows: the URL the browser was
    sent to on terraform's listener, and the text of the page the listener answered (None
    when terraform closed the connection without answering, see the module's docstring)."""
    assert "Authorize terraform login" in page.content()
    with page.expect_request(lambda r: r.url.startswith("http://localhost:")) as sent:
        page.click("button[value=approve]")
    callback = sent.value
    if callback.response() is None:  # the request failed: terraform did not answer
        assert callback.failure in DROPPED, callback.failure
        return callback.url, None
    page.wait_for_url("http://localhost:*/login?**")
    return callback.url, page.inner_text("body")


@dataclass
class LoggedIn:
    """What ``terraform login`` left: the environment (isolated home with the CLI config),
    a working directory, the token it saved and what it printed."""

    env: dict[str, str]
    work: Path
    token: str
    output: str


def terraform_login(
    stack: Stack, tmp_path: Path, approve: Callable[[str], tuple[str, str | None]]
) -> LoggedIn:
    """Run the real ``terraform login`` against the stack; ``approve`` takes the
    authorization URL terraform opened and approves it in a browser."""
    home, bin_dir, work = tmp_path / "home", tmp_path / "bin", tmp_path / "work"
    for directory in (home, bin_dir, work):
        directory.mkdir()
    # terraform 1.11 writes credentials.tfrc.json there but does not create the directory.
    (home / ".terraform.d").mkdir()
    opened = tmp_path / "opened-url"
    launcher = bin_dir / "record-url"
    launcher.write_text(LAUNCHER.format(target=opened))
    launcher.chmod(0o755)
    for name in ("xdg-open", "x-www-browser", "www-browser"):
        (bin_dir / name).symlink_to(launcher)
    # The CLI config in the (isolated) home's default place, ~/.terraformrc: with
    # TF_CLI_CONFIG_FILE set, terraform reads no credentials.tfrc.json at all.
    cli_config(home, stack)
    env = {
        **os.environ,
        "HOME": str(home),
        "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}",
        "BROWSER": str(launcher),
        "CHECKPOINT_DISABLE": "1",
    }
    for name in ("TF_CLI_CONFIG_FILE", "TF_IN_AUTOMATION", "TF_LOG"):
        env.pop(name, None)
    log = (tmp_path / "login.out").open("w+")
    login = subprocess.Popen(
        ["terraform", "login", "-no-color", HOST],
        env=env,
        cwd=work,
        stdin=subprocess.PIPE,
        stdout=log,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        assert login.stdin is not None
        login.stdin.write("yes\n")  # "Do you want to proceed?"
        login.stdin.flush()
        deadline = time.monotonic() + 60
        while not opened.exists() and login.poll() is None and time.monotonic() < deadline:
            time.sleep(0.1)
        assert opened.exists(), (tmp_path / "login.out").read_text()
        url = opened.read_text()
        assert url.startswith(f"{stack.url}/app/oauth/authorize?")
        assert "code_challenge_method=S256" in url and "redirect_uri=http%3A%2F%2Flocalhost" in url

        callback, answer = approve(url)
        # The browser went to terraform's own redirect URI with a code and terraform's state.
        asked = parse_qs(urlsplit(url).query)
        assert callback.startswith(asked["redirect_uri"][0] + "?")
        got = parse_qs(urlsplit(callback).query)
        assert got["state"] == asked["state"] and len(got["code"]) == 1 and got["code"][0]
        if answer is not None:
            assert "returned an authentication code to Terraform" in answer
        assert login.wait(timeout=60) == 0, (tmp_path / "login.out").read_text()
    finally:
        if login.poll() is None:
            login.kill()
        log.close()
    output = (tmp_path / "login.out").read_text()
    assert "Success!" in output and "Terraform has obtained and saved an API token" in output
    # The token is in the CLI config directory's credentials file, and nowhere in the output.
    credentials = json.loads((home / ".terraform.d" / "credentials.tfrc.json").read_text())
    token = credentials["credentials"][HOST]["token"]
    assert token not in output
    return LoggedIn(env, work, token, output)


def terraform_get(logged_in: LoggedIn, org: str) -> str:
    """``terraform get`` of ``org``'s network/aws module with the saved token alone (the CLI
    config has no credentials block): the version installed."""
    work = logged_in.work
    (work / "main.tf").write_text(
        f'module "network" {{\n  source  = "{HOST}/{org}/network/aws"\n  version = "~> 1.0"\n}}\n'
    )
    get = subprocess.run(
        ["terraform", "get", "-no-color"],
        cwd=work,
        env=logged_in.env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert get.returncode == 0, get.stdout + get.stderr
    manifest = json.loads((work / ".terraform/modules/modules.json").read_text())
    (entry,) = [m for m in manifest["Modules"] if m["Key"] == "network"]
    return str(entry["Version"])


def test_terraform_login_then_init_with_the_saved_token(
    stack: Stack, browser: Browser, tmp_path: Path
):
    publish_module(stack)
    # Other modules on the shared stack may log the admin in with terraform too: this test's
    # token is the one made by its own login.
    admin_id = stack.session().get(stack.api("/account/details")).json()["data"]["id"]
    listed = stack.session().get(stack.api(f"/users/{admin_id}/authentication-tokens")).json()
    before = {t["id"] for t in listed["data"]}
    logged_in = terraform_login(stack, tmp_path, approve_in(browser))
    token = logged_in.token
    assert token != ADMIN_TOKEN
    me = stack.session(token).get(stack.api("/account/details"))
    assert me.status_code == 200 and me.json()["data"]["attributes"]["username"] == "admin"
    assert terraform_get(logged_in, ORG) == "1.0.0"

    # Revoking it (as the README says) ends it.
    user_id = me.json()["data"]["id"]
    tokens = stack.session().get(stack.api(f"/users/{user_id}/authentication-tokens")).json()
    (mine,) = [
        t
        for t in tokens["data"]
        if (t["attributes"]["description"] or "").startswith("terraform login (")
        and t["id"] not in before
    ]
    assert stack.session().delete(stack.api(f"/authentication-tokens/{mine['id']}")).ok
    assert stack.session(token).get(stack.api("/account/details")).status_code == 401
