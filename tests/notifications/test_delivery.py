"""Notices from the audit trail, fanned out to an organization's destinations, delivered with
retries and backoff, and the consumers of a deprecated version mailed.

The configurations are made with the store's model (the token sealed with ``core.secrets``)
until the configurations API is merged; the audit events are the real ones, recorded by the
API's changes and the ingest worker and read from the table's stream (moto's) by the
notifications' own reader; the destination is a local HTTP listener and the mail a local
SMTP server.
"""

from __future__ import annotations

import hashlib
import hmac
import json
from collections.abc import Iterator
from dataclasses import asdict
from datetime import timedelta
from typing import Any

import pytest

from chalicelib.core import secrets
from chalicelib.core.data.aws import client
from chalicelib.core.data.ids import new_id, now
from chalicelib.core.settings import get_settings
from chalicelib.entry import notify
from chalicelib.modules.downloads import store as downloads
from chalicelib.notifications import fanout, store, triggers, worker
from chalicelib.notifications.store import TOKEN_PURPOSE, NotificationConfigurationModel
from chalicelib.notifications.triggers import Notice, Trigger
from infrastructure.streams import StreamReader, notifications_reader
from tests.conftest import Api, make_org, make_team
from tests.modules.helpers import create_module, create_version, publish, upload_and_ingest
from tests.support.admin_servers import text_of
from tests.support.notification_receiver import receiver

MODULE = "/api/v2/organizations/acme/registry-modules/private/acme/vpc/aws"
TOKEN = "destination-hmac-token"
EVERY_TRIGGER = [str(t) for t in Trigger]


def configure(
    url: str | None,
    subscribed: list[str] | None = None,
    *,
    organization: str = "acme",
    enabled: bool = True,
    token: str | None = TOKEN,
    destination_type: str = "generic",
    emails: tuple[str, ...] = (),
) -> NotificationConfigurationModel:
    """A configuration as the API will make it (the token sealed)."""
    moment = now()
    item = NotificationConfigurationModel(
        organization=organization,
        id=new_id("nc"),
        name="hook",
        destination_type=destination_type,
        url=url,
        token=secrets.seal(token, purpose=TOKEN_PURPOSE) if token else None,
        enabled=enabled,
        triggers=list(EVERY_TRIGGER if subscribed is None else subscribed),
        email_addresses=list(emails),
        created_at=moment,
        updated_at=moment,
    )
    item.save()
    return item


def queued() -> list[dict[str, Any]]:
    """Every message visible on the notifications queue, taken off it."""
    sqs = client("sqs")
    url = sqs.get_queue_url(QueueName=get_settings().notify_queue)["QueueUrl"]
    found = []
    while True:
        messages = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10).get("Messages", [])
        if not messages:
            return found
        for message in messages:
            found.append(json.loads(message["Body"]))
            sqs.delete_message(QueueUrl=url, ReceiptHandle=message["ReceiptHandle"])


def change_version(api: Api, version: str, **attributes: Any) -> None:
    body = {"data": {"type": "module-versions", "attributes": attributes}}
    reply = api.patch(f"{MODULE}/{version}", body)
    assert reply.status == 200, reply.json


def deprecate(api: Api, version: str) -> None:
    deprecation = {
        "deprecated-status": "Deprecated",
        "reason": "CVE in 1.x",
        "link": "https://x.io",
    }
    change_version(api, version, deprecation=deprecation)


@pytest.fixture
def acme(api: Api) -> Api:
    make_org(api, "acme")
    create_module(api, "vpc", "aws")
    return api


@pytest.fixture
def stream(acme: Api) -> StreamReader:
    """The notifications' reader of the audit stream, from now on (moto keeps the stream's
    records of earlier tests)."""
    reader = notifications_reader("LATEST")
    reader.open()
    return reader


@pytest.fixture
def spy(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[tuple[list[dict[str, Any]], int]]]:
    """What the worker puts back on the queue, and after which delay (then puts it)."""
    calls: list[tuple[list[dict[str, Any]], int]] = []
    real = fanout.enqueue

    def enqueue(bodies: list[dict[str, Any]], delay: int = 0) -> None:
        calls.append((bodies, delay))
        real(bodies, delay)

    monkeypatch.setattr(fanout, "enqueue", enqueue)
    yield calls


# ----- audit events -> notices --------------------------------------------------------------

MODULE_META = {"registry": "private", "module": "acme/vpc/aws", "version": "1.0.0"}


