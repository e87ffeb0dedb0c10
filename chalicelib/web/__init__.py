"""The registry's server-rendered web UI: pages, sign-in sessions, templates and assets.

It reads through the domains' services (as the API does), never their tables; its own
table holds only the browser sessions (``store.py``).
"""
