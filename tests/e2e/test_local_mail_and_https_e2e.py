"""``make run`` out of the box (issue 35, item 2): mail reaches the local mail catcher, and the
API is served over HTTPS with a certificate of a local CA that the printed line makes
terraform trust.

A stack of this module's own, started as ``make run`` starts (the mail catcher on; spawned
stacks otherwise run without it): on a fresh stack an invitation is mailed to the catcher
(the SMTP settings point at it with nobody configuring them), printed on the console with
its link, listed on the site admins' mail page, and the mailed link lets the newcomer join;
the newcomer, no site admin, gets 404 for that page. The HTTPS port serves the API with a
certificate Python's ssl verifies with the printed CA alone, and the real terraform installs
a module from ``HOST:HTTPS_PORT`` with the printed ``SSL_CERT_FILE`` and nothing else.
"""

from __future__ import annotations

import contextlib
import html
import json
import os
import re
import shutil
import ssl
import subprocess
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from urllib.error import HTTPError, URLError
from uuid import uuid4

import pytest
import requests
from playwright.sync_api import expect

from infrastructure import spawn
from infrastructure.mail_catcher import PAGE
from tests.conftest import doc, tar_gz
from tests.e2e.conftest import ADMIN_TOKEN, Stack, wait_for
from tests.e2e.pages import TIMEOUT_MS, check_page
from tests.e2e.test_invitations_e2e import PASSWORD, SESSION, Visitor, invite

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def local() -> Iterator[tuple[Stack, spawn.Spawned]]:
    running = spawn.start(ADMIN_TOKEN, REGISTRY_MAIL_CATCHER="on", REGISTRY_RATE_LIMITING="off")
    yield (
        Stack(
            running.url,
            running.moto_url,
            running.startup_seconds,
            running.later_output,
            running.startup_output,
        ),
        (running),
    )
    assert "stopped" in spawn.stop(running)


def printed(running: spawn.Spawned, pattern: str) -> str:
    found = re.search(pattern, running.startup_output)
    assert found, running.startup_output
    return found.group(1)


def test_an_invitation_on_a_fresh_stack_reaches_the_catcher_and_its_page(local):
    stack, running = local
    assert "mail: caught by the local mail catcher on 127.0.0.1:" in running.startup_output
    suffix = uuid4().hex[:8]
    org, email = f"mail-{suffix}", f"newcomer-{suffix}@example.com"
    made = stack.session().post(
        stack.api("/organizations"), json=doc("organizations", name=org, email="o@x.io")
    )
    assert made.status_code == 201, made.text
    invite(stack, org, email)

    # One console line: to, subject, the link (this is the operator's own console).
    line = re.compile(
        rf"mail caught for {re.escape(email)}: 'You are invited to join {org} [^']*'"
        r" link: (\S+) \(all caught mail: (\S+)\)"
    )
    found = wait_for(lambda: line.search(stack.log()), lambda m: m is not None, timeout=60)
    assert found, stack.log()
    link, page_url = found.group(1), found.group(2)
    assert link.startswith(f"{stack.url}/app/invitations/")
    assert page_url == stack.url + PAGE

    # The site admins' page lists it with its text.
    admin = Visitor(stack)
    signed = admin.post("/app/sign-in", {"token": ADMIN_TOKEN, "csrf_token": admin.csrf()})
    assert signed.status_code == 303 and SESSION in admin.set_now
    listed = admin.get(PAGE)
    assert listed.status_code == 200, listed.text
    text = html.unescape(listed.text)
    assert email in text and f"You are invited to join {org}" in text and link in text
    assert "Accept the invitation here" in text  # the message's own text
    assert 'href="/app/admin/mail"' in admin.get("/app/admin").text  # the admin navigation

    # The mailed link works: the newcomer joins with it ...
    newcomer = Visitor(stack)
    path = link[len(stack.url) :]
    form = {"csrf_token": newcomer.csrf(path), "username": f"new-{suffix}"}
    joined = newcomer.post(path, {**form, "password": PASSWORD, "password_again": PASSWORD})
    assert joined.status_code == 303 and SESSION in newcomer.set_now, joined.text
    # ... and, no site admin, learns nothing of the page; without a session: sign in first.
    assert newcomer.get(PAGE).status_code == 404
    anonymous = Visitor(stack).get(PAGE)
    assert anonymous.status_code == 303
    assert anonymous.headers["Location"].startswith("/app/sign-in?next=")
    assert PASSWORD not in stack.log()


def test_the_documented_try_it_block_verbatim_reaches_the_catcher(local, tmp_path):
    """docs/local-mail-and-https.md's "Try it" block (the ``mail`` walkthrough), run as
    written on this stack, which runs as ``make run`` does: the invitation is mailed (the
    answer carries no link), and the console line the page promises names its recipient and
    link."""
    from tests.e2e.test_walkthroughs import FOUND, run

    stack, _ = local
    outcome = run(FOUND["mail"], stack, tmp_path / "mail")
    assert outcome.ok, outcome.message
    # Mailed: no "meta" saying it was not (and no link in the answer).
    assert '"status": "invited"' in outcome.message, outcome.message
    assert "invitation-mailed" not in outcome.message and "/app/invitations/" not in (
        outcome.message
    )
    line = re.compile(
        r"mail caught for sam@example\.com: 'You are invited to join sandbox [^']*'"
        rf" link: {re.escape(stack.url)}/app/invitations/\S+"
    )
    assert wait_for(lambda: line.search(stack.log()), bool, timeout=60), stack.log()