def event(resource_type: str, action: str, system: bool = True, **meta: Any) -> dict[str, Any]:
    return {
        "id": "e1",
        "timestamp": "2026-11-28T10:00:00.000Z",
        "auth": {
            "accessor_id": "registry" if system else "user-1",
            "description": "registry" if system else "olga",
            "type": "System" if system else "Client",
            "organization_id": "acme",
        },
        "resource": {"id": "modver-1", "type": resource_type, "action": action, "meta": meta},
    }


def one_module(organization: str, key: str) -> triggers.Module | None:
    assert (organization, key) == ("acme", "private#acme#vpc#aws")
    entry = {
        "deprecation": {
            "reason": "old",
            "link": "https://x.io/why",
            "revoke-at": "2027-01-01T00:00:00Z",
        }
    }
    return triggers.Module("mod-1", "1.2.0", {"1.0.0": entry})


@pytest.mark.parametrize(
    ("resource_type", "action", "meta", "expected"),
    [
        ("registry-module-version", "uploaded", {"status": "ok"}, Trigger.MODULE_PUBLISHED),
        ("registry-module-version", "uploaded", {"status": "ingressing"}, None),  # held: its scan
        ("registry-module-version", "scanned", {"status": "ok"}, Trigger.MODULE_PUBLISHED),
        ("registry-module-version", "scanned", {}, None),  # an ok version's scan: no news
        ("registry-module-version", "released", {}, Trigger.MODULE_PUBLISHED),
        ("registry-module-version", "refused", {"reason": "no .tf"}, Trigger.MODULE_REFUSED),
        ("registry-module-version", "quarantined", {"reasons": ["HIGH"]}, Trigger.MODULE_REFUSED),
        ("registry-module-version", "deprecated", {}, Trigger.MODULE_DEPRECATED),
        ("registry-module-version", "revoked", {"by": "deadline"}, Trigger.MODULE_REVOKED),
        (
            "registry-module-version",
            "deadline-approaching",
            {"days-left": 7},
            Trigger.MODULE_DEADLINE,
        ),
        ("registry-module-version", "undeprecated", {}, None),
        ("registry-module-version", "created", {}, None),
        ("registry-module", "deleted", {}, None),
        (
            "registry-provider-version",
            "uploaded",
            {"provider": "private/acme/aws"},
            Trigger.PROVIDER_PUBLISHED,
        ),
        ("registry-provider-version", "refused", {"provider": "private/acme/aws"}, None),
        ("team", "created", {}, None),
    ],
)
def test_each_audit_event_fires_its_trigger_or_none(resource_type, action, meta, expected) -> None:
    notice = triggers.of_event(event(resource_type, action, **MODULE_META, **meta), one_module)
    assert (notice.trigger if notice else None) == expected


def test_a_notice_says_what_to_do_by_when_and_links_the_page() -> None:
    notice = triggers.of_event(
        event(
            "registry-module-version",
            "deadline-approaching",
            **MODULE_META,
            **{"days-left": 1, "revoke-at": "2027-01-01T00:00:00Z"},
        ),
        one_module,
    )
    assert notice is not None
    assert notice.organization == "acme" and notice.actor is None  # the registry acted
    assert notice.resource == {
        "type": "registry-module-version",
        "id": "modver-1",
        "address": "acme/acme/vpc/aws",
        "version": "1.0.0",
    }
    assert notice.message == (
        "acme/acme/vpc/aws 1.0.0 will be revoked on 2027-01-01T00:00:00Z (1 day left): old. "
        "Move to 1.2.0 by 2027-01-01T00:00:00Z."
    )
    # The reason and link come from the version's deprecation where the event has none.
    assert notice.details == {
        "days-left": 1,
        "revoke-at": "2027-01-01T00:00:00Z",
        "reason": "old",
        "link": "https://x.io/why",
        "latest-version": "1.2.0",
    }
    assert notice.url == "http://registry.test/app/acme/registry/modules/private/acme/vpc/aws/1.0.0"


def test_a_person_is_named_and_a_message_is_one_line() -> None:
    notice = triggers.of_event(
        event(
            "registry-module-version",
            "deprecated",
            system=False,
            **MODULE_META,
            reason="line one\nline two",
        ),
        one_module,
    )
    assert notice is not None and notice.actor == "olga"
    assert "\n" not in notice.message and "line one line two" in notice.message


