"""Notification configurations through the real local stack: created over HTTP, verified
against a local HTTP listener (the signed verification arrives; its delivery is kept), a
destination the operator did not allow refused, and a failing one showing its failure."""

from __future__ import annotations

import hashlib
import hmac
import json
from collections.abc import Iterator

import pytest

from tests.conftest import doc
from tests.e2e.conftest import VCS_HOST, Stack
from tests.support.notification_receiver import Receiver, receiver

pytestmark = pytest.mark.e2e

ORG = "notifyorg"
TYPE = "notification-configurations"
TOKEN = "e2e-hmac-key"


@pytest.fixture(scope="module")
def org(stack: Stack) -> Iterator[Stack]:
    made = stack.session().post(
        stack.api("/organizations"), json=doc("organizations", name=ORG, email="o@x.io")
    )
    assert made.status_code == 201, made.text
    yield stack


@pytest.fixture
def listener() -> Iterator[Receiver]:
    with receiver() as state:
        yield state


def _generic(url: str, token: str | None = TOKEN) -> dict:
    attributes = {"name": "hook", "destination-type": "generic", "enabled": True, "url": url}
    return doc(TYPE, **attributes, **({"token": token} if token else {}))


def test_verify_reaches_an_allowed_listener_signed(org: Stack, listener: Receiver) -> None:
    stack, admin = org, org.session()
    listed = f"/organizations/{ORG}/notification-configurations"
    # the stack allows ``localhost`` (REGISTRY_OUTBOUND_ALLOW), not 127.0.0.1: as deployed,
    # a loopback address is refused when it is saved
    refused = admin.post(stack.api(listed), json=_generic(listener.url("127.0.0.1")))
    assert refused.status_code == 422, refused.text
    assert refused.json()["errors"][0]["source"]["pointer"] == "/data/attributes/url"
    made = admin.post(stack.api(listed), json=_generic(listener.url(VCS_HOST)))
    assert made.status_code == 201, made.text
    config = made.json()["data"]["id"]
    verified = admin.post(stack.api(f"/notification-configurations/{config}/actions/verify"))
    assert verified.status_code == 200, verified.text
    (headers, body), *_ = listener.received
    assert headers["X-TFE-Notification-Signature"] == (
        hmac.new(TOKEN.encode(), body, hashlib.sha512).hexdigest()
    )
    payload = json.loads(body)
    assert payload["payload_version"] == 1 and payload["organization_name"] == ORG
    assert payload["notifications"][0]["trigger"] == "verification"
    delivery = verified.json()["data"]["attributes"]["delivery-responses"][0]
    assert (delivery["code"], delivery["successful"]) == ("202", "true")
    assert TOKEN not in verified.text

    listener.status = 503
    failed = admin.post(stack.api(f"/notification-configurations/{config}/actions/verify"))
    assert failed.status_code == 200
    last = failed.json()["data"]["attributes"]["delivery-responses"]
    assert [(d["code"], d["successful"]) for d in last] == [("503", "false"), ("202", "true")]
    assert admin.delete(stack.api(f"/notification-configurations/{config}")).status_code == 204
    assert TOKEN not in stack.log()
