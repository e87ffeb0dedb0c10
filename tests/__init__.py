"""The tests mirror chalicelib's rooms: ``tests/<room>/`` tests ``chalicelib/<room>/`` (and
``tests/infrastructure/`` the ``infrastructure`` package), with what other test modules borrow
in its ``helpers.py``. Whole-app walks (the layout, every route's callers, bounds, no 5xx)
are at this level; ``tests/e2e/`` holds the cross-room scenarios on the real local stack;
``tests/support/`` the local stand-ins for the outside world (SMTP, SAML IdP, git and VCS
APIs, a public registry) and the in-process browser. Fixtures: ``conftest.py`` here (moto,
the API client), ``web/conftest.py`` (the in-process browser), ``e2e/conftest.py`` (the
stack, Chromium)."""
