"""The documentation site at 1440 px in a real Chromium: no code block or table runs past the page.

Reads the site ``make docs`` built into ``site/`` (from ``file://``: the site is built for it);
skipped when it is not built. Deselected from the normal run (``make test-e2e``); with
``TURNSTATE_SCREENSHOTS=<folder>`` it saves the pages it reads (``make screenshot``).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from tests.test_admin_e2e import browser, shoot

__all__ = ["browser"]  # the fixture, shared with the admin's browser tests

pytestmark = pytest.mark.e2e

SITE = Path(__file__).resolve().parent.parent / "site"
PAGES = {  # page (#where the screenshot looks) -> its screenshot
    "index.html": "site-index-1440.png",
    "getting-started.html#plain-pauses": "site-getting-started-1440.png",
    "guarantees.html": None,
    "lifecycle.html": None,
    "langgraph.html": None,
    "reference/pauses.html": "site-reference-pauses-1440.png",
}
OVERFLOWING = """
return [...document.querySelectorAll('.md-content pre > code, .md-content .md-typeset__scrollwrap')]
    .filter(element => element.scrollWidth > element.clientWidth + 1)
    .map(element => element.textContent.slice(0, 80));
"""


@pytest.mark.skipif(not (SITE / "index.html").is_file(), reason="the site is not built (make docs)")
@pytest.mark.parametrize("page", sorted(PAGES))
def test_nothing_runs_past_the_page_at_1440_px(browser: Any, page: str) -> None:
    browser.set_window_size(1440, 900)
    path, _, fragment = page.partition("#")
    browser.get((SITE / path).as_uri() + (f"#{fragment}" if fragment else ""))
    assert browser.execute_script("return document.querySelectorAll('.md-content').length") == 1
    assert browser.execute_script(OVERFLOWING) == []
    assert browser.execute_script("return document.documentElement.scrollWidth") <= 1440
    folder, name = os.environ.get("TURNSTATE_SCREENSHOTS"), PAGES[page]
    if folder and name:
        shoot(browser, folder, name, 1440)
