"""Notification configurations: who may manage them, what a valid one is, and its changes.

Who: the organization's owners and teams with ``manage-modules`` (they own what is
notified: the modules' versions and their deprecations); anyone else gets 404, as if the
organization or the configuration did not exist (``authorization.authorize``, the one
place that decides).

A configuration is checked whole before anything is written: ``name`` 1 to 255
characters; ``destination-type`` one of ``payload.DESTINATION_TYPES`` (fixed at creation);
``url`` (http or https, at most 2,048 characters) required for ``generic``, ``slack`` and
``microsoft-teams``, refused when it names a loopback, link-local or private address
``REGISTRY_OUTBOUND_ALLOW`` does not list (``core.outbound.check``: the rules every fetch
follows), and not taken by ``email``; ``token`` (the HMAC key, at most 1,024 characters,
never shown back) not taken by ``email``; ``triggers`` at most 16 of ``triggers.Trigger``;
``email-addresses`` (at most 100 valid addresses) and ``relationships.users`` (at most 100
members of the organization) for ``email`` only; at most 50 configurations per organization
(kept count, checked in the create transaction).

As TFE answers go-tfe's integration test: an update replaces ``users`` with those it sends,
and leaving ``relationships.users`` out clears them; other attributes left out stay.

Every change records its ``notification-configuration`` event (``created``, ``updated``,
``deleted``) in its own transaction, naming the attributes it set, never their values (the
URL of a Slack or Teams webhook is a credential, as the token is).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from chalicelib.accounts import authorization
from chalicelib.accounts.users import service as users_service
from chalicelib.core import outbound, secrets
from chalicelib.core.api import bounds
from chalicelib.core.api.bounds import utf8_length
from chalicelib.core.api.errors import Conflict, NotFound, Unprocessable
from chalicelib.core.audit import events
from chalicelib.core.audit.events import Event
from chalicelib.core.auth import Principal
from chalicelib.core.data.ids import iso, new_id, now
from chalicelib.notifications import payload, send, store
from chalicelib.notifications.store import TOKEN_PURPOSE, NotificationConfigurationModel
from chalicelib.notifications.triggers import VERIFICATION, Notice, Trigger

if TYPE_CHECKING:
    from chalicelib.notifications.schemas import ConfigurationBody

# The bounds of a request's strings and arrays (checked by ``schemas``, before anything is
# read), and of the organization.
MAX_PER_ORGANIZATION = 50
MAX_NAME = 255
MAX_TOKEN = 1024
MAX_TRIGGERS = 16
MAX_EMAIL_ADDRESSES = 100
MAX_USERS = 100
# The destinations that are an HTTP POST to ``url``.
HTTP_TYPES = (payload.GENERIC, payload.SLACK, payload.TEAMS)
RESOURCE = "notification-configuration"
ATTRIBUTES = "/data/attributes/"
USERS = "/data/relationships/users"


# ----- who may ---------------------------------------------------------------------------------


def manageable_organization(principal: Principal, organization: str) -> None:
    refusal = f"organization {organization!r} not found, or your token lacks manage-modules"
    authorization.authorize(principal, "manage-modules", organization, refusal)


def manageable(principal: Principal, configuration_id: str) -> NotificationConfigurationModel:
    """The configuration when the caller may manage it; else 404 (the same for a missing
    one and one the caller may not see)."""
    refusal = f"notification configuration {configuration_id} not found"
    configuration = store.get(configuration_id) if utf8_length(configuration_id) <= 255 else None
    if configuration is None:
        raise NotFound(refusal)
    authorization.authorize(principal, "manage-modules", configuration.organization, refusal)
    return configuration


def list_for(principal: Principal, organization: str) -> list[NotificationConfigurationModel]:
    manageable_organization(principal, organization)
    return store.in_organization(organization)


# ----- what a valid configuration is -----------------------------------------------------------


@dataclass(frozen=True)
class Sent:
    """What a create or update request sent: the body's attributes it named, and the
    ``users`` relationship's ids (None: left out)."""

    values: dict[str, Any]
    users: list[str] | None


def sent(body: ConfigurationBody | None, document: Any) -> Sent:
    """The attributes ``body`` named (its API names, snake_case) and ``relationships.users``
    of the request ``document``, each id a string of at most ``bounds.IDENTIFIER`` bytes."""
    values = {name: getattr(body, name) for name in body.model_fields_set} if body else {}
    return Sent(values, _user_ids(document))


