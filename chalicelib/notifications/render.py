"""JSON:API rendering of notification configurations, as go-tfe v1.109.0 decodes them.

``token`` is write-only: always null (whether one is set shows in nothing but the
signature a destination receives). ``delivery-responses`` take TFE's shape, ``code`` and
``successful`` as strings (go-tfe's ``DeliveryResponse`` declares them so: a number or a
boolean there would fail its decoding); ``error`` (why nothing answered) goes beside them.
``subscribable`` is the organization (TFE's is a workspace or a team).
"""

from __future__ import annotations

from typing import Any

from chalicelib.core.api.jsonapi import resource, to_many, to_one
from chalicelib.core.data.ids import iso
from chalicelib.notifications.store import NotificationConfigurationModel

TYPE = "notification-configurations"


def configuration_path(configuration_id: str) -> str:
    return f"/api/v2/notification-configurations/{configuration_id}"


def render_delivery(delivery: dict[str, Any]) -> dict[str, Any]:
    code = delivery.get("code")
    shown = {
        "url": delivery.get("url") or "",
        "body": delivery.get("body") or "",
        "code": str(code) if code is not None else None,
        "headers": delivery.get("headers") or {},
        "sent-at": delivery.get("sent-at"),
        "successful": "true" if delivery.get("successful") else "false",
    }
    if delivery.get("error"):
        shown["error"] = delivery["error"]
    return shown


def render_configuration(configuration: NotificationConfigurationModel) -> dict[str, Any]:
    org = configuration.organization
    attributes = {
        "name": configuration.name,
        "destination-type": configuration.destination_type,
        "enabled": bool(configuration.enabled),
        "url": configuration.url,
        "token": None,
        "triggers": list(configuration.triggers or []),
        "email-addresses": list(configuration.email_addresses or []),
        "delivery-responses": [render_delivery(d) for d in configuration.delivery_responses or []],
        "created-at": iso(configuration.created_at),
        "updated-at": iso(configuration.updated_at),
    }
    return resource(
        TYPE,
        configuration.id,
        attributes,
        relationships={
            "subscribable": {
                **to_one("organizations", org),
                "links": {"related": f"/api/v2/organizations/{org}"},
            },
            "users": to_many("users", [str(u) for u in configuration.email_user_ids or []]),
        },
        links={"self": configuration_path(configuration.id)},
    )
