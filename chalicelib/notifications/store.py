"""The ``notification-configurations`` table: an organization's notification destinations.

One item per configuration, in the organization's partition (a list is one Query of it; the
fan-out of a notice reads the same partition), found by id through the ``by-id`` index.
The HMAC ``token`` is sealed (``core.secrets``, purpose ``TOKEN_PURPOSE``) and never shown
back; ``delivery_responses`` keeps the last ``MAX_DELIVERIES`` deliveries, newest first,
as TFE shows them (``url``, ``code``, ``body`` (cut), ``headers``, ``sent-at``,
``successful``, and ``error`` when nothing answered).
"""

from __future__ import annotations

import contextlib
from typing import Any

from pynamodb.attributes import (
    BooleanAttribute,
    JSONAttribute,
    ListAttribute,
    UnicodeAttribute,
    UTCDateTimeAttribute,
)
from pynamodb.exceptions import DeleteError, TransactWriteError
from pynamodb.expressions.update import Action
from pynamodb.indexes import AllProjection, GlobalSecondaryIndex
from pynamodb.transactions import TransactWrite

from chalicelib.core.audit import trail
from chalicelib.core.audit.events import Event
from chalicelib.core.data import db, lists

TOKEN_PURPOSE = "notification-configuration/token"
MAX_DELIVERIES = 10


class ConfigurationById(GlobalSecondaryIndex):
    class Meta:
        index_name = "by-id"
        projection = AllProjection()

    id = UnicodeAttribute(hash_key=True)


@db.register
class NotificationConfigurationModel(db.Model):
    Meta = db.table("notification-configurations")

    organization = UnicodeAttribute(hash_key=True)
    id = UnicodeAttribute(range_key=True)  # ``nc-<random>``
    name = UnicodeAttribute()
    destination_type = UnicodeAttribute()  # generic | slack | microsoft-teams | email
    url = UnicodeAttribute(null=True)  # None for email destinations
    token = JSONAttribute(null=True)  # core.secrets.seal(token, purpose=TOKEN_PURPOSE)
    enabled = BooleanAttribute(default=False)
    triggers = ListAttribute(of=UnicodeAttribute, default=list)  # triggers.Trigger values
    email_addresses = ListAttribute(of=UnicodeAttribute, default=list)
    email_user_ids = ListAttribute(of=UnicodeAttribute, default=list)  # the ``users`` relation
    delivery_responses = JSONAttribute(default=list)  # newest first, at most MAX_DELIVERIES
    created_at = UTCDateTimeAttribute()
    updated_at = UTCDateTimeAttribute()

    by_id = ConfigurationById()


# ----- reading and writing (a person's change carries its audit event, added last) -------------


# The kept count of an organization's configurations (``lists.CountModel``): at most
# ``service.MAX_PER_ORGANIZATION``, enforced by the create transaction's condition on it.
def count_scope(organization: str) -> str:
    return f"notification-configurations#{organization}"


class TooMany(Exception):
    """The organization holds its most configurations already."""


def get(configuration_id: str) -> NotificationConfigurationModel | None:
    """The configuration of that id (the ``by-id`` index, then its item, read consistently)."""
    found = next(iter(NotificationConfigurationModel.by_id.query(configuration_id, limit=1)), None)
    if found is None:
        return None
    try:
        return NotificationConfigurationModel.get(
            found.organization, configuration_id, consistent_read=True
        )
    except NotificationConfigurationModel.DoesNotExist:
        return None


def in_organization(
    organization: str, *, consistent: bool = True
) -> list[NotificationConfigurationModel]:
    """Every configuration of the organization, oldest id first (one Query: at most 50, far
    below a page of 1 MB); the fan-out reads it eventually consistent, at half the cost."""
    return list(NotificationConfigurationModel.query(organization, consistent_read=consistent))


def insert(configuration: NotificationConfigurationModel, most: int, event: Event) -> None:
    """Put the configuration and count it, with its event, in one transaction; ``TooMany``
    when the organization holds ``most`` already (nothing written)."""
    counter = lists.CountModel(count_scope(configuration.organization), lists.ALL)
    try:
        with TransactWrite(connection=db.connection()) as tx:
            tx.update(
                counter,
                actions=[lists.CountModel.count.add(1)],
                condition=lists.CountModel.count.does_not_exist() | (lists.CountModel.count < most),
            )
            tx.save(configuration, condition=NotificationConfigurationModel.id.does_not_exist())
            trail.record_in(tx, event)
    except TransactWriteError as exc:
        # The put's condition holds (a new random id): a failed condition is the count's.
        if db.TRANSACTION_CONDITION_FAILED in db.cancellation_codes(exc):
            raise TooMany(configuration.organization) from None
        raise


def update(
    configuration: NotificationConfigurationModel, values: dict[str, Any], event: Event
) -> bool:
    """Set ``values`` (attribute name -> value; None removes it) on the configuration with
    the change's event, in one transaction, on the condition that it was not changed since
    it was read (its ``updated_at``). False, nothing written, when it is gone or changed."""
    actions: list[Action] = []
    for name, value in values.items():
        attribute = getattr(NotificationConfigurationModel, name)
        actions.append(attribute.remove() if value is None else attribute.set(value))
    condition = NotificationConfigurationModel.id.exists() & (
        NotificationConfigurationModel.updated_at == configuration.updated_at
    )
    try:
        with TransactWrite(connection=db.connection()) as tx:
            tx.update(configuration, actions=actions, condition=condition)
            trail.record_in(tx, event)
    except TransactWriteError as exc:
        if db.cancellation_codes(exc)[:1] == [db.TRANSACTION_CONDITION_FAILED]:
            return False
        raise
    for name, value in values.items():
        setattr(configuration, name, value)
    return True


def delete(configuration: NotificationConfigurationModel, event: Event) -> bool:
    """Delete the configuration and count one less, with its event; False when it is gone."""
    counter = lists.CountModel(count_scope(configuration.organization), lists.ALL)
    try:
        with TransactWrite(connection=db.connection()) as tx:
            tx.delete(configuration, condition=NotificationConfigurationModel.id.exists())
            tx.update(counter, actions=[lists.CountModel.count.add(-1)])
            trail.record_in(tx, event)
    except TransactWriteError as exc:  # sent as: delete, count (deletes go first)
        if db.cancellation_codes(exc)[:1] == [db.TRANSACTION_CONDITION_FAILED]:
            return False
        raise
    return True


def purge_organization(organization: str) -> None:
    """Every configuration of the organization and its count (deleting the organization,
    whose deletion is the recorded change)."""
    for configuration in in_organization(organization):
        with contextlib.suppress(DeleteError):
            configuration.delete()
    with contextlib.suppress(DeleteError):
        lists.CountModel(count_scope(organization), lists.ALL).delete()


def find_configuration(
    organization: str, configuration_id: str
) -> NotificationConfigurationModel | None:
    """The organization's configuration of that id (one consistent GetItem: a queued delivery
    sees a deletion or a disabling made just before it), None when it is gone."""
    try:
        return NotificationConfigurationModel.get(
            organization, configuration_id, consistent_read=True
        )
    except NotificationConfigurationModel.DoesNotExist:
        return None
