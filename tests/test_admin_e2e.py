"""The admin as an operator sees it: a real Chromium, logged in through the admin's form. The
unresumable page, the pauses list (what holds now beside what was recorded at the pause), a
pause and a row, a run state's JSON and a LangGraph checkpoint's state values, each readable at
1440 px.

Run by ``make test-e2e`` (which installs Debian's ``chromium`` and ``chromium-driver``);
deselected from the normal run. With ``TURNSTATE_SCREENSHOTS=<folder>`` the same run saves the
pages as PNGs at 1440 px (most also at 1024 px; ``make screenshot``: ``docs/img/``).
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

    if folder := os.environ.get("TURNSTATE_SCREENSHOTS"):
        for width in WIDTHS:  # with the navigation sidebar open, as an operator first sees it
            shoot(browser, folder, f"admin-unresumable-{width}.png", width)
        browser.find_element(By.ID, "toggle-nav-sidebar").click()  # the list, not the menu
        shoot(browser, folder, "admin-unresumable.png", 1280)


WIDTHS = (1440, 1024)


def shoot(browser: Any, folder: str, name: str, width: int, height: int = 900) -> None:
    browser.set_window_size(width, height)
    Path(folder).mkdir(parents=True, exist_ok=True)
    assert browser.save_screenshot(str(Path(folder) / name))


def log_in(browser: Any, live_server: Any, admin_user: Any, next_url: str) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.expected_conditions import staleness_of
    from selenium.webdriver.support.wait import WebDriverWait

    browser.get(f"{live_server.url}/admin/login/?next={next_url}")
    browser.find_element(By.NAME, "username").send_keys(admin_user.username)
    browser.find_element(By.NAME, "password").send_keys("password")
    submit = browser.find_element(By.CSS_SELECTOR, "input[type=submit]")
    submit.click()
    # The login page's elements go when the page asked for arrives: read nothing of it before.
    WebDriverWait(browser, 30).until(staleness_of(submit))


LINE_HEIGHT = "return parseFloat(getComputedStyle(arguments[0]).lineHeight)"


@pytest.mark.parametrize("width", WIDTHS)
def test_the_reason_stays_readable_with_the_sidebar_open(
    live_server: Any, browser: Any, admin_user: Any, width: int
) -> None:
    from selenium.webdriver.common.by import By

    for n in range(3):
        lost(n, thread_id=f"support-chat-{n}")
        legacy_request(10 + n)
    browser.set_window_size(width, 900)
    log_in(browser, live_server, admin_user, "/admin/turnstate_app/unresumablepause/")

    assert browser.find_element(By.ID, "nav-sidebar").is_displayed()
    for cell in browser.find_elements(By.CSS_SELECTOR, "#result_list td.field-reason"):
        line = float(browser.execute_script(LINE_HEIGHT, cell))
        assert cell.size["height"] < 2.5 * line + 12, (cell.text, cell.size)  # at most two lines


def test_an_operator_reads_a_pause_its_question_answer_and_rows(
    live_server: Any, browser: Any, admin_user: Any
) -> None:
    from selenium.webdriver.common.by import By

    from turnstate_app.models import CheckpointMetadata, Pause

    minted = answered(
        7,
        thread_id="support-chat-7",
        request={"question": "Which week suits the team?", "options": ["May 4", "May 11"]},
    )
    pause = Pause.objects.get(jti=minted.claims.jti)
    log_in(browser, live_server, admin_user, f"/admin/turnstate_app/pause/{pause.pk}/change/")

    page = browser.find_element(By.ID, "content").text
    assert '"question": "Which week suits the team?"' in page
    assert '"a": 7' in page  # the answer
    links = [a.text for a in browser.find_elements(By.CSS_SELECTOR, ".field-store_rows a")]
    assert links == [
        "ask_user_request:call-7",
        f"turn_state:{minted.claims.jti}",
        f"answer:{minted.claims.jti}",
    ]
    folder = os.environ.get("TURNSTATE_SCREENSHOTS")
    for width in WIDTHS if folder else ():
        shoot(browser, str(folder), f"admin-pause-{width}.png", width, 1100)

    browser.find_element(By.LINK_TEXT, f"turn_state:{minted.claims.jti}").click()
    row = CheckpointMetadata.objects.get(key=f"turn_state:{minted.claims.jti}")
    assert browser.current_url.endswith(f"/checkpointmetadata/{row.pk}/change/")
    assert minted.claims.jti in browser.find_element(By.CSS_SELECTOR, ".field-pause").text
    value = browser.find_element(By.CSS_SELECTOR, "pre.turnstate-value").text
    assert value.startswith("{\n") and '\n  "' in value  # pretty-printed, not one line
    for width in WIDTHS if folder else ():
        shoot(browser, str(folder), f"admin-row-{width}.png", width, 1100)


FITS = """
const results = document.querySelector('#changelist .results');
return [results.scrollWidth, results.clientWidth, document.documentElement.scrollWidth, window.innerWidth];
"""


@pytest.mark.parametrize(
    ("page", "shot"),
    [("unresumablepause", "admin-unresumable"), ("pause", "admin-pauses")],
)
def test_the_lists_fit_1440_px_with_the_sidebar_open(
    live_server: Any, browser: Any, admin_user: Any, page: str, shot: str
) -> None:
    """Every column in view, no sideways scrolling; ids cut short carry the whole id on hover."""
    from selenium.webdriver.common.by import By

    long_thread = "customer-support-conversation-" + "x" * 60
    for n in range(3):
        lost(n, thread_id=f"{long_thread}-{n}")
        legacy_request(10 + n)
        answered(20 + n, thread_id=f"{long_thread}-answered-{n}")
        mint(30 + n, thread_id=f"{long_thread}-waiting-{n}")
    browser.set_window_size(1440, 900)
    log_in(browser, live_server, admin_user, f"/admin/turnstate_app/{page}/")

    assert browser.find_element(By.ID, "nav-sidebar").is_displayed()
    inner, shown, document_width, window_width = browser.execute_script(FITS)
    assert inner <= shown and document_width <= window_width, (inner, shown, document_width, window_width)
    ids = browser.find_elements(By.CSS_SELECTOR, "#result_list span.turnstate-id")
    assert ids and all(span.get_attribute("title") for span in ids)
    assert any(span.get_attribute("title").startswith(long_thread) for span in ids)
    headers = browser.find_elements(By.CSS_SELECTOR, "#result_list thead th")
    for header in headers:
        assert header.rect["x"] + header.rect["width"] <= window_width, header.text
    if page == "pause":  # what holds now, and what was recorded at the pause, each named
        assert {"resumable now", "state recorded at pause"} <= {header.text.lower() for header in headers}
        now = [
            cell.get_attribute("alt")
            for cell in browser.find_elements(By.CSS_SELECTOR, "td.field-resumable_now img")
        ]
        assert sorted(now) == ["False"] * 6 + ["True"] * 3, now
    if folder := os.environ.get("TURNSTATE_SCREENSHOTS"):
        for width in WIDTHS:
            shoot(browser, folder, f"{shot}-{width}.png", width)


FONT_SIZE = "return parseFloat(getComputedStyle(arguments[0]).fontSize)"
PRE_BOX = """
const pre = arguments[0];
const box = pre.getBoundingClientRect();
const fontSize = parseFloat(getComputedStyle(pre).fontSize);
return [box.right, window.innerWidth, document.documentElement.scrollWidth, pre.scrollWidth,
        pre.clientWidth, pre.scrollHeight, pre.clientHeight, fontSize];