def test_the_mail_page_passes_axe_and_fits_a_phone(local, browser):
    """The caught invitation of the test above, as a site admin sees it in Chromium."""
    stack, _ = local
    context = browser.new_context(base_url=stack.url)
    try:
        page = context.new_page()
        page.goto("/app/sign-in")
        page.get_by_label("API token").fill(ADMIN_TOKEN)
        page.get_by_role("button", name="Sign in with the token").click()
        heading = page.get_by_role("heading", name="Organizations", level=1)
        expect(heading).to_be_visible(timeout=TIMEOUT_MS)  # signed in before going on
        page.goto(PAGE)
        assert "You are invited to join" in page.content()
        check_page(page)
    finally:
        context.close()


def test_the_https_port_serves_the_api_with_a_certificate_of_the_printed_ca(local):
    stack, running = local
    ca = printed(running, r"certificate from the local CA (\S+)\)")
    bundle = printed(running, r"export SSL_CERT_FILE=(\S+)")
    assert running.https_url in running.startup_output

    trusting = ssl.create_default_context(cafile=ca)  # this CA and nothing else
    request = urllib.request.Request(
        running.https_url + "/api/v2/account/details",
        headers={"Authorization": f"Bearer {ADMIN_TOKEN}"},
    )
    with urllib.request.urlopen(request, context=trusting, timeout=30) as answer:
        assert answer.status == 200
        assert json.load(answer)["data"]["type"] == "users"
    for name in ("localhost", "127.0.0.1"):  # the names the certificate carries
        port = running.https_url.rsplit(":", 1)[1]
        with urllib.request.urlopen(
            f"https://{name}:{port}/api/v2/ping", context=trusting, timeout=30
        ) as answer:
            assert answer.status == 204

    # Refusals: a client that does not trust the local CA, and plain HTTP on the HTTPS port.
    with pytest.raises(URLError) as refused:
        urllib.request.urlopen(running.https_url + "/api/v2/ping", timeout=30)
    assert isinstance(refused.value.reason, ssl.SSLCertVerificationError)
    with pytest.raises(requests.ConnectionError):
        requests.get(running.https_url.replace("https://", "http://") + "/api/v2/ping", timeout=30)

    # The bundle SSL_CERT_FILE names: the local CA plus the system's.
    assert Path(ca).read_text() in Path(bundle).read_text()
    assert Path(bundle).read_text().count("BEGIN CERTIFICATE") > 1
    with pytest.raises(HTTPError) as unknown:
        urllib.request.urlopen(running.https_url + "/api/v2/nothing", context=trusting)
    assert unknown.value.code == 404


# terraform opens the authorization URL with $BROWSER: this one records it and returns.
LAUNCHER = """#!/bin/sh
printf '%s' "$1" > "{target}.tmp" && mv "{target}.tmp" "{target}"
"""


