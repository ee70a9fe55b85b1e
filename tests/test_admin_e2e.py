"""The unresumable page as an operator sees it: a real Chromium, logged in through the admin's form.

Run by ``make test-e2e`` (which installs Debian's ``chromium`` and ``chromium-driver``);
deselected from the normal run. With ``TURNSTATE_SCREENSHOT=<path>`` the same run saves the
page as a PNG (``make screenshot``).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.pause_helpers import answered, legacy_request, lost, mint
from turnstate_app.models import UNRESUMABLE_NO_LEDGER

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]

CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"
FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--window-size=1280,720",
)


@pytest.fixture
def browser(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """Debian's Chromium through its own driver; Selenium Manager stays offline."""
    monkeypatch.setenv("SE_OFFLINE", "true")
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in FLAGS:
        options.add_argument(flag)
    options.add_argument(f"--user-data-dir={tmp_path / 'profile'}")
    driver = webdriver.Chrome(service=Service(executable_path=CHROMEDRIVER), options=options)
    driver.implicitly_wait(5)
    yield driver
    driver.quit()


def test_an_operator_sees_both_kinds_of_unresumable_pauses(
    live_server: Any, browser: Any, admin_user: Any
) -> None:
    from selenium.webdriver.common.by import By

    mint(1)  # resumable: never listed
    answered(2)  # answered: never listed
    stranded = lost(3, thread_id="support-chat-3")
    failed = mint(4, thread_id="support-chat-4", failing=True)
    legacy_request(5)

    browser.get(f"{live_server.url}/admin/login/?next=/admin/turnstate_app/unresumablepause/")
    browser.find_element(By.NAME, "username").send_keys(admin_user.username)
    browser.find_element(By.NAME, "password").send_keys("password")
    browser.find_element(By.CSS_SELECTOR, "input[type=submit]").click()

    assert browser.find_element(By.TAG_NAME, "h1").text == "Select unresumable pause to view"
    rows = [row.text for row in browser.find_elements(By.CSS_SELECTOR, "#result_list tbody tr")]
    assert len(rows) == 3
    assert any("support-chat-3" in row and stranded.claims.jti in row for row in rows)
    assert any("support-chat-4" in row and failed.claims.jti in row for row in rows)
    no_ledger = UNRESUMABLE_NO_LEDGER.split(": ", 1)[0]
    assert any("legacy-5" in row and "interrupt_payload:int-5" in row and no_ledger in row for row in rows)
    assert not any("thread-1" in row or "thread-2" in row for row in rows)

    if target := os.environ.get("TURNSTATE_SCREENSHOT"):
        browser.find_element(By.ID, "toggle-nav-sidebar").click()  # the list, not the menu
        Path(target).parent.mkdir(parents=True, exist_ok=True)
        assert browser.save_screenshot(target)
