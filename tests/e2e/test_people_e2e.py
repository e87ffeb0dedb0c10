"""People through the real local stack: an owner invites a colleague by mail (SMTP set up
through the admin API, delivered to a real aiosmtpd server), the colleague follows the
link in headless Chromium, chooses a password, lands signed in on the organization's modules
and sees its module; signs out, signs in again with the password; a wrong password is
refused with the generic message; then ``terraform login`` (approved in Chromium after a
password sign-in) and ``terraform get`` of the module with her own token it saved.

On the shared stack: the SMTP settings it saves are switched off again when the module ends
(the other modules expect no SMTP, so invitation links come in the API's answer)."""

from __future__ import annotations

import re
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
import requests
from playwright.sync_api import Browser, Page, expect

from tests.conftest import doc, tar_gz
from tests.e2e.conftest import ADMIN_TOKEN, Stack, wait_for
from tests.e2e.pages import TIMEOUT_MS, check_page
from tests.e2e.test_terraform_login import approve_on, terraform_get, terraform_login
from tests.support.admin_servers import SMTP_PASSWORD, SMTP_USER, Mailbox, smtp_server, text_of

pytestmark = pytest.mark.e2e

TOKEN = ADMIN_TOKEN
ORG = "people"
EMAIL = "jane@example.com"
PASSWORD = "a-long-enough-secret-42"


@pytest.fixture(scope="module")
def site(stack: Stack) -> Iterator[tuple[Stack, Mailbox]]:
    """SMTP pointed at a local aiosmtpd server, an organization and a published module."""
    with smtp_server() as (port, mailbox):
        admin = stack.session(TOKEN)
        smtp = {
            "enabled": True,
            "host": "127.0.0.1",
            "port": port,
            "sender": "registry@example.test",
            "auth": "login",
            "username": SMTP_USER,
            "password": SMTP_PASSWORD,
            "test-email-address": "ops@example.test",
        }
        saved = admin.patch(
            stack.api("/admin/smtp-settings"),
            json={"data": {"type": "smtp-settings", "attributes": smtp}},
        )
        assert saved.status_code == 200, saved.text
        try:
            publish(stack)
            yield stack, mailbox
        finally:
            off = admin.patch(
                stack.api("/admin/smtp-settings"),
                json={"data": {"type": "smtp-settings", "attributes": {"enabled": False}}},
            )
        assert off.status_code == 200, off.text
        output = stack.log()
        assert PASSWORD not in output and SMTP_PASSWORD not in output


def publish(stack: Stack) -> None:
    admin = stack.session(TOKEN)
    created = admin.post(
        stack.api("/organizations"), json=doc("organizations", name=ORG, email="o@x.io")
    )
    assert created.status_code == 201, created.text
    module = admin.post(
        stack.api(f"/organizations/{ORG}/registry-modules"),
        json=doc("registry-modules", name="network", provider="aws"),
    )
    assert module.status_code == 201, module.text
    version = admin.post(
        stack.api(f"/registry-modules/{ORG}/network/aws/versions"),
        json=doc("registry-module-versions", version="1.0.0"),
    )
    assert version.status_code == 201, version.text
    put = requests.put(
        version.json()["data"]["links"]["upload"],
        data=tar_gz({"main.tf": 'output "shared" {\n  value = true\n}\n'}),
        headers={"Content-Type": "application/octet-stream"},
        timeout=30,
    )
    assert put.status_code == 200

    def statuses() -> list[str]:
        path = f"/organizations/{ORG}/registry-modules/private/{ORG}/network/aws"
        reply = admin.get(stack.api(path))
        return [s["status"] for s in reply.json()["data"]["attributes"]["version-statuses"]]

    assert wait_for(statuses, lambda s: s == ["ok"]) == ["ok"]


def sign_in_with_password(page: Page, login: str, password: str) -> None:
    form = page.locator("#password-sign-in")
    form.get_by_label("Username or email").fill(login)
    form.get_by_label("Password").fill(password)
    form.get_by_role("button", name="Sign in").click()


