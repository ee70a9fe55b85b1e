"""The documentation site at 1440 px in a real Chromium: no code block or table runs past the page.

Reads the site ``make docs`` built into ``site/`` (from ``file://``: the site is built for it).
``make test-e2e`` builds it first; run alone without a site the browser tests are skipped, except
in CI (``CI=true``), where a missing site fails them: a skip there would hide the pages for good.
Deselected from the normal run (``make test-e2e``); with ``TURNSTATE_SCREENSHOTS=<folder>`` it
saves the pages it reads (``make screenshot``).
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

import pytest

from tests.test_admin_e2e import browser, shoot
from tests.test_matrix import CI_RUN, RULES

__all__ = ["browser"]  # the fixture, shared with the admin's browser tests

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


def built_site(site: Path = SITE) -> Path:
    """The built site's folder. Without one: a skip on a contributor's machine, a failure in CI."""
    if (site / "index.html").is_file():
        return site
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(f"CI=true and no site in {site}: make test-e2e builds it (make docs) first")
    pytest.skip(f"the site is not built in {site} (make docs)")


@pytest.fixture
def site() -> Path:
    """The built site, looked for before a browser starts."""
    return built_site()


@pytest.mark.e2e
@pytest.mark.parametrize("page", sorted(PAGES))
def test_nothing_runs_past_the_page_at_1440_px(site: Path, browser: Any, page: str) -> None:
    browser.set_window_size(1440, 900)
    path, _, fragment = page.partition("#")
    browser.get((site / path).as_uri() + (f"#{fragment}" if fragment else ""))
    assert browser.execute_script("return document.querySelectorAll('.md-content').length") == 1
    assert browser.execute_script(OVERFLOWING) == []
    assert browser.execute_script("return document.documentElement.scrollWidth") <= 1440
    folder, name = os.environ.get("TURNSTATE_SCREENSHOTS"), PAGES[page]
    if folder and name:
        shoot(browser, folder, name, 1440)


def test_in_ci_a_missing_site_fails_the_browser_tests(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match="CI=true"):
        built_site(tmp_path)


def test_outside_ci_a_missing_site_skips_them(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CI", raising=False)
    with pytest.raises(pytest.skip.Exception, match="not built"):
        built_site(tmp_path)
    (tmp_path / "index.html").write_text("<html></html>")
    assert built_site(tmp_path) == tmp_path


def test_the_browser_leg_builds_the_site_before_reading_it_and_ci_runs_it_as_ci() -> None:
    """``make test-e2e`` makes ``docs`` first; CI runs it with ``CI=true``, so nothing is skipped."""
    prerequisites, _ = RULES["test-e2e"]
    assert "docs" in prerequisites, prerequisites
    lanes = re.findall(r"^lane \w+ (.+?) &$", CI_RUN, re.MULTILINE)
    assert any("test-e2e" in lane.split() for lane in lanes), lanes
    assert re.search(r"^export CI=true$", CI_RUN, re.MULTILINE), "CI=true is not exported by .ci/run"
