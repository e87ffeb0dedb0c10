"""Mailed links over the wire name the address the local stack printed, whatever ``Host``
and ``X-Forwarded-Proto`` the request carried: a password reset (mailed by the ingest
poller), an email confirmation and an invitation, each asked for with
``Host: evil.example:8443``, delivered to a real aiosmtpd server.

On the shared stack: the SMTP settings it saves are switched off again when the module ends
(the other modules expect no SMTP, so invitation links come in the API's answer)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from http.cookies import SimpleCookie

import pytest
import requests

from tests.conftest import doc
from tests.e2e.conftest import Stack, wait_for
from tests.support.admin_servers import Mailbox, smtp_server, text_of

pytestmark = pytest.mark.e2e

ORG = "links-e2e"
EVIL = {"Host": "evil.example:8443", "X-Forwarded-Proto": "https"}


@pytest.fixture(scope="module")
def mailbox(stack: Stack) -> Iterator[Mailbox]:
    admin = stack.session()
    with smtp_server() as (port, box):
        smtp = {
            "enabled": True,
            "host": "127.0.0.1",
            "port": port,
            "sender": "registry@example.test",
            "auth": "none",
            "test-email-address": "ops@example.test",
        }
        body = {"data": {"type": "smtp-settings", "attributes": smtp}}
        saved = admin.patch(stack.api("/admin/smtp-settings"), json=body)
        assert saved.status_code == 200, saved.text
        try:
            yield box
        finally:
            off = {"data": {"type": "smtp-settings", "attributes": {"enabled": False}}}
            assert admin.patch(stack.api("/admin/smtp-settings"), json=off).status_code == 200


def links_to(box: Mailbox, recipient: str, path: str) -> list[str]:
    """The links to ``path`` in the mail ``recipient`` got (waiting for it)."""
    mails = wait_for(lambda: [m for m in box.messages if m["To"] == recipient], bool)
    assert mails, f"no mail to {recipient}"
    return re.findall(r"\w+://\S*" + re.escape(path) + r"\S*", text_of(mails[-1]))


def test_a_reset_link_names_the_printed_address(stack: Stack, mailbox: Mailbox) -> None:
    form = requests.get(f"{stack.url}/app/password-reset", timeout=30)
    csrf = re.search(r'name="csrf_token" value="([^"]+)"', form.text)
    assert csrf, form.text
    jar: SimpleCookie = SimpleCookie()
    jar.load(form.headers["Set-Cookie"])  # Secure: requests would not send it over http
    cookie = "; ".join(f"{name}={morsel.value}" for name, morsel in jar.items())
    asked = requests.post(
        f"{stack.url}/app/password-reset",
        data={"csrf_token": csrf.group(1), "login": "admin"},
        headers={**EVIL, "Cookie": cookie},
        timeout=30,
    )
    assert asked.status_code == 200, asked.text
    (link,) = links_to(mailbox, "admin@localhost", "/app/password-reset/")
    assert link.startswith(f"{stack.url}/app/password-reset/user-"), link


def test_a_confirmation_link_names_the_printed_address(stack: Stack, mailbox: Mailbox) -> None:
    admin = stack.session()
    update = stack.api("/account/update")
    moved = admin.patch(update, json=doc("users", email="links@example.test"), headers=EVIL)
    try:
        assert moved.status_code == 200, moved.text
        (link,) = links_to(mailbox, "links@example.test", "/app/account/confirm-email/")
        assert link.startswith(f"{stack.url}/app/account/confirm-email/"), link
    finally:  # the waiting change dropped: the shared stack's admin keeps its address
        back = admin.patch(update, json=doc("users", email="admin@localhost"))
        assert back.status_code == 200, back.text


def test_an_invitation_link_names_the_printed_address(stack: Stack, mailbox: Mailbox) -> None:
    admin = stack.session()
    created = admin.post(
        stack.api("/organizations"), json=doc("organizations", name=ORG, email="o@x.io")
    )
    assert created.status_code == 201, created.text
    invited = admin.post(
        stack.api(f"/organizations/{ORG}/organization-memberships"),
        json=doc("organization-memberships", email="invited@example.test"),
        headers=EVIL,
    )
    assert invited.status_code == 201, invited.text
    (link,) = links_to(mailbox, "invited@example.test", "/app/invitations/")
    assert link.startswith(f"{stack.url}/app/invitations/"), link