"""


def assert_fits(browser: Any, pre: Any) -> None:
    """The block stays inside the 1440 px window, its lines wrap (nothing scrolls sideways) and its
    height is bounded: a long value scrolls inside it."""
    right, window_width, document_width, inner, shown, _tall, high, font = browser.execute_script(
        PRE_BOX, pre
    )
    assert right <= window_width and document_width <= window_width, (right, document_width, window_width)
    assert inner <= shown, (inner, shown)
    assert high <= 40 * font, (high, font)  # 32em and its padding


def test_an_operator_reads_a_run_state_indented_and_wrapped_at_1440_px(
    live_server: Any, browser: Any, admin_user: Any
) -> None:
    from selenium.webdriver.common.by import By

    from tests.contrib.openai_agents.agents import first_run, payments_agent
    from turnstate_app.contrib.openai_agents import DjangoSession, pause_approvals
    from turnstate_app.contrib.openai_agents.models import StoredRunState

    agent = payments_agent()
    session = DjangoSession("support-chat-run")
    pause_approvals(
        first_run(agent, session=session), agent=agent, run_id="run-1440", session_id="support-chat-run"
    )
    state = StoredRunState.objects.get(run_id="run-1440")
    browser.set_window_size(1440, 900)
    log_in(
        browser, live_server, admin_user, f"/admin/turnstate_openai_agents/storedrunstate/{state.pk}/change/"
    )

    pre = browser.find_element(By.CSS_SELECTOR, ".field-run_state pre.turnstate-value")
    assert pre.text.startswith("{\n") and '\n  "$schemaVersion": ' in pre.text  # indented, not one line
    assert_fits(browser, pre)
    scrolls = browser.execute_script("return arguments[0].scrollHeight > arguments[0].clientHeight", pre)
    assert scrolls  # a whole run state is taller than the block: it scrolls inside, the page stays short
    if folder := os.environ.get("TURNSTATE_SCREENSHOTS"):
        shoot(browser, folder, "admin-json-1440.png", 1440, 1300)


def test_an_operator_reads_a_langgraph_checkpoint_and_opens_its_pauses(
    live_server: Any, browser: Any, admin_user: Any
) -> None:
    from selenium.webdriver.common.by import By

    from tests.contrib.langgraph.graphs import config, trip_graph
    from turnstate_app.contrib.langgraph import DjangoCheckpointSaver, pause_interrupts
    from turnstate_app.contrib.langgraph.models import Checkpoint

    graph = trip_graph(DjangoCheckpointSaver(), name="trip")
    notes = (
        "Notes: " + "a window seat, vegetarian meals, a late check-out; " * 12
    )  # longer than the page is wide
    trip = {"transcript": ["Lisbon, three nights, for two, from May 4", notes]}
    graph.invoke(trip, config("support-trip-1440"))
    [minted] = pause_interrupts(graph, config("support-trip-1440"), run_id="run-trip", session_id="s-trip")
    head = Checkpoint.objects.get(thread_id="support-trip-1440", checkpoint_id=minted.claims.checkpoint_id)
    browser.set_window_size(1440, 900)
    log_in(browser, live_server, admin_user, f"/admin/turnstate_langgraph/checkpoint/{head.pk}/change/")

    pre = browser.find_element(By.CSS_SELECTOR, ".field-state_values pre.turnstate-value")
    assert '"transcript": [' in pre.text and '"Lisbon, three nights, for two, from May 4"' in pre.text
    assert_fits(browser, pre)  # the notes wrap inside the block
    assert pre.size["height"] > 12 * float(browser.execute_script(FONT_SIZE, pre)), pre.size
    if folder := os.environ.get("TURNSTATE_SCREENSHOTS"):
        shoot(browser, folder, "admin-langgraph-checkpoint-1440.png", 1440, 1250)

    browser.find_element(By.LINK_TEXT, "pauses at this checkpoint").click()
    rows = [row.text for row in browser.find_elements(By.CSS_SELECTOR, "#result_list tbody tr")]
    assert len(rows) == 1 and minted.claims.jti in rows[0]