def test_an_event_of_a_module_gone_or_of_the_site_notifies_nothing() -> None:
    gone = triggers.of_event(
        event("registry-module-version", "deprecated", **MODULE_META), lambda o, k: None
    )
    assert gone is None
    site = event("registry-module-version", "deprecated", **MODULE_META)
    site["auth"]["organization_id"] = ""
    assert triggers.of_event(site, one_module) is None


# ----- fan-out -------------------------------------------------------------------------------


def test_each_enabled_subscribed_configuration_gets_one_queued_delivery(
    acme: Api, stream: StreamReader, monkeypatch: pytest.MonkeyPatch
) -> None:
    everything = configure("https://hooks.example/a")
    deprecations = configure("https://hooks.example/b", [str(Trigger.MODULE_DEPRECATED)])
    configure("https://hooks.example/off", enabled=False)
    configure("https://hooks.example/other", organization="other")
    reads: list[str] = []
    real = store.in_organization
    monkeypatch.setattr(
        store, "in_organization", lambda org, **kw: reads.append(org) or real(org, **kw)
    )

    publish(acme, "1.0.0")
    publish(acme, "1.1.0")
    deprecate(acme, "1.0.0")
    stream.drain()

    messages = queued()
    deliveries = [m for m in messages if m["kind"] == "delivery"]
    told = sorted((m["configuration"]["id"], m["notice"]["trigger"]) for m in deliveries)
    assert told == sorted(
        [
            (everything.id, "registry-module-version:published"),
            (everything.id, "registry-module-version:published"),
            (everything.id, "registry-module-version:deprecated"),
            (deprecations.id, "registry-module-version:deprecated"),
        ]
    )
    assert all(m["attempt"] == 1 for m in deliveries)
    assert {m["configuration"]["organization"] for m in deliveries} == {"acme"}
    deprecated = next(m for m in deliveries if m["configuration"]["id"] == deprecations.id)
    assert deprecated["notice"]["details"]["latest-version"] == "1.1.0"
    assert deprecated["notice"]["details"]["reason"] == "CVE in 1.x"
    assert deprecated["notice"]["actor"] == "admin"
    # A deprecation also tells the version's consumers.
    (consumers,) = [m for m in messages if m["kind"] == "consumers"]
    module_id = acme.get(MODULE).data["id"]
    assert consumers["module-id"] == module_id and consumers["version"] == "1.0.0"
    # One Query of the configurations per organization per batch, however many events.
    assert len(reads) <= 3 and set(reads) == {"acme"}


def test_a_refused_upload_and_a_revocation_are_notified(acme: Api, stream: StreamReader) -> None:
    configure("https://hooks.example/a")
    refused = create_version(acme, "0.9.0")
    assert upload_and_ingest(refused, b"not a gzipped tarball") != "ok"
    publish(acme, "1.0.0")
    deprecate(acme, "1.0.0")
    change_version(acme, "1.0.0", revocation={"status": "Revoked", "message": "CVE-2026-1"})
    stream.drain()
    notices = {m["notice"]["trigger"]: m["notice"] for m in queued() if m["kind"] == "delivery"}
    assert set(notices) == {
        "registry-module-version:refused",
        "registry-module-version:published",
        "registry-module-version:deprecated",
        "registry-module-version:revoked",
    }
    assert notices["registry-module-version:refused"]["message"].startswith(
        "acme/acme/vpc/aws 0.9.0 was refused"
    )
    revoked = notices["registry-module-version:revoked"]
    assert revoked["details"]["message"] == "CVE-2026-1"
    assert "1.0.0 was revoked: CVE-2026-1." in revoked["message"]


def test_nothing_is_queued_without_a_subscribed_destination(
    acme: Api, stream: StreamReader
) -> None:
    configure("https://hooks.example/a", [str(Trigger.PROVIDER_PUBLISHED)])
    publish(acme, "1.0.0")
    stream.drain()
    assert queued() == []


# ----- delivery: one attempt, retried with backoff, given up --------------------------------


def notice() -> Notice:
    return Notice(
        trigger=str(Trigger.MODULE_DEPRECATED),
        organization="acme",
        occurred_at="2026-11-28T10:00:00.000Z",
        message="acme/acme/vpc/aws 1.0.0 is deprecated.",
        resource={
            "type": "registry-module-version",
            "id": "modver-1",
            "address": "acme/acme/vpc/aws",
            "version": "1.0.0",
        },
        details={"latest-version": "1.1.0"},
    )


