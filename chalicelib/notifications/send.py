"""Delivering one notice to one configuration, and keeping what happened.

An HTTP destination gets one POST of ``payload.body``, signed when the configuration has a
token (``X-TFE-Notification-Signature``: the hex HMAC-SHA512 of the body under the token,
as TFE signs), through ``core.outbound`` (the URL's own origin only, public addresses unless
``REGISTRY_OUTBOUND_ALLOW`` lists it, no redirect elsewhere, ``TIMEOUT`` seconds per network
operation, the answer read up to ``MAX_ANSWER`` bytes). An ``email`` destination gets one
mail per address (``admin.mail.send_notice``): its ``email-addresses`` and its ``users``
who are still members of the organization (``recipients``).

Every attempt is kept on the configuration (``delivery_responses``, newest first, the last
``store.MAX_DELIVERIES``), as TFE shows them: the URL, status code, the answer's first
``KEPT_BODY`` characters and headers, when, whether it succeeded (a 2xx), and for a
delivery that got no answer, why (``error``: refused, unreachable, timed out). Keeping it
is bookkeeping, not a person's change: no audit event.
"""

from __future__ import annotations

import hashlib
import hmac
import logging
from typing import Any

from pynamodb.exceptions import UpdateError

from chalicelib.core import observe, outbound, secrets
from chalicelib.core.data.ids import iso, now
from chalicelib.notifications import payload
from chalicelib.notifications.store import (
    MAX_DELIVERIES,
    TOKEN_PURPOSE,
    NotificationConfigurationModel,
)
from chalicelib.notifications.triggers import Notice

log = logging.getLogger("registry.notifications")

SIGNATURE_HEADER = "X-TFE-Notification-Signature"
TIMEOUT = 10.0
MAX_ANSWER = 64 * 1024
KEPT_BODY = 1024
KEPT_HEADERS = ("Content-Type", "Content-Length", "Date", "Server")
USER_AGENT = "terraform-registry-notifications/1"

Delivery = dict[str, Any]


def signature(token: str, body: bytes) -> str:
    return hmac.new(token.encode(), body, hashlib.sha512).hexdigest()


def deliver(configuration: NotificationConfigurationModel, notice: Notice) -> Delivery:
    """Send ``notice`` to ``configuration`` once, keep the attempt on it, and return it
    (``successful``: whether the destination took it)."""
    if configuration.destination_type == payload.EMAIL:
        delivery = _mail(configuration, notice)
    else:
        delivery = _post(configuration, notice)
    keep(configuration, delivery)
    return delivery


def _post(configuration: NotificationConfigurationModel, notice: Notice) -> Delivery:
    url = configuration.url or ""
    body = payload.body(configuration.destination_type, configuration.id, notice)
    headers = {"Content-Type": "application/json", "User-Agent": USER_AGENT}
    if configuration.token:
        token = secrets.unseal(configuration.token, purpose=TOKEN_PURPOSE)
        headers[SIGNATURE_HEADER] = signature(token, body)
    delivery: Delivery = {"url": url, "sent-at": iso(now()), "successful": False}
    try:
        with outbound.fetch(
            url,
            outbound.Destinations.of(url),
            timeout=TIMEOUT,
            method="POST",
            headers=headers,
            body=body,
        ) as answer:
            text = answer.read_at_most(MAX_ANSWER).decode("utf-8", "replace")
            delivery.update(
                code=answer.status,
                body=text[:KEPT_BODY],
                headers={k: [v] for k in KEPT_HEADERS if (v := answer.headers.get(k))},
                successful=200 <= answer.status < 300,
            )
    except outbound.OutboundError as exc:
        delivery.update(code=None, body="", headers={}, error=str(exc))
    return delivery


def recipients(configuration: NotificationConfigurationModel) -> list[str]:
    """Whom an ``email`` destination mails: its ``email-addresses`` and the addresses of its
    ``users`` who are still members of the organization and not suspended, each address
    once (in any case)."""
    from chalicelib.accounts.users import service as users

    members = users.members_among(
        configuration.organization, [str(u) for u in configuration.email_user_ids or []]
    )
    addresses = [str(a) for a in configuration.email_addresses or []]
    addresses += [u.email for u in members if u.email and not u.suspended]
    once: dict[str, str] = {}
    for address in addresses:
        once.setdefault(address.strip().lower(), address.strip())
    return list(once.values())


def _mail(configuration: NotificationConfigurationModel, notice: Notice) -> Delivery:
    from chalicelib.admin import mail
    from chalicelib.core.api.errors import ApiError

    delivery: Delivery = {"url": "", "sent-at": iso(now()), "code": None, "body": "", "headers": {}}
    addresses = recipients(configuration)
    if not addresses:
        return {**delivery, "successful": False, "error": "no recipients"}
    subject, text = payload.mail_text(notice)
    try:
        sent = mail.send_notice(addresses, subject, text)
    except ApiError as exc:
        # The SMTP server's name and reply are the site admin's to see (the log), not the
        # organization's: the delivery says only what kind of failure it was.
        log.warning("notification mail of %s failed: %s", configuration.id, exc.detail)
        return {**delivery, "successful": False, "error": f"the mail was not sent ({exc.title})"}
    if not sent:
        return {**delivery, "successful": False, "error": "SMTP is not set up"}
    return {**delivery, "successful": True}


def keep(configuration: NotificationConfigurationModel, delivery: Delivery) -> None:
    """Put ``delivery`` first in the configuration's last deliveries (one UpdateItem; a
    configuration deleted meanwhile is left deleted)."""
    kept = [delivery, *(configuration.delivery_responses or [])][:MAX_DELIVERIES]
    with observe.bookkeeping():
        try:
            configuration.update(
                actions=[NotificationConfigurationModel.delivery_responses.set(kept)],
                condition=NotificationConfigurationModel.id.exists(),
            )
        except UpdateError:
            log.info("notification configuration %s is gone", configuration.id)
