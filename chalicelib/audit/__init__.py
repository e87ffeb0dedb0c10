"""The audit trail's API: who changed what, when, from where, and with what outcome.

What records and keeps the events is in ``chalicelib.core.audit`` (every room records its
changes there, accounts included, so it sits in core): ``events`` (HCP Terraform's shape),
``store`` (the ``audit-events`` table: events are only ever added), ``trail`` (record with a
change, read a page) and ``check`` (a request that changes state and records no event is
reported). Here: the routes that read them (``routes``) and the export of each new event to
S3 and CloudWatch Logs (``export``, fed by the table's stream).
"""