def test_an_invited_colleague_joins_by_mail_and_signs_in_with_a_password(
    site: tuple[Stack, Mailbox], browser: Browser, tmp_path: Path
) -> None:
    stack, mailbox = site
    admin = stack.session(TOKEN)
    invited = admin.post(
        stack.api(f"/organizations/{ORG}/organization-memberships"),
        json={"data": {"type": "organization-memberships", "attributes": {"email": EMAIL}}},
    )
    assert invited.status_code == 201, invited.text
    assert "invitation-url" not in (invited.json()["data"].get("meta") or {})  # it went by mail
    mails = wait_for(lambda: [m for m in mailbox.messages if m["To"] == EMAIL], bool)
    assert len(mails) == 1 and ORG in mails[0]["Subject"]
    links = re.findall(r"http\S+/app/invitations/\S+", text_of(mails[0]))
    assert len(links) == 1 and links[0].startswith(stack.url)

    context = browser.new_context(base_url=stack.url)
    page = context.new_page()
    page.set_default_timeout(TIMEOUT_MS)
    page.goto(links[0])
    expect(page.get_by_role("heading", level=1)).to_contain_text(ORG)
    check_page(page)
    page.get_by_label("Username").fill("jane")
    page.get_by_label("Password", exact=True).fill(PASSWORD)
    page.get_by_label("Password again").fill(PASSWORD)
    page.get_by_role("button", name="Accept the invitation").click()
    page.wait_for_url(f"**/app/{ORG}/registry/modules")
    expect(page.get_by_role("link", name="network", exact=False).first).to_be_visible()

    page.get_by_role("button", name="Sign out").click()
    expect(page.get_by_role("heading", name="Sign in", level=1)).to_be_visible()
    page.goto(f"/app/{ORG}/registry/modules")  # signed out: the sign-in detour, then back
    assert "/app/sign-in" in page.url
    sign_in_with_password(page, "jane", "not-her-password-1")
    expect(page.locator("#password-sign-in-error")).to_contain_text("wrong username or password")
    check_page(page)
    sign_in_with_password(page, EMAIL, PASSWORD)
    page.wait_for_url(f"**/app/{ORG}/registry/modules")
    expect(page.get_by_role("link", name="network", exact=False).first).to_be_visible()
    context.close()


@pytest.mark.skipif(shutil.which("terraform") is None, reason="terraform is not on PATH")
def test_the_colleague_runs_terraform_login_and_installs_the_module(
    site: tuple[Stack, Mailbox], browser: Browser, tmp_path: Path
) -> None:
    """Jane (who joined in the test above) runs ``terraform login``: the page terraform
    opens sends her to sign in, she signs in with her password, comes back to the
    authorization page and approves; terraform then installs the organization's module with
    her own token."""
    stack, _ = site
    context = browser.new_context(base_url=stack.url)
    page = context.new_page()
    page.set_default_timeout(TIMEOUT_MS)

    def approve(url: str) -> tuple[str, str | None]:
        page.goto(url)
        assert "/app/sign-in" in page.url  # no session in this browser yet
        sign_in_with_password(page, "jane", PASSWORD)
        page.wait_for_url("**/app/oauth/authorize?**")
        return approve_on(page)

    logged_in = terraform_login(stack, tmp_path, approve)
    context.close()
    me = stack.session(logged_in.token).get(stack.api("/account/details"))
    assert me.status_code == 200 and me.json()["data"]["attributes"]["username"] == "jane"
    assert terraform_get(logged_in, ORG) == "1.0.0"