def _user_ids(document: Any) -> list[str] | None:
    data = document.get("data") if isinstance(document, dict) else None
    relationships = data.get("relationships") if isinstance(data, dict) else None
    if not isinstance(relationships, dict) or relationships.get("users") is None:
        return None
    relation = relationships["users"]
    items = relation.get("data") if isinstance(relation, dict) else None
    if not isinstance(items, list):
        raise Unprocessable("users must be {data: [...]}", pointer=USERS)
    if len(items) > MAX_USERS:
        raise Unprocessable(f"at most {MAX_USERS} users, not {len(items)}", pointer=USERS)
    ids = []
    for index, item in enumerate(items):
        value = item.get("id") if isinstance(item, dict) else None
        if not isinstance(value, str) or not value or utf8_length(value) > bounds.IDENTIFIER:
            raise Unprocessable("id (a user's) is required", pointer=f"{USERS}/data/{index}/id")
        ids.append(value)
    return list(dict.fromkeys(ids))


def _refuse(detail: str, name: str) -> Unprocessable:
    return Unprocessable(detail, pointer=ATTRIBUTES + name.replace("_", "-"))


def _name(value: Any) -> str:
    if not isinstance(value, str) or not value.strip():
        raise _refuse("name is required", "name")
    return value


def _url(value: Any) -> str:
    if not isinstance(value, str) or not value:
        raise _refuse("url is required", "url")
    try:
        outbound.check(value)
    except outbound.Refused:
        raise _refuse(
            "url must be an http(s) URL without credentials, whose host is not a loopback, "
            "link-local or private address (unless the operator allows it: "
            "REGISTRY_OUTBOUND_ALLOW)",
            "url",
        ) from None
    return value


def _triggers(value: Any) -> list[str]:
    given = list(value or [])
    known = {t.value for t in Trigger}
    for index, trigger in enumerate(given):
        if trigger not in known:
            raise Unprocessable(
                f"{str(trigger)[:100]!r} is not a trigger: one of {', '.join(sorted(known))}",
                pointer=f"{ATTRIBUTES}triggers/{index}",
            )
    return list(dict.fromkeys(given))


def _email_addresses(value: Any) -> list[str]:
    given = list(value or [])
    for index, address in enumerate(given):
        if len(address) > users_service.MAX_EMAIL or not users_service.EMAIL.match(address):
            raise Unprocessable(
                "must be a valid email address", pointer=f"{ATTRIBUTES}email-addresses/{index}"
            )
    return list(dict.fromkeys(given))


def _members(organization: str, user_ids: list[str]) -> list[str]:
    """``user_ids``, each a member of the organization; else 422 naming the first who is not."""
    members = {u.id for u in users_service.members_among(organization, user_ids)}
    for index, user_id in enumerate(user_ids):
        if user_id not in members:
            raise Unprocessable(
                f"user {user_id[:100]!r} is not a member of {organization!r}",
                pointer=f"{USERS}/data/{index}/id",
            )
    return user_ids


def _checked(
    organization: str, destination_type: str, request: Sent, *, creating: bool
) -> dict[str, Any]:
    """The model's values the request sets, every one checked (a refusal is a 422 naming
    the attribute, before anything is written). ``users`` left out clears them (TFE)."""
    given = request.values
    email = destination_type == payload.EMAIL
    out: dict[str, Any] = {}
    if "triggers" in given or creating:
        out["triggers"] = _triggers(given.get("triggers"))
    if "name" in given or creating:
        out["name"] = _name(given.get("name"))
    if "enabled" in given or creating:
        enabled = given.get("enabled")
        if enabled is None and not creating:
            raise _refuse("enabled must be true or false", "enabled")
        out["enabled"] = bool(enabled)
    if email:
        for name in ("url", "token"):
            if given.get(name):
                raise _refuse(f"{name} is not used by email destinations", name)
        if "email_addresses" in given:
            out["email_addresses"] = _email_addresses(given["email_addresses"])
        out["email_user_ids"] = _members(organization, request.users or [])
    else:
        if given.get("email_addresses"):
            raise _refuse("email-addresses are for email destinations", "email_addresses")
        if request.users:
            raise Unprocessable("users are for email destinations", pointer=USERS)
        if "url" in given or creating:
            out["url"] = _url(given.get("url"))
        if "token" in given:  # sealed last: every check has passed
            token = given["token"]
            out["token"] = secrets.seal(token, purpose=TOKEN_PURPOSE) if token else None
    return out


