"""The organization's notification configurations API, as go-tfe v1.109.0's integration test
drives TFE's (``notification_configuration_integration_test.go``): list, create, read,
update, delete and verify, who may, every refusal before any write, the audit events, an
email destination's users, verify against a local HTTP listener and a local SMTP server,
and the configurations going with their organization."""

from __future__ import annotations

import hashlib
import hmac
import json
from collections.abc import Iterator
from typing import Any

import pytest

from chalicelib.core.audit import trail
from chalicelib.notifications import service
from chalicelib.notifications.triggers import Trigger
from tests.conftest import Api, doc, make_org, make_team, moto_items
from tests.support.notification_receiver import Receiver, receiver

V2 = "/api/v2"
ORG = "acme"
LIST = f"{V2}/organizations/{ORG}/notification-configurations"
TYPE = "notification-configurations"
TOKEN = "s3cret-hmac-key"


def by_id(config_id: str) -> str:
    return f"{V2}/notification-configurations/{config_id}"


@pytest.fixture
def listener() -> Iterator[Receiver]:
    with receiver() as state:
        yield state


@pytest.fixture
def org(api: Api) -> str:
    return make_org(api, ORG)


def generic(url: str = "http://127.0.0.1:9/hook", **more: Any) -> dict[str, Any]:
    attributes = {
        "destination-type": "generic",
        "enabled": False,
        "name": "deploys",
        "token": TOKEN,
        "url": url,
        "triggers": [Trigger.MODULE_DEPRECATED.value],
        **more,
    }
    return doc(TYPE, **attributes)


def email(users: list[str] | None = None, **more: Any) -> dict[str, Any]:
    body = doc(TYPE, **{"destination-type": "email", "enabled": True, "name": "mail", **more})
    if users is not None:
        body["data"]["relationships"] = {
            "users": {"data": [{"type": "users", "id": u} for u in users]}
        }
    return body


def member(api: Api, username: str) -> str:
    """A new user, member of the organization (on a team with no access): their id."""
    from chalicelib.accounts.users.service import create_user

    user = create_user(username, f"{username}@example.com")
    team = api.post(f"{V2}/organizations/{ORG}/teams", doc("teams", name=f"t-{username}"))
    assert team.status == 201, team.json
    joined = api.post(
        f"{V2}/teams/{team.data['id']}/relationships/users",
        {"data": [{"type": "users", "id": username}]},
    )
    assert joined.status == 204, joined.json
    return user.id


def written_since(before: dict[str, Any]) -> set[str]:
    """The tables whose items changed since ``before`` (``moto_items()``), but the tokens'
    (a token's first use is noted on it)."""
    after = moto_items()
    changed = {t for t in set(before) | set(after) if before.get(t) != after.get(t)}
    return {t for t in changed if not t.endswith("-tokens")}


# ----- the TFE shape ------------------------------------------------------------------------


def test_create_read_list_update_delete_in_go_tfes_shape(api: Api, org: str) -> None:
    made = api.post(LIST, generic())
    assert made.status == 201, made.json
    data = made.data
    assert data["type"] == TYPE and data["id"].startswith("nc-")
    attributes = data["attributes"]
    assert attributes["name"] == "deploys"
    assert attributes["destination-type"] == "generic"
    assert attributes["enabled"] is False
    assert attributes["url"] == "http://127.0.0.1:9/hook"
    assert attributes["token"] is None  # write-only
    assert attributes["triggers"] == ["registry-module-version:deprecated"]
    assert attributes["email-addresses"] == [] and attributes["delivery-responses"] == []
    assert attributes["created-at"].endswith("Z") and attributes["updated-at"].endswith("Z")
    assert data["relationships"]["subscribable"]["data"] == {"id": ORG, "type": "organizations"}
    assert data["relationships"]["users"]["data"] == []
    assert TOKEN.encode() not in made.body

    read = api.get(by_id(data["id"]))
    assert read.status == 200 and read.data == data
    second = api.post(LIST, generic(name="second"))
    listed = api.get(LIST)
    assert listed.status == 200
    assert {c["id"] for c in listed.data} == {data["id"], second.data["id"]}
    assert listed.json["meta"]["pagination"]["total-count"] == 2

    # go-tfe's "with options": enabled and name; the rest stays
    updated = api.patch(by_id(data["id"]), doc(TYPE, enabled=True, name="newName"))
    assert updated.status == 200, updated.json
    assert updated.data["attributes"]["enabled"] is True
    assert updated.data["attributes"]["name"] == "newName"
    assert updated.data["attributes"]["url"] == "http://127.0.0.1:9/hook"
    # "without options": an empty update is fine
    assert api.patch(by_id(data["id"]), {"data": {"type": TYPE}}).status == 200

    assert api.delete(by_id(data["id"])).status == 204
    assert api.get(by_id(data["id"])).status == 404
    assert api.delete(by_id(data["id"])).status == 404
    assert api.get(by_id("nonexisting")).status == 404
    assert api.patch(by_id("nonexisting"), {"data": {"type": TYPE}}).status == 404
    assert api.post(by_id("nonexisting") + "/actions/verify").status == 404


