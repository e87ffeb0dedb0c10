"""Deprecation deadlines: the scheduled sweep that revokes a deprecated version on its
``revoke-at``, and records the ``deadline-approaching`` notices before it.

A deprecation may carry ``revoke-at`` (``versions.change_version_lifecycle``); the same write
puts the version in the sparse ``by-deadline`` index with ``due_at``, the next moment the
sweep must look at it (``deadline_due``: 7 days before, 1 day before, then
``revoke-at`` itself). The sweep (``chalicelib.entry.deadlines.sweep``, every minute;
locally a thread of the stack) reads what is due (``store.due_versions``: every page of the
sparse index), and for each version (``sweep.settle``):

- at or past ``revoke-at``: revokes it as the registry itself (System), with the owner's
  deprecation reason as the revocation message (or a sentence saying it was revoked on its
  deadline) and the deprecation's link, recorded ``revoked`` with meta ``by: deadline``;
  the same write takes it out of the index.
- else: records ``deadline-approaching`` (``days-left`` 7 or 1, the last notice passed; one
  the sweep missed while it was down is not given late) and the next ``due_at``, in one
  transaction.

Every write is conditional on the version as read (a concurrent PATCH wins: the sweep reads
it again and decides again), so each stage happens once even when two sweeps run at once.
The writes are ``modules.writes``' (one home for the version's transactions); the rules of
when a deadline is due are ``modules.statuses``' (``deadline_due``), which the PATCH's
write keeps too. ``backfill``: versions deprecated before the ``by-deprecation`` index.
"""
