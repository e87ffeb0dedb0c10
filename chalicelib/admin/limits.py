"""Bounds of the site-admin requests that both the request models (``admin.schemas``) and the
services (``admin.people``) read: here, so a model does not load a service (and what it
imports) with it."""

# The module consumers one request may set (each is read to check it exists).
MAX_MODULE_CONSUMERS = 100