def delivery(configuration: NotificationConfigurationModel) -> str:
    return json.dumps(fanout.delivery_message(configuration, notice()))


def kept(configuration: NotificationConfigurationModel) -> list[dict[str, Any]]:
    return NotificationConfigurationModel.get("acme", configuration.id).delivery_responses


def test_a_failed_delivery_is_retried_after_its_backoff_and_then_succeeds(
    aws: None, spy: list[tuple[list[dict[str, Any]], int]]
) -> None:
    with receiver(500, 202) as destination:
        configuration = configure(destination.url())
        assert worker.handle_body(delivery(configuration)) == "retrying"
        ((again,), delay) = spy[-1]
        assert delay == worker.BACKOFF[0] == 30 and again["attempt"] == 2
        assert queued() == []  # SQS holds it back for its delay
        assert worker.handle_body(json.dumps(again)) == "delivered"
    assert len(destination.received) == 2
    for received in destination.received:
        expected = hmac.new(TOKEN.encode(), received.body, hashlib.sha512).hexdigest()
        assert received.headers["X-TFE-Notification-Signature"] == expected
        sent = json.loads(received.body)
        assert (
            sent["payload_version"] == 1
            and sent["notification_configuration_id"] == configuration.id
        )
        assert sent["notifications"][0]["trigger"] == "registry-module-version:deprecated"
    responses = kept(configuration)
    assert [(r["code"], r["successful"]) for r in responses] == [(202, True), (500, False)]


def test_a_delivery_that_keeps_failing_is_given_up_after_five_attempts(
    aws: None, spy: list[tuple[list[dict[str, Any]], int]]
) -> None:
    with receiver(500) as destination:
        configuration = configure(destination.url())
        body, outcomes = delivery(configuration), []
        for _ in range(worker.MAX_ATTEMPTS):
            outcomes.append(worker.handle_body(body))
            if spy and outcomes[-1] == "retrying":
                body = json.dumps(spy[-1][0][0])
    assert outcomes == ["retrying"] * 4 + ["given-up"]
    assert [delay for _, delay in spy] == [30, 120, 600, 900]
    assert len(destination.received) == 5
    responses = kept(configuration)
    assert len(responses) == 5 and not any(r["successful"] for r in responses)
    assert {r["code"] for r in responses} == {500}
    assert responses[0]["body"] == "destination failed"


def test_an_unreachable_destination_shows_its_error(aws: None, spy: list[Any]) -> None:
    configuration = configure("http://10.255.255.1:9/hook")  # private: refused by default
    assert worker.handle_body(delivery(configuration)) == "retrying"
    (response,) = kept(configuration)
    assert response["code"] is None and not response["successful"]
    assert response["error"]


def test_a_configuration_deleted_disabled_or_unsubscribed_meanwhile_drops_it(aws: None) -> None:
    with receiver(202) as destination:
        deleted = configure(destination.url())
        body = delivery(deleted)
        deleted.delete()
        assert worker.handle_body(body) == "dropped"
        disabled = configure(destination.url())
        body = delivery(disabled)
        disabled.update(actions=[NotificationConfigurationModel.enabled.set(False)])
        assert worker.handle_body(body) == "dropped"
        unsubscribed = configure(destination.url(), [str(Trigger.MODULE_PUBLISHED)])
        assert worker.handle_body(delivery(unsubscribed)) == "dropped"
    assert destination.received == []


def test_a_message_that_is_no_notice_is_ignored(aws: None) -> None:
    for body in ("not json", "[]", '{"kind": "delivery"}', '{"kind": "x", "notice": {}}'):
        assert worker.handle_body(body) == "ignored"


