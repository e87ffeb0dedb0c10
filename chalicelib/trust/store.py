"""Storage of the organizations' publishing policies: one item per organization in the
``registry-policies`` table (no item: the defaults, ``trust.policy.Policy()``).

Read by ingest (does a new version wait for its scan?), by the scan worker (is it
quarantined?) and by the policy's routes; written only by the policy's ``PATCH``, whole, under
an optimistic version (a concurrent change is a 409, never a lost write), in one transaction
with its audit event (``chalicelib.audit``).
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING

from pynamodb.attributes import (
    BooleanAttribute,
    UnicodeAttribute,
    UnicodeSetAttribute,
    UTCDateTimeAttribute,
    VersionAttribute,
)
from pynamodb.exceptions import TransactWriteError
from pynamodb.transactions import TransactWrite

from chalicelib.core.api.errors import Conflict
from chalicelib.core.audit import trail
from chalicelib.core.data import db

if TYPE_CHECKING:
    from chalicelib.core.audit.events import Event


@db.register
class PolicyModel(db.Model):
    Meta = db.table("registry-policies")

    organization = UnicodeAttribute(hash_key=True)
    block_severity = UnicodeAttribute()
    # A string set (DynamoDB stores no empty set: none is None).
    ignored_rules = UnicodeSetAttribute(null=True)
    require_readme = BooleanAttribute(default=False)
    # Who changed it last (``<kind>:<id>`` of the principal, e.g. ``user:user-...``), and when.
    updated_by = UnicodeAttribute(null=True)
    updated_at = UTCDateTimeAttribute(null=True)
    version = VersionAttribute(null=True)


def find(organization: str, *, consistent: bool = False) -> PolicyModel | None:
    """The organization's saved policy, None when it never saved one (one GetItem)."""
    try:
        return PolicyModel.get(organization, consistent_read=consistent)
    except PolicyModel.DoesNotExist:
        return None


def save(
    item: PolicyModel | None,
    organization: str,
    *,
    block_severity: str,
    ignored_rules: list[str],
    require_readme: bool,
    updated_by: str,
    moment: datetime,
    event: Event,
) -> PolicyModel:
    """Write the whole policy: over ``item`` (read before, unchanged since: else 409), or a
    new item when ``item`` is None (409 when one was saved meanwhile); with its audit
    ``event``, in one transaction (neither is written without the other)."""
    saved = item if item is not None else PolicyModel(organization)
    saved.block_severity = block_severity
    saved.ignored_rules = set(ignored_rules) or None
    saved.require_readme = require_readme
    saved.updated_by = updated_by
    saved.updated_at = moment
    try:
        with TransactWrite(connection=db.connection()) as tx:
            tx.save(saved)  # under its version's condition
            trail.record_in(tx, event)
    except TransactWriteError as exc:
        if db.cancellation_codes(exc)[:1] == [db.TRANSACTION_CONDITION_FAILED]:
            raise Conflict("the policy was changed concurrently: read it and try again") from None
        raise
    return saved


def delete(organization: str) -> None:
    """Forget the organization's policy (its deletion)."""
    PolicyModel(organization).delete(add_version_condition=False)