def test_email_users_are_members_and_an_update_without_them_clears_them(api: Api, org: str) -> None:
    """go-tfe's update test: users sent replace the users; an update without them leaves
    none (TFE's answer to "without email users when destination type is email")."""
    first, second = member(api, "ann"), member(api, "bob")
    made = api.post(LIST, email([first]))
    assert made.status == 201, made.json
    assert made.data["relationships"]["users"]["data"] == [{"id": first, "type": "users"}]
    both = api.patch(by_id(made.data["id"]), email([first, second], name="newName"))
    assert both.status == 200, both.json
    assert {u["id"] for u in both.data["relationships"]["users"]["data"]} == {first, second}
    cleared = api.patch(by_id(made.data["id"]), doc(TYPE, enabled=True, name="newName"))
    assert cleared.status == 200
    assert cleared.data["relationships"]["users"]["data"] == []
    # without users at all: fine (go-tfe's "without email users")
    assert api.post(LIST, email()).status == 201


# ----- refusals: a 422 naming the attribute, nothing written -------------------------------


REFUSALS = [
    (doc(TYPE, **{"destination-type": "generic", "url": "http://127.0.0.1:9/"}), "/name"),
    (generic(name=""), "/name"),
    (generic(name="n" * 256), "/name"),
    (generic(**{"destination-type": "pager"}), "/destination-type"),
    (generic(url=None), "/url"),
    (generic(**{"destination-type": "slack", "url": None}), "/url"),
    (generic(**{"destination-type": "microsoft-teams", "url": None}), "/url"),
    (generic(url="ftp://127.0.0.1/x"), "/url"),
    (generic(url="http://user:pw@127.0.0.1/x"), "/url"),
    (generic(url="http://localhost:9/x"), "/url"),  # loopback, by a name not listed
    (generic(url="http://169.254.169.254/latest/meta-data"), "/url"),  # link-local
    (generic(url="http://10.1.2.3/hook"), "/url"),  # private
    (generic(url="http://[::1]:9/hook"), "/url"),
    (generic(url="https://8.8.8.8/" + "p" * 2048), "/url"),
    (generic(token="t" * 1025), "/token"),
    (generic(triggers=["run:created"]), "/triggers/0"),
    (
        generic(triggers=[Trigger.MODULE_REVOKED.value, "the beacons of gondor are lit"]),
        "/triggers/1",
    ),
    (generic(triggers=[Trigger.MODULE_REVOKED.value] * 17), "/triggers"),
    (generic(**{"email-addresses": ["a@example.com"]}), "/email-addresses"),
    (email(url="http://127.0.0.1:9/"), "/url"),
    (email(token="x"), "/token"),
    (email(**{"email-addresses": ["not-an-address"]}), "/email-addresses/0"),
    (email(**{"email-addresses": [f"u{i}@example.com" for i in range(101)]}), "/email-addresses"),
    (email(["nobody-such"]), "/data/relationships/users/data/0/id"),
    (email([f"user-{i}" for i in range(101)]), "/data/relationships/users"),
]


