"""Notifications through the real local stack: each registry change's audit event is read a
second time from the audit stream (the stack's notifications reader, with its own place),
fanned out to the organization's destinations through the notifications queue and delivered
by its poller, as the NotificationsFanOut and NotificationsDelivery functions do in AWS.

A ``generic`` destination on a local HTTP listener receives the signed payload of each
trigger (a version published, an upload refused, a deprecation, a revocation), a failing
one keeps its errors in its delivery responses, and a consuming team's member (the one who
downloaded the deprecated version with the team's token) receives the mail at a local SMTP
server.

The configurations are made and read through the API, as an owner would. A deprecation whose
deadline passed is revoked by the stack's sweep, and that revocation is notified too.
"""

from __future__ import annotations

import hashlib
import hmac
import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any
from uuid import uuid4

import pytest
import requests

from chalicelib.notifications.triggers import Trigger
from tests.conftest import doc, tar_gz
from tests.e2e.conftest import VCS_HOST, Stack, wait_for
from tests.support.admin_servers import Mailbox, smtp_server, text_of
from tests.support.notification_receiver import Receiver, receiver

pytestmark = pytest.mark.e2e

ORG = f"told-{uuid4().hex[:8]}"
TOKEN = "e2e-destination-token"
MODULE = f"/organizations/{ORG}/registry-modules/private/{ORG}/vpc/aws"
TIMEOUT = 90.0  # a generous cap: the pollers run every second or so


def configure(stack: Stack, url: str) -> str:
    """A generic configuration of ORG subscribed to every trigger, made through the API; its
    id."""
    attributes = {
        "name": "e2e",
        "destination-type": "generic",
        "enabled": True,
        "url": url,
        "token": TOKEN,
        "triggers": [str(t) for t in Trigger],
    }
    made = stack.session().post(
        stack.api(f"/organizations/{ORG}/notification-configurations"),
        json=doc("notification-configurations", **attributes),
    )
    assert made.status_code == 201, made.text
    return str(made.json()["data"]["id"])


def delivery_responses(stack: Stack, configuration: str) -> list[dict[str, Any]]:
    read = stack.session().get(stack.api(f"/notification-configurations/{configuration}"))
    assert read.status_code == 200, read.text
    return list(read.json()["data"]["attributes"]["delivery-responses"])


def upload(stack: Stack, version: str, archive: bytes) -> None:
    admin = stack.session()
    made = admin.post(
        stack.api(f"/registry-modules/{ORG}/vpc/aws/versions"),
        json=doc("registry-module-versions", version=version),
    )
    assert made.status_code == 201, made.text
    put = requests.put(
        made.json()["data"]["links"]["upload"],
        data=archive,
        headers={"Content-Type": "application/octet-stream"},
        timeout=30,
    )
    assert put.status_code == 200


def statuses(stack: Stack) -> dict[str, str]:
    reply = stack.session().get(stack.api(MODULE))
    return {
        s["version"]: s["status"] for s in reply.json()["data"]["attributes"]["version-statuses"]
    }


def change(stack: Stack, version: str, **attributes: Any) -> None:
    reply = stack.session().patch(
        stack.api(f"{MODULE}/{version}"), json=doc("module-versions", **attributes)
    )
    assert reply.status_code == 200, reply.text


@pytest.fixture(scope="module")
def mailbox(stack: Stack) -> Iterator[Mailbox]:
    """The stack's SMTP settings pointed at a local SMTP server while this module runs."""
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
        saved = admin.patch(
            stack.api("/admin/smtp-settings"),
            json={"data": {"type": "smtp-settings", "attributes": smtp}},
        )
        assert saved.status_code == 200, saved.text
        box.messages.clear()
        try:
            yield box
        finally:
            off = {"data": {"type": "smtp-settings", "attributes": {"enabled": False}}}
            assert admin.patch(stack.api("/admin/smtp-settings"), json=off).status_code == 200


def received(destination: Receiver) -> dict[str, dict[str, Any]]:
    """What the destination got, by trigger and version (each signature checked)."""
    found = {}
    for request in list(destination.received):
        expected = hmac.new(TOKEN.encode(), request.body, hashlib.sha512).hexdigest()
        assert request.headers["X-TFE-Notification-Signature"] == expected
        payload = json.loads(request.body)
        (entry,) = payload["notifications"]
        found[f"{entry['trigger']} {entry['resource']['version']}"] = payload
    return found


