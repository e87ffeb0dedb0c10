"""What the browser tests share: the check every page they visit passes (axe-core; a 390 px
phone), where their screenshots go, and how long a loaded machine's stack and Chromium may
take (Chromium itself is tests/e2e/conftest.py's ``browser``)."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from axe_playwright_python.sync_playwright import Axe
from playwright.sync_api import Page

# The docs' screenshots when asked (``make screenshots``); otherwise the tests still take
# them, into a scratch folder, so that a test run leaves the checkout as it found it.
DOCS_SCREENSHOTS = Path(__file__).resolve().parents[2] / "docs" / "screenshots"
SCREENSHOTS = (
    DOCS_SCREENSHOTS
    if os.environ.get("REGISTRY_SCREENSHOTS")
    else Path(tempfile.gettempdir()) / "registry-test-screenshots"
)
SCREENSHOTS.mkdir(parents=True, exist_ok=True)


BLOCKING = ("serious", "critical")


def check_accessibility(page: Page) -> None:
    """axe-core (bundled with axe-playwright-python: no network) finds nothing serious."""
    results = Axe().run(page)
    blocking = [
        f"{v['id']} ({v['impact']}): {v['help']} at {[n['target'] for n in v['nodes']][:3]}"
        for v in results.response["violations"]
        if v.get("impact") in BLOCKING
    ]
    assert blocking == [], f"{page.url}: " + "\n".join(blocking)


def check_page(page: Page) -> None:
    """axe-core finds nothing serious, and the page fits a 390 px phone (no sideways
    scrolling)."""
    check_accessibility(page)
    desktop = page.viewport_size
    page.set_viewport_size(PHONE)
    assert page.evaluate("document.documentElement.scrollWidth") <= PHONE["width"], page.url
    assert desktop is not None
    page.set_viewport_size(desktop)


TIMEOUT_MS = 60_000  # a loaded machine's stack, chromium and terraform


PHONE = {"width": 390, "height": 844}


def screenshots(page: Page, name: str, anchor: str | None = None) -> None:
    """The page at desktop width (whole) and on a phone (one screen, from ``anchor``)."""
    page.screenshot(path=str(SCREENSHOTS / f"{name}.png"), full_page=True)
    desktop = page.viewport_size
    assert desktop is not None
    page.set_viewport_size(PHONE)
    if anchor:
        page.evaluate(f"document.querySelector({anchor!r}).scrollIntoView()")
    page.screenshot(path=str(SCREENSHOTS / f"{name}-phone.png"), full_page=False)
    page.set_viewport_size(desktop)