def _destination_type(value: Any) -> str:
    if value not in payload.DESTINATION_TYPES:
        raise _refuse(
            f"destination-type must be one of {', '.join(payload.DESTINATION_TYPES)}",
            "destination_type",
        )
    return str(value)


# ----- audit events ----------------------------------------------------------------------------


def _event(
    principal: Principal, configuration: NotificationConfigurationModel, action: str, **meta: Any
) -> Event:
    return events.event(
        principal,
        organization=configuration.organization,
        resource_type=RESOURCE,
        resource_id=configuration.id,
        action=action,
        meta={
            "name": configuration.name,
            "destination-type": configuration.destination_type,
            **meta,
        },
    )


def _api_names(values: dict[str, Any]) -> list[str]:
    names = {"users" if k == "email_user_ids" else k.replace("_", "-") for k in values}
    return sorted(names - {"updated-at"})


# ----- changes ---------------------------------------------------------------------------------


def create(
    principal: Principal, organization: str, request: Sent
) -> NotificationConfigurationModel:
    manageable_organization(principal, organization)
    destination_type = _destination_type(request.values.get("destination_type"))
    values = _checked(organization, destination_type, request, creating=True)
    moment = now()
    configuration = NotificationConfigurationModel(
        organization,
        new_id("nc"),
        destination_type=destination_type,
        created_at=moment,
        updated_at=moment,
        **values,
    )
    event = _event(principal, configuration, "created", set=_api_names(values))
    try:
        store.insert(configuration, MAX_PER_ORGANIZATION, event)
    except store.TooMany:
        raise Unprocessable(
            f"an organization holds at most {MAX_PER_ORGANIZATION} notification configurations",
            pointer="/data",
        ) from None
    return configuration


def update(
    principal: Principal, configuration_id: str, request: Sent
) -> NotificationConfigurationModel:
    configuration = manageable(principal, configuration_id)
    wanted_type = request.values.get("destination_type")
    if wanted_type is not None and wanted_type != configuration.destination_type:
        raise _refuse("destination-type cannot be changed", "destination_type")
    values = _checked(
        configuration.organization, configuration.destination_type, request, creating=False
    )
    changed = {k: v for k, v in values.items() if _differs(configuration, k, v)}
    if not changed:
        return configuration
    renamed = {}
    if "name" in changed:
        renamed = {"name": changed["name"], "previous-name": configuration.name}
    changed["updated_at"] = now()
    event = _event(principal, configuration, "updated", changed=_api_names(changed), **renamed)
    if not store.update(configuration, changed, event):
        raise Conflict("the notification configuration changed meanwhile; try again")
    return configuration


def _differs(configuration: NotificationConfigurationModel, name: str, value: Any) -> bool:
    if name == "token":
        return True  # a token sent is a token set (the sealed value differs each time)
    current = getattr(configuration, name)
    return bool(current != value) if value or current else False


def delete(principal: Principal, configuration_id: str) -> None:
    configuration = manageable(principal, configuration_id)
    if not store.delete(configuration, _event(principal, configuration, "deleted")):
        raise NotFound(f"notification configuration {configuration_id} not found")


def verify(principal: Principal, configuration_id: str) -> NotificationConfigurationModel:
    """Send a ``verification`` notice now, whether or not the configuration is enabled (the
    attempt is kept in its delivery responses, as every delivery is); TFE answers the
    configuration even when the destination failed."""
    configuration = manageable(principal, configuration_id)
    notice = Notice(
        trigger=VERIFICATION,
        organization=configuration.organization,
        occurred_at=iso(now()),
        message=f"Verification of the notification configuration {configuration.name!r}",
        resource={"type": RESOURCE, "id": configuration.id, "name": configuration.name},
        actor=users_service.shown_username(principal),
    )
    send.deliver(configuration, notice)
    return configuration


def delete_all_for_organization(organization: str) -> None:
    """Every configuration of the organization (deleting the organization)."""
    store.purge_organization(organization)