def test_the_queue_function_reports_only_its_failed_messages(
    aws: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    with receiver(202) as destination:
        configuration = configure(destination.url())
        good = {"messageId": "m1", "body": delivery(configuration)}

        def broken(*_: Any, **__: Any) -> None:
            raise RuntimeError("the queue is down")

        with receiver(500) as failing:
            bad = {"messageId": "m2", "body": delivery(configure(failing.url()))}
            monkeypatch.setattr(fanout, "enqueue", broken)  # putting it back fails
            answer = notify.deliveries({"Records": [good, bad]}, None)
    assert answer == {"batchItemFailures": [{"itemIdentifier": "m2"}]}
    assert len(destination.received) == 1


def test_the_stream_function_queues_what_the_batch_notifies(
    acme: Api, stream: StreamReader
) -> None:
    configure("https://hooks.example/a")
    publish(acme, "1.0.0")
    records = []
    stream.handle = records.extend  # the batch as Lambda would hand it
    stream.drain()
    assert records
    notify.stream({"Records": records}, None)
    assert [m["notice"]["trigger"] for m in queued()] == ["registry-module-version:published"]


# ----- the consumers' mail -------------------------------------------------------------------


def person(api: Api, username: str, team_ids: list[str], **flags: Any) -> str:
    """A user (with a confirmed address) on those teams; their id."""
    from chalicelib.accounts.teams import service as teams_service
    from chalicelib.accounts.users import service as users_service
    from chalicelib.core.auth import Principal

    admin = Principal("user", users_service.bootstrap_admin(None)[0].id, "t")
    user = users_service.create_user(username, f"{username}@example.com")
    for team_id in team_ids:
        teams_service.change_membership(admin, team_id, [username], add=True)
    if flags:
        from chalicelib.accounts.users.store import UserModel

        UserModel(user.id).update(actions=[getattr(UserModel, k).set(v) for k, v in flags.items()])
    return user.id


def test_a_deprecated_versions_recent_consumers_are_mailed_once_each(
    acme: Api, stream: StreamReader, smtp: Any, spy: list[Any]
) -> None:
    publish(acme, "1.0.0")
    publish(acme, "1.1.0")
    module_id = acme.get(MODULE).data["id"]
    platform, _ = make_team(acme, "acme", "platform")
    network, _ = make_team(acme, "acme", "network")
    olga = person(acme, "olga", [platform, network])  # on two consuming teams
    person(acme, "ivan", [platform])
    person(acme, "sam", [platform], suspended=True)
    person(acme, "una", [platform], email_unconfirmed=True)
    readers, _ = make_team(acme, "acme", "readers")  # a team that downloaded nothing
    lone = person(acme, "lone", [readers])
    old = person(acme, "old", [readers])
    left = person(acme, "left", [])  # downloaded it, then left acme: may no longer read it
    make_org(acme, "elsewhere")  # acme shares no module with it
    stranger_team, _ = make_team(acme, "elsewhere", "ops")
    person(acme, "stranger", [stranger_team])
    moment = now()
    for kind, principal in (
        ("team", platform),
        ("team", network),
        ("user", lone),
        ("user", olga),
        ("user", left),
        ("team", stranger_team),
    ):
        downloads.record(module_id, "1.0.0", kind, principal, moment - timedelta(days=3))
    downloads.record(module_id, "1.0.0", "organization", "acme", moment)
    downloads.record(module_id, "1.0.0", "user", old, moment - timedelta(days=91))
    downloads.record(module_id, "1.1.0", "user", old, moment)  # another version's consumer
    deprecate(acme, "1.0.0")
    stream.drain()
    (consumers,) = [m for m in queued() if m["kind"] == "consumers"]

    assert worker.handle_body(json.dumps(consumers)) == "3 recipients"
    ((chunk,), delay) = spy[-1]
    assert delay == 0 and sorted(chunk["recipients"]) == [
        "ivan@example.com",
        "lone@example.com",
        "olga@example.com",
    ]
    assert worker.handle_body(json.dumps(chunk)) == "mailed"
    # Each person once: olga is on two consuming teams and a consumer herself.
    assert sorted(message["To"] for message in smtp.messages) == sorted(chunk["recipients"])
    mail = smtp.messages[0]
    assert mail["Subject"] == "acme/acme/vpc/aws 1.0.0 is deprecated"
    text = text_of(mail)
    assert "Why: CVE in 1.x" in text
    assert "Move to: 1.1.0" in text
    assert "From the owners: https://x.io" in text
    assert "http://registry.test/app/acme/registry/modules/private/acme/vpc/aws/1.0.0" in text


def test_consumers_without_smtp_are_not_mailed_and_nothing_fails(acme: Api, spy: list[Any]) -> None:
    message = {
        "kind": "consumers",
        "notice": asdict(notice()),
        "module-id": "mod-x",
        "version": "1.0.0",
        "recipients": ["a@example.com"],
    }
    assert worker.handle_body(json.dumps(message)) == "no-smtp"
    assert spy == []


def test_the_local_reader_keeps_its_own_place_in_the_audit_stream(acme: Api, tmp_path: Any) -> None:
    """The local stack's second reader of the audit stream resumes after its own checkpoint:
    a restart (the stream restored with the tables) notifies nothing twice."""
    configure("https://hooks.example/a")
    checkpoint = tmp_path / "notifications-checkpoint.json"
    first = notifications_reader("LATEST", checkpoint)
    first.open()
    publish(acme, "1.0.0")
    first.drain()
    assert [m["notice"]["resource"]["version"] for m in queued()] == ["1.0.0"]
    again = notifications_reader("TRIM_HORIZON", checkpoint)  # as after a restart
    again.drain()
    assert queued() == []
    publish(acme, "1.1.0")
    again.drain()
    assert [m["notice"]["resource"]["version"] for m in queued()] == ["1.1.0"]


def test_an_organization_without_a_destination_costs_its_query_only(
    acme: Api, stream: StreamReader, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No module is read for a notice nobody asked for (a deprecation still is: its
    consumers are told)."""
    read: list[str] = []
    real = triggers.read_module
    monkeypatch.setattr(triggers, "read_module", lambda o, k: read.append(k) or real(o, k))
    publish(acme, "1.0.0")
    publish(acme, "1.1.0")
    stream.drain()
    assert read == [] and queued() == []
    deprecate(acme, "1.0.0")
    stream.drain()
    assert read == ["private#acme#vpc#aws"]
    assert [m["kind"] for m in queued()] == ["consumers"]


def test_a_provider_version_verified_is_notified(api: Api) -> None:
    from tests.providers import helpers as providers
    from tests.support.provider_files import new_signing_key

    signer = new_signing_key()
    providers.provider_org(api, signer)
    reader = notifications_reader("LATEST")
    reader.open()
    configure("https://hooks.example/a", [str(Trigger.PROVIDER_PUBLISHED)])
    providers.publish(api, signer)
    reader.drain()
    (message,) = queued()
    told = message["notice"]
    assert told["trigger"] == "registry-provider-version:published"
    assert told["resource"]["address"] == "acme/acme/mycloud"
    assert told["resource"]["version"] == "1.0.0"
    assert told["message"] == "Provider acme/acme/mycloud 1.0.0 was published."
    assert (
        told["url"] == "http://registry.test/app/acme/registry/providers/private/acme/mycloud/1.0.0"
    )


def test_a_team_of_an_organization_shared_with_is_mailed_while_it_is_shared(acme: Api) -> None:
    from chalicelib.accounts.organizations.store import OrganizationModel
    from chalicelib.accounts.teams import service as teams_service

    make_org(acme, "elsewhere")
    ops, _ = make_team(acme, "elsewhere", "ops")
    person(acme, "stranger", [ops])
    assert teams_service.mail_addresses("acme", [ops], []) == []
    shared = [OrganizationModel.module_consumers.set({"elsewhere"})]
    OrganizationModel("acme").update(actions=shared)
    assert teams_service.mail_addresses("acme", [ops], []) == ["stranger@example.com"]
    assert teams_service.mail_addresses("gone", [ops], []) == []


def test_a_consumer_whose_mail_failed_is_retried_alone(
    aws: None, smtp: Any, spy: list[tuple[list[dict[str, Any]], int]]
) -> None:
    message = {
        "kind": "consumers",
        "notice": asdict(notice()),
        "module-id": "mod-x",
        "version": "1.0.0",
        "recipients": ["a@example.com"],
        "attempt": 1,
    }
    smtp.reject_data = True
    assert worker.handle_body(json.dumps(message)) == "retrying"
    ((again,), delay) = spy[-1]
    assert delay == 30 and again["attempt"] == 2 and again["recipients"] == ["a@example.com"]
    smtp.reject_data = False
    assert worker.handle_body(json.dumps(again)) == "mailed"
    assert [m["To"] for m in smtp.messages] == ["a@example.com"]


def test_the_consumers_mail_of_an_approaching_deadline_says_by_when() -> None:
    from chalicelib.notifications import consumers

    approaching = triggers.of_event(
        event(
            "registry-module-version",
            "deadline-approaching",
            **MODULE_META,
            **{"days-left": 7, "revoke-at": "2027-01-01T00:00:00Z"},
        ),
        one_module,
    )
    assert approaching is not None
    subject, text = consumers.mail(approaching)
    assert subject == "acme/acme/vpc/aws 1.0.0 will be revoked on 2027-01-01T00:00:00Z"
    assert "(7 days left)" in text
    assert "Move to: 1.2.0" in text
    assert "By: 2027-01-01T00:00:00Z (then the registry stops serving 1.0.0)" in text
    assert "From the owners: https://x.io/why" in text