@pytest.mark.parametrize(("body", "pointer"), REFUSALS)
def test_refusals_name_the_attribute_and_write_nothing(
    api: Api, org: str, body: dict[str, Any], pointer: str
) -> None:
    before = moto_items()
    reply = api.post(LIST, body)
    assert reply.status == 422, reply.json
    found = reply.error["source"]["pointer"]
    assert found == pointer if pointer.startswith("/data/") else found.endswith(pointer), found
    assert moto_items() == before


def test_an_unknown_trigger_is_named(api: Api, org: str) -> None:
    reply = api.post(LIST, generic(triggers=["fly you fools!"]))
    assert reply.status == 422 and "fly you fools!" in reply.error["detail"]
    made = api.post(LIST, generic()).data["id"]
    refused = api.patch(by_id(made), doc(TYPE, triggers=["fly you fools!"]))
    assert refused.status == 422 and "fly you fools!" in refused.error["detail"]


def test_a_non_members_user_and_a_changed_type_are_refused_on_update(api: Api, org: str) -> None:
    from chalicelib.accounts.users.service import create_user

    outsider = create_user("outsider", "outsider@example.com").id
    made = api.post(LIST, email()).data["id"]
    before = moto_items()
    assert api.patch(by_id(made), email([outsider])).status == 422
    changed = api.patch(by_id(made), doc(TYPE, **{"destination-type": "generic"}))
    assert changed.status == 422
    assert changed.error["source"]["pointer"] == "/data/attributes/destination-type"
    assert moto_items() == before