def terraform_login(
    running: spawn.Spawned, host: str, env: dict[str, str], bundle: str, tmp_path: Path
) -> str:
    """The real ``terraform login HOST`` over HTTPS, approved by the site admin (signed in
    to the UI over HTTPS, the printed CA verifying it): the token terraform got."""
    ca = printed(running, r"certificate from the local CA (\S+)\)")
    opened, launcher = tmp_path / "opened-url", tmp_path / "record-url"
    launcher.write_text(LAUNCHER.format(target=opened))
    launcher.chmod(0o755)
    log = (tmp_path / "login.out").open("w+")
    login = subprocess.Popen(
        ["terraform", "login", "-no-color", host],
        env={**env, "BROWSER": str(launcher), "SSL_CERT_FILE": bundle},
        cwd=tmp_path,
        stdin=subprocess.PIPE,
        stdout=log,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        assert login.stdin is not None
        login.stdin.write("yes\n")
        login.stdin.flush()
        url = wait_for(
            lambda: opened.read_text() if opened.exists() else None,
            lambda found: found is not None or login.poll() is not None,
            timeout=60,
        )
        assert url and url.startswith(running.https_url + "/app/oauth/authorize?"), (
            tmp_path / "login.out"
        ).read_text()
        browser = requests.Session()  # verify= on each request: a session's would lose to
        # REQUESTS_CA_BUNDLE from the environment (requests merges the environment first)
        sign_in = browser.get(running.https_url + "/app/sign-in", verify=ca, timeout=30)
        csrf = re.search(r'name="csrf_token" value="([^"]+)"', sign_in.text)
        assert csrf
        signed = browser.post(
            running.https_url + "/app/sign-in",
            data={"token": ADMIN_TOKEN, "csrf_token": csrf.group(1)},
            allow_redirects=False,
            verify=ca,
            timeout=30,
        )
        assert signed.status_code == 303, signed.text
        consent = browser.get(url, verify=ca, timeout=30)
        assert consent.status_code == 200 and 'id="tf-cli-config-file"' in consent.text
        fields = {
            name: html.unescape(value)
            for name, value in re.findall(
                r'<input type="hidden" name="([^"]+)" value="([^"]*)">', consent.text
            )
        }
        approved = browser.post(
            running.https_url + "/app/oauth/authorize",
            data={**fields, "decision": "approve"},
            allow_redirects=False,
            verify=ca,
            timeout=30,
        )
        assert approved.status_code == 303, approved.text
        callback = approved.headers["Location"]
        assert callback.startswith("http://localhost:")
        # terraform's listener may close before it answers (see test_terraform_login.py).
        with contextlib.suppress(requests.ConnectionError):
            requests.get(callback, timeout=30)
        assert login.wait(timeout=60) == 0, (tmp_path / "login.out").read_text()
    finally:
        if login.poll() is None:
            login.kill()
        log.close()
    output = (tmp_path / "login.out").read_text()
    assert "Success!" in output
    saved = json.loads((Path(env["HOME"]) / ".terraform.d" / "credentials.tfrc.json").read_text())
    token = str(saved["credentials"][host]["token"])
    assert token not in output
    return token


@pytest.mark.skipif(shutil.which("terraform") is None, reason="terraform is not on PATH")
def test_terraform_logs_in_and_installs_a_module_over_https_with_the_printed_line(local, tmp_path):
    stack, running = local
    bundle = printed(running, r"export SSL_CERT_FILE=(\S+)")
    host = printed(running, r"terraform host: (\S+) ")
    assert running.https_url == f"https://{host}"
    org = f"tls-{uuid4().hex[:8]}"
    admin = stack.session()
    assert (
        admin.post(
            stack.api("/organizations"), json=doc("organizations", name=org, email="o@x.io")
        ).status_code
        == 201
    )
    made = admin.post(
        stack.api(f"/organizations/{org}/registry-modules"),
        json=doc("registry-modules", name="net", provider="aws"),
    )
    assert made.status_code == 201, made.text
    version = admin.post(
        stack.api(f"/registry-modules/{org}/net/aws/versions"),
        json=doc("registry-module-versions", version="1.0.0"),
    )
    assert version.status_code == 201, version.text
    archive = tar_gz({"main.tf": 'output "over" {\n  value = "https"\n}\n'})
    put = requests.put(
        version.json()["data"]["links"]["upload"],
        data=archive,
        headers={"Content-Type": "application/octet-stream"},
        timeout=30,
    )
    assert put.status_code == 200

    def status() -> str:
        reply = admin.get(stack.api(f"/organizations/{org}/registry-modules/private/{org}/net/aws"))
        return str(reply.json()["data"]["attributes"]["version-statuses"][0]["status"])

    assert wait_for(status, lambda s: s == "ok", timeout=60) == "ok"

    home, work = tmp_path / "home", tmp_path / "work"
    (home / ".terraform.d").mkdir(parents=True)  # terraform 1.11 does not create it
    work.mkdir()
    (work / "main.tf").write_text(
        f'module "net" {{\n  source  = "{host}/{org}/net/aws"\n  version = "1.0.0"\n}}\n'
    )
    env = {**os.environ, "HOME": str(home), "CHECKPOINT_DISABLE": "1"}
    for name in ("TF_CLI_CONFIG_FILE", "SSL_CERT_FILE", "SSL_CERT_DIR", "TF_IN_AUTOMATION"):
        env.pop(name, None)
    # No CLI configuration at all: over HTTPS discovery finds the services, login.v1 too.
    token = terraform_login(running, host, env, bundle, tmp_path)
    saved = json.loads((home / ".terraform.d" / "credentials.tfrc.json").read_text())
    assert saved["credentials"][host]["token"] == token

    def init(**extra: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["terraform", "init", "-no-color", "-upgrade"],
            cwd=work,
            env={**env, **extra},
            capture_output=True,
            text=True,
            timeout=120,
        )

    untrusted = init()
    assert untrusted.returncode != 0
    assert "certificate signed by unknown authority" in untrusted.stderr
    trusted = init(SSL_CERT_FILE=bundle)
    assert trusted.returncode == 0, trusted.stdout + trusted.stderr
    manifest = json.loads((work / ".terraform/modules/modules.json").read_text())
    (entry,) = [m for m in manifest["Modules"] if m["Key"] == "net"]
    assert entry["Version"] == "1.0.0"
    assert '"https"' in (work / entry["Dir"] / "main.tf").read_text()

    # With TF_CLI_CONFIG_FILE set, terraform reads no file of ~/.terraform.d, so not the
    # token `terraform login` saved there: 401 (what the login page and the "reaching this
    # registry" box warn of).
    overridden = tmp_path / "cli.tfrc"
    overridden.write_text("disable_checkpoint = true\n")
    ignored = init(SSL_CERT_FILE=bundle, TF_CLI_CONFIG_FILE=str(overridden))
    assert ignored.returncode != 0 and "401 Unauthorized" in ignored.stderr, ignored.stderr
