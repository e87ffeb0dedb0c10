"""A notice as each destination type receives it: the bytes of the request body.

``generic``: the registry's own JSON, versioned (``payload_version`` ``1``; a change that
could break a receiver makes a new version), documented in docs/notifications.md:

    {"payload_version": 1,
     "notification_configuration_id": "nc-…",
     "organization_name": "acme",
     "notifications": [{"trigger": "registry-module-version:deprecated",
                        "message": "…", "occurred_at": "…Z", "actor": "alice" | null,
                        "resource": {"type", "id", "address", "version"},
                        "url": "https://…" | null,
                        "details": {…}}]}

``slack``: an incoming webhook's ``{"text": …}``; ``microsoft-teams``: a ``MessageCard``
(the connector card incoming webhooks accept). Both say the message and link the page.
"""

from __future__ import annotations

import json
from dataclasses import asdict
from typing import Any

from chalicelib.notifications.triggers import Notice

PAYLOAD_VERSION = 1
GENERIC = "generic"
SLACK = "slack"
TEAMS = "microsoft-teams"
EMAIL = "email"
DESTINATION_TYPES = (GENERIC, SLACK, TEAMS, EMAIL)
# The most a request body may be: a notice's texts are bounded where they are recorded
# (the audit event's meta), so this is never reached by a real notice.
MAX_BODY = 64 * 1024


def generic(configuration_id: str, notice: Notice) -> dict[str, Any]:
    entry = asdict(notice)
    entry.pop("organization")
    return {
        "payload_version": PAYLOAD_VERSION,
        "notification_configuration_id": configuration_id,
        "organization_name": notice.organization,
        "notifications": [entry],
    }


def _line(notice: Notice) -> str:
    return f"{notice.message} <{notice.url}>" if notice.url else notice.message


def slack(notice: Notice) -> dict[str, Any]:
    return {"text": _line(notice)}


def teams(notice: Notice) -> dict[str, Any]:
    card: dict[str, Any] = {
        "@type": "MessageCard",
        "@context": "https://schema.org/extensions",
        "summary": notice.message[:200],
        "title": f"{notice.organization}: {notice.trigger}",
        "text": notice.message,
    }
    if notice.url:
        card["potentialAction"] = [
            {
                "@type": "OpenUri",
                "name": "Open in the registry",
                "targets": [{"os": "default", "uri": notice.url}],
            }
        ]
    return card


def body(destination_type: str, configuration_id: str, notice: Notice) -> bytes:
    """The request body for a destination of ``destination_type`` (not ``email``)."""
    if destination_type == SLACK:
        document = slack(notice)
    elif destination_type == TEAMS:
        document = teams(notice)
    else:
        document = generic(configuration_id, notice)
    return json.dumps(document, separators=(",", ":"), sort_keys=True).encode()


def mail_text(notice: Notice) -> tuple[str, str]:
    """(subject, text) of a notice mailed to an ``email`` destination."""
    subject = f"[{notice.organization}] {notice.message}"[:200]
    lines = [notice.message, ""]
    if notice.url:
        lines += [notice.url, ""]
    for name, value in notice.details.items():
        lines.append(f"{name}: {value}")
    return subject, "\n".join(lines).rstrip() + "\n"