def test_each_trigger_reaches_a_signed_destination_and_the_consumers_mailbox(
    stack: Stack, mailbox: Mailbox
) -> None:
    admin = stack.session()
    made = admin.post(
        stack.api("/organizations"), json=doc("organizations", name=ORG, email="o@x.io")
    )
    assert made.status_code == 201, made.text
    created = admin.post(
        stack.api(f"/organizations/{ORG}/registry-modules"),
        json=doc("registry-modules", name="vpc", provider="aws"),
    )
    assert created.status_code == 201, created.text
    with receiver(202) as destination, receiver(500) as failing:
        hook = configure(stack, destination.url(VCS_HOST))
        broken = configure(stack, failing.url(VCS_HOST))

        main_tf = 'output "id" {\n  value = "vpc"\n}\n'
        upload(stack, "1.0.0", tar_gz({"main.tf": main_tf}))
        upload(stack, "1.1.0", tar_gz({"main.tf": main_tf}))
        upload(stack, "0.8.0", tar_gz({"main.tf": main_tf}))
        upload(stack, "0.9.0", b"this is no gzipped tarball")
        settled = wait_for(
            lambda: statuses(stack),
            lambda s: s.get("1.0.0") == s.get("1.1.0") == s.get("0.8.0") == "ok",
            TIMEOUT,
        )
        assert settled["1.0.0"] == settled["1.1.0"] == settled["0.8.0"] == "ok"
        assert settled["0.9.0"] != "ok"

        # A consuming team: its token downloads 1.0.0; its member is mailed.
        team = admin.post(
            stack.api(f"/organizations/{ORG}/teams"), json=doc("teams", name="platform")
        )
        assert team.status_code == 201, team.text
        team_id = team.json()["data"]["id"]
        me = admin.get(stack.api("/account/details")).json()["data"]["attributes"]
        members = admin.post(
            stack.api(f"/teams/{team_id}/relationships/users"),
            json={"data": [{"type": "users", "id": me["username"]}]},
        )
        assert members.status_code == 204, members.text
        team_token = admin.post(stack.api(f"/teams/{team_id}/authentication-token"), json=None)
        secret = team_token.json()["data"]["attributes"]["token"]
        download = requests.get(
            f"{stack.url}/api/registry/v1/modules/{ORG}/vpc/aws/1.0.0/download",
            headers={"Authorization": f"Bearer {secret}"},
            timeout=30,
        )
        assert download.status_code == 204, download.text

        deprecation = {
            "deprecated-status": "Deprecated",
            "reason": "1.0.0 leaks its flow logs",
            "link": "https://wiki.example/vpc-1.1",
        }
        change(stack, "1.0.0", deprecation=deprecation)
        change(stack, "1.0.0", revocation={"status": "Revoked", "message": "CVE-2026-7"})
        # A deadline that passed half a minute ago: the stack's sweep revokes 0.8.0.
        passed = (datetime.now(UTC) - timedelta(seconds=30)).strftime("%Y-%m-%dT%H:%M:%SZ")
        due = {"deprecated-status": "Deprecated", "reason": "too old", "revoke-at": passed}
        change(stack, "0.8.0", deprecation=due)

        wanted = {
            "registry-module-version:published 1.0.0",
            "registry-module-version:published 1.1.0",
            "registry-module-version:refused 0.9.0",
            "registry-module-version:deprecated 1.0.0",
            "registry-module-version:revoked 1.0.0",
            "registry-module-version:deprecated 0.8.0",
            "registry-module-version:revoked 0.8.0",
        }
        got = wait_for(lambda: received(destination), lambda r: wanted <= set(r), TIMEOUT)
        assert wanted <= set(got), sorted(got)
        deprecated = got["registry-module-version:deprecated 1.0.0"]
        assert deprecated["payload_version"] == 1
        assert deprecated["notification_configuration_id"] == hook
        assert deprecated["organization_name"] == ORG
        entry = deprecated["notifications"][0]
        assert entry["resource"]["address"] == f"{ORG}/{ORG}/vpc/aws"
        assert entry["details"]["latest-version"] == "1.1.0"
        assert entry["details"]["link"] == "https://wiki.example/vpc-1.1"
        assert entry["url"].endswith(f"/app/{ORG}/registry/modules/private/{ORG}/vpc/aws/1.0.0")
        revoked = got["registry-module-version:revoked 1.0.0"]["notifications"][0]
        assert revoked["details"]["message"] == "CVE-2026-7"
        assert revoked["actor"] and "by" not in revoked["details"]
        on_deadline = got["registry-module-version:revoked 0.8.0"]["notifications"][0]
        assert on_deadline["actor"] is None  # the registry itself
        assert on_deadline["details"]["by"] == "deadline"
        assert on_deadline["details"]["revoke-at"] == passed

        # The destination's deliveries are kept; the failing one's show their errors.
        kept = wait_for(lambda: delivery_responses(stack, hook), lambda d: len(d) >= 7, TIMEOUT)
        assert len(kept) >= 7 and all(d["successful"] == "true" for d in kept), kept
        assert {d["code"] for d in kept} == {"202"}
        errors = wait_for(lambda: delivery_responses(stack, broken), bool, TIMEOUT)
        assert errors and {(d["code"], d["successful"]) for d in errors} == {("500", "false")}
        assert failing.received  # it was tried, and will be again after its backoff

    mails = wait_for(
        lambda: [m for m in mailbox.messages if "1.0.0 is deprecated" in m["Subject"]],
        bool,
        TIMEOUT,
    )
    assert len(mails) == 1, [m["Subject"] for m in mailbox.messages]
    (mail,) = mails
    assert mail["To"] == me["email"]
    text = text_of(mail)
    assert "Why: 1.0.0 leaks its flow logs" in text
    assert "Move to: 1.1.0" in text
    assert "From the owners: https://wiki.example/vpc-1.1" in text
    assert TOKEN not in stack.log()
