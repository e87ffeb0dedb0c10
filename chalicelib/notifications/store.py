"""The ``notification-configurations`` table: an organization's notification destinations.

One item per configuration, in the organization's partition (a list is one Query of it; the
fan-out of a notice reads the same partition), found by id through the ``by-id`` index.
The HMAC ``token`` is sealed (``core.secrets``, purpose ``TOKEN_PURPOSE``) and never shown
back; ``delivery_responses`` keeps the last ``MAX_DELIVERIES`` deliveries, newest first,
as TFE shows them (``url``, ``code``, ``body`` (cut), ``headers``, ``sent-at``,
``successful``, and ``error`` when nothing answered).
"""

from __future__ import annotations

from pynamodb.attributes import (
    BooleanAttribute,
    JSONAttribute,
    ListAttribute,
    UnicodeAttribute,
    UTCDateTimeAttribute,
)
from pynamodb.indexes import AllProjection, GlobalSecondaryIndex

from chalicelib.core.data import db

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


def configurations_of(organization: str) -> list[NotificationConfigurationModel]:
    """Every configuration of the organization: one Query of its partition (at most 50 of
    them, far below a page of 1 MB)."""
    return list(NotificationConfigurationModel.query(organization))


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