def test_two_factor_and_password_reset_in_the_browser(
    site: tuple[Stack, Mailbox], browser: Browser
) -> None:
    """Kim joins, turns two-factor on (the secret's code from pyotp), signs in again with a
    recovery code, forgets the password and resets it by mail; every new page passes axe-core
    and fits a phone."""
    import pyotp

    stack, mailbox = site
    email, password, new_password = "kim@example.com", PASSWORD + "-kim", PASSWORD + "-new"
    invited = stack.session(TOKEN).post(
        stack.api(f"/organizations/{ORG}/organization-memberships"),
        json={"data": {"type": "organization-memberships", "attributes": {"email": email}}},
    )
    assert invited.status_code == 201, invited.text
    mail = wait_for(lambda: [m for m in mailbox.messages if m["To"] == email], bool)[0]
    (link,) = re.findall(r"http\S+/app/invitations/\S+", text_of(mail))
    context = browser.new_context(base_url=stack.url)
    page = context.new_page()
    page.set_default_timeout(TIMEOUT_MS)
    page.goto(link)
    page.get_by_label("Username").fill("kim")
    page.get_by_label("Password", exact=True).fill(password)
    page.get_by_label("Password again").fill(password)
    page.get_by_role("button", name="Accept the invitation").click()
    page.wait_for_url(f"**/app/{ORG}/registry/modules")

    page.get_by_role("link", name="Account").click()
    page.get_by_role("link", name="Two-factor sign-in settings").click()
    check_page(page)
    page.get_by_role("button", name="Set up two-factor sign-in").click()
    expect(page.locator(".qr svg")).to_be_visible()
    check_page(page)
    secret = page.locator("#totp-secret").inner_text()
    page.get_by_label("The code your app shows now").fill(pyotp.TOTP(secret).now())
    page.get_by_role("button", name="Turn two-factor sign-in on").click()
    codes = page.locator("#recovery-codes code").all_inner_texts()
    assert len(codes) == 10
    check_page(page)

    page.get_by_role("button", name="Sign out").click()
    sign_in_with_password(page, "kim", password)
    page.wait_for_url("**/app/sign-in/two-factor")
    check_page(page)
    page.get_by_label("Code from your authenticator app, or a recovery code").fill(codes[0])
    page.get_by_role("button", name="Sign in").click()
    page.wait_for_url("**/app/organizations")
    page.get_by_role("button", name="Sign out").click()

    page.get_by_role("link", name="Forgot your password?").click()
    check_page(page)
    page.get_by_label("Username or email").fill(email)
    page.get_by_role("button", name="Mail me a link").click()
    expect(page.locator("#reset-sent")).to_contain_text("If an account exists")
    resets = wait_for(
        lambda: [m for m in mailbox.messages if m["To"] == email and "Reset" in m["Subject"]],
        bool,
    )
    (reset,) = re.findall(r"http\S+/app/password-reset/\S+", text_of(resets[0]))
    page.goto(reset)
    check_page(page)
    page.get_by_label("New password", exact=True).fill(new_password)
    page.get_by_label("New password again").fill(new_password)
    page.get_by_role("button", name="Set the password").click()
    expect(page.locator("#reset-done")).to_be_visible()
    check_page(page)
    page.goto(reset)  # used
    expect(page.locator("#reset-link-error")).to_contain_text("already been used")
    page.goto("/app/sign-in")
    sign_in_with_password(page, "kim", new_password)
    page.wait_for_url("**/app/sign-in/two-factor")
    page.get_by_label("Code from your authenticator app, or a recovery code").fill(codes[1])
    page.get_by_role("button", name="Sign in").click()
    page.wait_for_url("**/app/organizations")
    context.close()


def test_a_new_email_is_confirmed_on_the_page_its_link_opens(
    site: tuple[Stack, Mailbox], browser: Browser
) -> None:
    """Jane (who joined above) changes her email address on the account page; the mailed
    link, fetched first as a mail scanner would, confirms nothing; opened in another browser
    (no session there), its page names the address and the account, and its button confirms
    it, once. Both pages pass axe-core and fit a phone."""
    stack, mailbox = site
    new_email = "jane.doe@example.com"
    context = browser.new_context(base_url=stack.url)
    page = context.new_page()
    page.set_default_timeout(TIMEOUT_MS)
    page.goto("/app/sign-in")
    sign_in_with_password(page, "jane", PASSWORD)
    page.wait_for_url("**/app/organizations")
    page.goto("/app/account")
    page.get_by_label("Email address").fill(new_email)
    page.get_by_role("button", name="Save the profile").click()
    expect(page.locator("#email-waiting")).to_contain_text(new_email)
    context.close()
    mail = wait_for(lambda: [m for m in mailbox.messages if m["To"] == new_email], bool)[0]
    (link,) = re.findall(r"http\S+/app/account/confirm-email/\S+", text_of(mail))
    scanned = requests.get(link, timeout=30)  # a mail scanner's prefetch
    assert scanned.status_code == 200 and new_email in scanned.text

    elsewhere = browser.new_context(base_url=stack.url)  # the mail read on another device
    page = elsewhere.new_page()
    page.set_default_timeout(TIMEOUT_MS)
    page.goto(link)
    expect(page.locator("#email-question")).to_contain_text(new_email)
    expect(page.locator("#email-question")).to_contain_text("jane")
    check_page(page)
    page.get_by_role("button", name="Confirm the email address").click()
    expect(page.locator("#email-confirmed")).to_contain_text(new_email)
    check_page(page)
    page.goto(link)  # used
    expect(page.locator("#email-link-error")).to_contain_text("already been used")
    elsewhere.close()
    users = stack.session(TOKEN).get(stack.api("/admin/users?q=jane")).json()["data"]
    # Other modules on the shared stack may have users whose names contain "jane".
    assert [u["attributes"]["email"] for u in users if u["attributes"]["username"] == "jane"] == [
        new_email
    ]