def test_an_allowed_private_destination_is_accepted(
    api: Api, org: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from chalicelib.core.settings import get_settings

    assert api.post(LIST, generic(url="http://10.1.2.3/hook")).status == 422
    monkeypatch.setenv("REGISTRY_OUTBOUND_ALLOW", "127.0.0.1,10.0.0.0/8")
    get_settings.cache_clear()
    try:
        assert api.post(LIST, generic(url="http://10.1.2.3/hook")).status == 201
    finally:
        monkeypatch.undo()
        get_settings.cache_clear()


def test_an_organization_holds_at_most_its_bound(
    api: Api, org: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(service, "MAX_PER_ORGANIZATION", 2)
    first = api.post(LIST, generic()).data["id"]
    assert api.post(LIST, generic()).status == 201
    before = moto_items()
    refused = api.post(LIST, generic())
    assert refused.status == 422 and "at most 2" in refused.error["detail"]
    assert moto_items() == before
    assert api.delete(by_id(first)).status == 204
    assert api.post(LIST, generic()).status == 201  # the deleted one's place


def test_the_bound_is_fifty() -> None:
    assert service.MAX_PER_ORGANIZATION == 50


# ----- who may -------------------------------------------------------------------------------


def test_owners_and_manage_modules_teams_manage_others_get_404(api: Api, org: str) -> None:
    made = api.post(LIST, generic()).data["id"]
    _, managers = make_team(api, ORG, "publishers", manage_modules=True)
    _, readers = make_team(api, ORG, "readers", manage_workspaces=True)
    org_token = api.post(f"{V2}/organizations/{ORG}/authentication-token").data["attributes"]
    as_managers = api.as_(managers)
    assert as_managers.get(LIST).status == 200
    assert as_managers.get(by_id(made)).status == 200
    own = as_managers.post(LIST, generic(name="theirs"))
    assert own.status == 201
    assert as_managers.delete(by_id(own.data["id"])).status == 204
    make_org(api, "other")
    before = moto_items()
    for token in (readers, org_token["token"]):
        caller = api.as_(token)
        assert caller.get(LIST).status == 404
        assert caller.post(LIST, generic()).status == 404
        assert caller.get(by_id(made)).status == 404
        assert caller.patch(by_id(made), doc(TYPE, name="x")).status == 404
        assert caller.post(by_id(made) + "/actions/verify").status == 404
        assert caller.delete(by_id(made)).status == 404
    assert api.as_(None).get(LIST).status == 401
    assert written_since(before) == set()  # a token's last use aside


# ----- audit events ----------------------------------------------------------------------------


def test_each_change_records_its_event_without_the_token_or_url(api: Api, org: str) -> None:
    made = api.post(LIST, generic()).data["id"]
    api.patch(by_id(made), doc(TYPE, name="renamed", token="an0ther-secret"))
    api.delete(by_id(made))
    found = [
        e
        for e in trail.read_page(ORG, None, 1, 1000)[0]
        if e["resource"]["type"] == "notification-configuration"
    ]
    assert [e["resource"]["action"] for e in found] == ["created", "updated", "deleted"]
    assert all(e["resource"]["id"] == made for e in found)
    assert found[1]["resource"]["meta"]["changed"] == ["name", "token"]
    assert found[1]["resource"]["meta"]["previous-name"] == "deploys"
    text = json.dumps(found)
    assert TOKEN not in text and "an0ther-secret" not in text and "127.0.0.1:9" not in text


# ----- verify --------------------------------------------------------------------------------


def test_verify_posts_a_signed_verification_and_shows_the_delivery(
    api: Api, org: str, listener: Receiver
) -> None:
    made = api.post(LIST, generic(url=listener.url())).data["id"]
    verified = api.post(by_id(made) + "/actions/verify")
    assert verified.status == 200, verified.json
    (headers, body), *_ = listener.received
    expected = hmac.new(TOKEN.encode(), body, hashlib.sha512).hexdigest()
    assert headers["X-TFE-Notification-Signature"] == expected
    sent = json.loads(body)
    assert sent["payload_version"] == 1
    assert sent["notification_configuration_id"] == made
    assert sent["organization_name"] == ORG
    assert sent["notifications"][0]["trigger"] == "verification"
    delivery = verified.data["attributes"]["delivery-responses"][0]
    # go-tfe's DeliveryResponse: code and successful are strings
    assert delivery["code"] == "202" and delivery["successful"] == "true"
    assert delivery["url"] == listener.url() and delivery["body"] == '{"ok":true}'
    assert delivery["headers"]["Content-Type"] == ["application/json"]
    assert delivery["sent-at"].endswith("Z")
    assert api.get(by_id(made)).data["attributes"]["delivery-responses"] == [delivery]


def test_verify_answers_200_when_the_destination_fails(
    api: Api, org: str, listener: Receiver
) -> None:
    listener.status = 500
    made = api.post(LIST, generic(url=listener.url(), token=None)).data["id"]
    verified = api.post(by_id(made) + "/actions/verify")
    assert verified.status == 200
    (headers, _), *_ = listener.received
    assert "X-TFE-Notification-Signature" not in headers  # no token, no signature
    delivery = verified.data["attributes"]["delivery-responses"][0]
    assert delivery["code"] == "500" and delivery["successful"] == "false"


def test_verify_of_an_unreachable_destination_keeps_its_error(
    api: Api, org: str, listener: Receiver
) -> None:
    made = api.post(LIST, generic(url=listener.url())).data["id"]
    listener.status = 204
    api.post(by_id(made) + "/actions/verify")
    gone = f"http://127.0.0.1:{listener.port}/hook"
    api.patch(by_id(made), doc(TYPE, url=gone.replace(str(listener.port), "9")))
    verified = api.post(by_id(made) + "/actions/verify")
    first, second = verified.data["attributes"]["delivery-responses"]
    assert first["successful"] == "false" and first["code"] is None and first["error"]
    assert second["successful"] == "true" and second["code"] == "204"


def test_verify_mails_the_addresses_and_the_members(api: Api, org: str, smtp: Any) -> None:
    ann = member(api, "ann")
    body = email([ann], **{"email-addresses": ["ops@example.com", "ANN@example.com"]})
    made = api.post(LIST, body).data["id"]
    verified = api.post(by_id(made) + "/actions/verify")
    assert verified.status == 200
    delivery = verified.data["attributes"]["delivery-responses"][0]
    assert delivery["successful"] == "true", delivery
    to = sorted(str(m["To"]).lower() for m in smtp.messages)
    assert to == ["ann@example.com", "ops@example.com"]  # each address once
    assert "Verification" in str(smtp.messages[0]["Subject"])


def test_verify_of_an_email_destination_without_smtp_says_so(api: Api, org: str) -> None:
    made = api.post(LIST, email(**{"email-addresses": ["ops@example.com"]})).data["id"]
    delivery = api.post(by_id(made) + "/actions/verify").data["attributes"]["delivery-responses"]
    assert delivery[0]["successful"] == "false" and delivery[0]["error"] == "SMTP is not set up"


# ----- the organization's deletion -------------------------------------------------------------


def test_deleting_the_organization_deletes_its_configurations(api: Api, org: str) -> None:
    from chalicelib.notifications import store

    kept = make_org(api, "kept")
    made = api.post(LIST, generic()).data["id"]
    api.post(LIST, email())
    other = api.post(f"{V2}/organizations/{kept}/notification-configurations", generic())
    assert other.status == 201
    assert api.delete(f"{V2}/organizations/{ORG}").status == 204
    assert store.in_organization(ORG) == [] and store.get(made) is None
    from chalicelib.core.data import lists

    assert lists.counts(store.count_scope(ORG)) == {}
    assert [c.id for c in store.in_organization(kept)] == [other.data["id"]]
    # a new organization of the same name starts with none, and may hold its fifty again
    make_org(api, ORG)
    assert api.get(LIST).data == []


def test_outbound_check_refuses_what_a_fetch_would_and_passes_an_unresolved_name() -> None:
    """``core.outbound.check``: the fetch's rules, applied when the URL is saved."""
    from chalicelib.core import outbound

    for url in ("http://localhost/", "http://169.254.169.254/", "file:///etc/passwd"):
        with pytest.raises(outbound.Refused):
            outbound.check(url)
    outbound.check("http://127.0.0.1:9/")  # listed by the suite (REGISTRY_OUTBOUND_ALLOW)
    outbound.check("https://8.8.8.8/hook")  # public
    outbound.check("https://no-such-host.invalid/hook")  # judged when it is fetched


def test_the_registry_functions_own_app_serves_them(
    api: Api, org: str, listener: Receiver, tmp_path: Any
) -> None:
    """As deployed: the routes are the registry group's (RegistryFunction), and that app
    alone creates, verifies and deletes (its grants: infrastructure/groups.py)."""
    from chalice.test import Client

    from chalicelib.entry.api.registry import app
    from tests.conftest import ADMIN_TOKEN

    with Client(app, project_dir=str(tmp_path)) as client:
        own = Api(client, ADMIN_TOKEN)
        made = own.post(LIST, generic(url=listener.url()))
        assert made.status == 201, made.json
        verified = own.post(by_id(made.data["id"]) + "/actions/verify")
        assert verified.data["attributes"]["delivery-responses"][0]["successful"] == "true"
        assert len(listener.received) == 1
        assert own.delete(by_id(made.data["id"])).status == 204


def test_a_user_who_left_the_organization_is_not_mailed(api: Api, org: str, smtp: Any) -> None:
    ann = member(api, "ann")
    made = api.post(LIST, email([ann])).data["id"]
    team = api.get(f"{V2}/organizations/{ORG}/teams?filter[names]=t-ann").data[0]["id"]
    left = api.delete(
        f"{V2}/teams/{team}/relationships/users", {"data": [{"type": "users", "id": "ann"}]}
    )
    assert left.status == 204, left.json
    delivery = api.post(by_id(made) + "/actions/verify").data["attributes"]["delivery-responses"]
    assert delivery[0]["successful"] == "false" and delivery[0]["error"] == "no recipients"
    assert smtp.messages == []


def test_a_destination_no_longer_allowed_is_refused_at_delivery(
    api: Api, org: str, listener: Receiver, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Saved while the operator allowed 127.0.0.1; the operator stops allowing it: the
    delivery is refused before any connection, and says so."""
    from chalicelib.core.settings import get_settings

    made = api.post(LIST, generic(url=listener.url())).data["id"]
    monkeypatch.setenv("REGISTRY_OUTBOUND_ALLOW", "")
    get_settings.cache_clear()
    try:
        verified = api.post(by_id(made) + "/actions/verify")
    finally:
        monkeypatch.undo()
        get_settings.cache_clear()
    delivery = verified.data["attributes"]["delivery-responses"][0]
    assert delivery["successful"] == "false" and "refused" in delivery["error"]
    assert listener.received == []
