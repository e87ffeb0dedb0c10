"""The web room's in-process browser (tests/support/web_browser.py) over the ``api`` fixture's
Chalice test client: a cookie jar, forms, the CSRF token. Chromium is tests/e2e/conftest.py's."""

from __future__ import annotations

import pytest

from tests.conftest import Api
from tests.support.web_browser import Browser


@pytest.fixture
def browser(api: Api) -> Browser:
    return Browser(api.client)
