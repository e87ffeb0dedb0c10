"""Notifications: an organization's destinations for registry events, and their delivery.

TFE's notification configurations (``destination-type`` ``generic``, ``slack``,
``microsoft-teams``, ``email``), on the organization instead of a workspace
(``/api/v2/organizations/:org/notification-configurations``). What happened comes from the
audit trail: every change is recorded there, in its own transaction, so the
``audit-events`` stream says what to tell (``triggers.of_event``), never a change that
failed, never one lost. A notice is fanned out to the organization's enabled destinations
that asked for its trigger, one queued delivery each, retried with backoff; consumers of a
deprecated version (the members of a consuming team, a consuming user) are mailed.

- ``store``: the configurations (and their last deliveries).
- ``triggers``: the trigger vocabulary, ``Notice`` (what one notification says), and the
  mapping from audit events.
"""
