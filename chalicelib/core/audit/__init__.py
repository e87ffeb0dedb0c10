"""The audit trail's recording and keeping, below every room that makes changes.

* ``events``: the event, in HCP Terraform's audit-trail shape (go-tfe's ``AuditTrail``), with
  what HCP's shape has no field for (source address, user agent, outcome) beside its fields;
  every field bounded before it is written.
* ``store``: the ``audit-events`` table (one partition per organization, one for the site;
  time-ordered, unique sort keys; a TTL of ``REGISTRY_AUDIT_RETENTION_DAYS``, 400 by default).
  Events are only ever added: no update, no delete.
* ``trail``: what the services call: ``record_in(tx, event)`` adds an event to the change's
  own ``TransactWrite`` (the change and its event succeed or fail together), ``record(event)``
  beside a change that is one write; and ``read_page`` for the API (``chalicelib.audit``).
* ``check``: a request or worker message that changed state and wrote no event is reported
  (and fails the test that made it).
"""
