"""What a notification is about: the triggers a configuration subscribes to, and ``Notice``,
one notification as every destination format renders it (``payload``).

A notice comes from an audit event (``of_event``: the ``audit-events`` stream's new images),
so every change that is notified was made and recorded; the deadline sweep's notices too
(``registry-module-version`` ``deadline-approaching`` events).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any


class Trigger(StrEnum):
    """The registry's triggers (TFE's workspace ones are ``run:created`` and so on)."""

    MODULE_PUBLISHED = "registry-module-version:published"  # served: ok (after its scan too)
    MODULE_REFUSED = "registry-module-version:refused"  # ingest refused it, or policy held it
    MODULE_DEPRECATED = "registry-module-version:deprecated"
    MODULE_REVOKED = "registry-module-version:revoked"  # by hand or by its deadline
    MODULE_DEADLINE = "registry-module-version:deadline-approaching"  # 7 days, 1 day before
    PROVIDER_PUBLISHED = "registry-provider-version:published"


# The trigger of a verification (``/actions/verify``): not one a configuration subscribes to.
VERIFICATION = "verification"


@dataclass(frozen=True)
class Notice:
    """One notification: what happened, to what, by whom, when.

    ``resource``: ``type`` and ``id`` (the audit event's), and what names it to a person:
    ``address`` (``org/namespace/name/provider`` or ``org/namespace/name`` for a provider),
    ``version``. ``details``: what the trigger carries (``reason``, ``link``, ``revoke-at``,
    ``days-left``, ``latest-version``, ``status``...). ``url``: the resource's page on this
    registry (``REGISTRY_PUBLIC_URL``), when it has one. ``actor``: a username, or None when
    the registry itself acted (a worker, the deadline sweep)."""

    trigger: str  # a Trigger, or VERIFICATION
    organization: str
    occurred_at: str  # ISO 8601 UTC
    message: str  # one sentence a person reads
    resource: dict[str, str]
    actor: str | None = None
    url: str | None = None
    details: dict[str, Any] = field(default_factory=dict)
