"""The notifications queue's messages, one at a time (``entry.notify``; the local stack's
poller): a delivery of one notice to one configuration, or the mail to a version's
consumers.

A delivery is one attempt (``send.deliver``, which keeps it on the configuration, as TFE
shows its last deliveries). One that failed is put back on the queue with the next
``BACKOFF`` delay (SQS's ``DelaySeconds``, at most 15 minutes) until ``MAX_ATTEMPTS``, then
given up (logged); a configuration deleted, disabled or no longer subscribed meanwhile drops
it. The consumers' mail: the addresses are resolved once (``consumers.addresses``) and put
back as messages of at most ``MAIL_BATCH`` recipients each; each recipient is mailed once,
and those whose mail failed are retried as deliveries are. Nothing here is a person's
change: no audit event (the configuration's last deliveries are bookkeeping).
"""

from __future__ import annotations

import json
import logging
from dataclasses import fields
from typing import Any

from chalicelib.core.data.ids import now
from chalicelib.notifications import consumers, fanout, send, store
from chalicelib.notifications.triggers import Notice

log = logging.getLogger("registry.notifications")

MAX_ATTEMPTS = 5
# Seconds before the 2nd, 3rd, 4th and 5th attempt (SQS delays a message at most 900 s).
BACKOFF = (30, 120, 600, 900)
# Recipients one consumers message mails at most (each mail is one SMTP exchange).
MAIL_BATCH = 20
_NOTICE_FIELDS = {f.name for f in fields(Notice)}


def notice_of(raw: Any) -> Notice | None:
    if not isinstance(raw, dict) or not {"trigger", "organization", "message"} <= raw.keys():
        return None
    try:
        return Notice(**{k: v for k, v in raw.items() if k in _NOTICE_FIELDS})
    except TypeError:
        return None


def handle_body(body: str) -> str:
    """One message of the notifications queue; what became of it (``delivered``,
    ``retrying``, ``given-up``, ``dropped``, ``mailed``...). An exception (the queue
    refusing a message put back) leaves the message for SQS to deliver again."""
    try:
        message = json.loads(body)
    except ValueError:
        message = None
    notice = notice_of(message.get("notice")) if isinstance(message, dict) else None
    if not isinstance(message, dict) or message.get("kind") not in fanout.KINDS or not notice:
        log.warning("ignoring a message of the notifications queue that is no notice")
        return "ignored"
    attempt = _attempt(message)
    if message["kind"] == fanout.DELIVERY:
        return deliver(message, notice, attempt)
    return mail_consumers(message, notice, attempt)


def _attempt(message: dict[str, Any]) -> int:
    try:
        return max(1, int(message.get("attempt") or 1))
    except (TypeError, ValueError):
        return 1


def _again(message: dict[str, Any], attempt: int, **changes: Any) -> str:
    """Put ``message`` back for its next attempt after its backoff; ``given-up`` past the
    last one."""
    if attempt >= MAX_ATTEMPTS:
        return "given-up"
    fanout.enqueue([{**message, **changes, "attempt": attempt + 1}], delay=BACKOFF[attempt - 1])
    return "retrying"


def deliver(message: dict[str, Any], notice: Notice, attempt: int) -> str:
    ref = message.get("configuration") or {}
    configuration = store.find_configuration(str(ref.get("organization")), str(ref.get("id")))
    if configuration is None or not fanout.subscribed(configuration, notice.trigger):
        log.info("notification dropped: configuration %s is gone, off or unsubscribed", ref)
        return "dropped"
    delivery = send.deliver(configuration, notice)
    if delivery.get("successful"):
        return "delivered"
    outcome = _again(message, attempt)
    level = logging.WARNING if outcome == "given-up" else logging.INFO
    log.log(
        level,
        "notification %s to %s failed (attempt %d of %d: %s); %s",
        notice.trigger,
        configuration.id,
        attempt,
        MAX_ATTEMPTS,
        delivery.get("error") or delivery.get("code"),
        outcome,
    )
    return outcome


def mail_consumers(message: dict[str, Any], notice: Notice, attempt: int) -> str:
    # Mail (smtplib) loads with the first consumers' message: deliveries never need it.
    from chalicelib.admin import mail
    from chalicelib.core.api.errors import ApiError

    recipients = message.get("recipients")
    if not isinstance(recipients, list):
        found = consumers.addresses(
            notice.organization, str(message.get("module-id")), str(message.get("version")), now()
        )
        chunks = [found[i : i + MAIL_BATCH] for i in range(0, len(found), MAIL_BATCH)]
        fanout.enqueue([{**message, "recipients": chunk, "attempt": 1} for chunk in chunks])
        return f"{len(found)} recipients"
    subject, text = consumers.mail(notice)
    failed = []
    for recipient in [str(r) for r in recipients[:MAIL_BATCH]]:
        try:
            if not mail.send_notice([recipient], subject, text):
                log.warning("consumers of %s not mailed: SMTP is not set up", notice.resource)
                return "no-smtp"
        except ApiError as exc:
            log.info("mail to a consumer failed: %s", exc.detail or exc.title)
            failed.append(recipient)
    if not failed:
        return "mailed"
    return _again(message, attempt, recipients=failed)
