"""The person's pages as a person meets them: a real Chromium opens the e-mailed link, signs in,
answers each kind of form, and the run continues once.

Run with the admin's browser tests (``make test-e2e``, Debian's ``chromium`` and
``chromium-driver``); deselected from the normal run. Every request the browser sends is recorded
on the server (``request_started``), so the tests can say where the link's token travelled. With
``TURNSTATE_SCREENSHOTS=<folder>`` the inbox, an approval, a choice and an edit of a tool's
arguments are saved as ``pages-<what>-<width>.png`` at 360 and 1440 px.
"""

from __future__ import annotations

import os
import re
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from django.core import mail
from django.core.signals import request_started
from django.utils import timezone

from tests import after_answer_support as support
from tests.contrib.langgraph.approvals import config
from tests.factories import UserFactory
from tests.pages_support import openai_approval, pydantic_ai_approval
from tests.pause_helpers import mint
from tests.test_admin_e2e import browser
from tests.test_after_answer_faults import ENQUEUE, IMMEDIATE
from turnstate_app.contrib.langgraph import pause_interrupts
from turnstate_app.models import Pause
from turnstate_app.pauses import Continuation, ResumedPause, continue_once, resume_pause, resumed

__all__ = ["browser"]  # the fixture, shared with the admin's browser tests

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]

PASSWORD = "a-long-enough-password"
WIDTHS = (360, 1440)
LOGIN_TEMPLATE = """<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Sign in</title></head>
<body><h1>Sign in</h1>
<form method="post" action="{% url 'login' %}">{% csrf_token %}
<label for="id_username">Username</label> {{ form.username }}
<label for="id_password">Password</label> {{ form.password }}
<input type="hidden" name="next" value="{{ next }}">
<button type="submit">Sign in</button></form></body></html>
"""
"""Django's own ``LoginView`` needs a template of the project's; this one is a project's simplest."""

CONTINUED: list[tuple[str, Any]] = []
"""Each continuation that ran: the pause's jti and the answer it continued with."""


def continue_here(resumed_pause: ResumedPause) -> None:
    """A ``RESUME_HANDLER`` that continues the run at once through the lifecycle, noting each run."""

    def run(continuation: Continuation) -> None:
        CONTINUED.append((continuation.resumed.claims.jti, continuation.resumed.answer))

    continue_once(resumed_pause, run)


@pytest.fixture
def seen() -> Iterator[list[dict[str, str]]]:
    """Every request the live server receives: method, path, query and Referer, in order."""
    requests: list[dict[str, str]] = []

    def note(sender: Any, environ: dict[str, Any] | None = None, **_: Any) -> None:
        if environ is not None and not environ.get("PATH_INFO", "").startswith("/static/"):
            requests.append(
                {
                    "method": environ.get("REQUEST_METHOD", ""),
                    "path": environ.get("PATH_INFO", ""),
                    "query": environ.get("QUERY_STRING", ""),
                    "referer": environ.get("HTTP_REFERER", ""),
                }
            )

    request_started.connect(note, dispatch_uid="pages-e2e")  # the live server's handler, whichever class
    yield requests
    request_started.disconnect(dispatch_uid="pages-e2e")


@pytest.fixture
def pages(turnstate_settings: Any, settings: Any, live_server: Any, tmp_path: Path) -> Any:
    """The pages as a project wires them: NOTIFY e-mails the owner, a sign-in page, a handler."""
    CONTINUED.clear()
    templates = tmp_path / "templates"
    (templates / "registration").mkdir(parents=True)
    (templates / "registration" / "login.html").write_text(LOGIN_TEMPLATE)
    settings.TEMPLATES = [{**settings.TEMPLATES[0], "DIRS": [str(templates)]}]
    settings.LOGIN_REDIRECT_URL = "/answers/"
    turnstate_settings["NOTIFY"] = "turnstate_app.notify.email_owner"
    turnstate_settings["PAGES_BASE_URL"] = live_server.url
    turnstate_settings["RESUME_HANDLER"] = "tests.test_pages_e2e.continue_here"
    turnstate_settings["HANDOFF_TIMEOUT"] = 60
    return turnstate_settings


@pytest.fixture
def alice() -> Any:
    person = UserFactory.create(username="alice", first_name="Alice", email="alice@example.com")
    person.set_password(PASSWORD)
    person.save()
    return person


def emailed_link(to: str) -> str:
    """The answer link in the one e-mail sent to ``to``."""
    [message] = [message for message in mail.outbox if message.to == [to]]
    [link] = re.findall(r"^(https?://\S+/answers/t/\S+/)$", str(message.body), re.MULTILINE)
    return str(link)


def sign_in(browser: Any, user: Any) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.expected_conditions import staleness_of
    from selenium.webdriver.support.wait import WebDriverWait

    assert "/accounts/login/" in browser.current_url, browser.current_url
    browser.find_element(By.NAME, "username").send_keys(user.username)
    browser.find_element(By.NAME, "password").send_keys(PASSWORD)
    submit = browser.find_element(By.CSS_SELECTOR, "button[type=submit]")
    submit.click()
    WebDriverWait(browser, 30).until(staleness_of(submit))


def submit(browser: Any, button: Any) -> None:
    """Click ``button`` and wait for the page it leads to."""
    from selenium.webdriver.support.expected_conditions import staleness_of
    from selenium.webdriver.support.wait import WebDriverWait

    button.click()
    WebDriverWait(browser, 60).until(staleness_of(button))


def outcome(browser: Any) -> str:
    """The outcome page's code (``answered``, ``expired``, …) from its section's class."""
    from selenium.webdriver.common.by import By

    section = browser.find_element(By.CSS_SELECTOR, "section.ts-outcome")
    codes = [name for name in section.get_attribute("class").split() if name.startswith("ts-outcome-")]
    return str(codes[0]).removeprefix("ts-outcome-")


def shoot(browser: Any, what: str) -> None:
    """The page at 360 and 1440 px, whole (the window as tall as the page), when screenshots are asked for."""
    folder = os.environ.get("TURNSTATE_SCREENSHOTS")
    if not folder:
        return
    Path(folder).mkdir(parents=True, exist_ok=True)
    for width in WIDTHS:
        browser.set_window_size(width, 900)
        height = int(browser.execute_script("return document.documentElement.scrollHeight"))
        browser.set_window_size(width, max(height + 140, 600))
        assert browser.save_screenshot(str(Path(folder) / f"pages-{what}-{width}.png"))
    browser.set_window_size(1280, 720)


def fits(browser: Any, width: int) -> None:
    """At ``width`` px nothing scrolls sideways: the page is readable on a phone and a wide screen."""
    browser.set_window_size(width, 900)
    inner, window = browser.execute_script("return [document.documentElement.scrollWidth, window.innerWidth]")
    assert inner <= window, (width, inner, window)


# -- the e-mailed link, end to end ---------------------------------------------------------------


def test_a_person_opens_the_emailed_link_signs_in_answers_and_the_worker_continues_once(
    pages: Any, settings: Any, live_server: Any, browser: Any, alice: Any, seen: list[dict[str, str]]
) -> None:
    """A LangGraph run's question, e-mailed by NOTIFY; answered on the page; continued by
    ``continue_pause`` (enqueue_continuation on the ImmediateBackend), its payment made once."""
    from selenium.webdriver.common.by import By

    settings.TASKS = IMMEDIATE
    pages["AGENTS"] = dict(support.AGENTS)
    pages["RESUME_HANDLER"] = ENQUEUE
    thread = f"pay-{uuid.uuid4().hex[:12]}"
    support.pay.invoke({"log": []}, config(thread))
    [minted] = pause_interrupts(support.pay, config(thread), run_id=thread, session_id="s", owner=alice)
    link = emailed_link("alice@example.com")
    token = minted.token
    assert link == f"{live_server.url}/answers/t/{token}/"

    browser.get(link)
    sign_in(browser, alice)
    page = f"{live_server.url}/answers/{minted.claims.jti}/"
    assert browser.current_url == page  # the token is gone from the address bar
    assert "Pay EUR 120 to ACME?" in browser.find_element(By.CSS_SELECTOR, ".ts-question").text
    answer = browser.find_element(By.NAME, "answer_json")
    answer.clear()
    answer.send_keys('"yes"')
    submit(browser, browser.find_element(By.CSS_SELECTOR, ".ts-buttons button[type=submit]"))

    assert outcome(browser) == "answered"
    assert support.payments(thread) == 1
    assert Pause.objects.get(jti=minted.claims.jti).continuation == "continued"
    assert resumed(minted.claims.jti).answer == "yes"

    # The token was in the link's own request and in none after it: no later address, query or
    # Referer (the sign-in's included), so no access log or page past the first one sees it.
    holding = [n for n, request in enumerate(seen) if token in " ".join(request.values())]
    assert holding == [0] and seen[0]["path"] == f"/answers/t/{token}/", "\n".join(map(str, seen))
    path = page.removeprefix(live_server.url)
    [posted] = [request for request in seen if (request["method"], request["path"]) == ("POST", path)]
    assert posted["referer"] in ("", page)  # none, or the page itself: never the link


# -- each kind of form ---------------------------------------------------------------------------

ENUM = {"type": "string", "enum": ["May 4", "May 11"]}
DRIVER = "Anything the driver should know?"
FREE_TEXT = {"type": "string"}


def test_each_kind_of_form_answers_and_each_run_continues_once(
    pages: Any, live_server: Any, browser: Any, alice: Any
) -> None:
    from selenium.webdriver.common.by import By

    text = mint(owner=alice, agent="delivery", request={"question": DRIVER}, answer_schema=FREE_TEXT)
    edit = pydantic_ai_approval(owner=alice)
    week = {"question": "Which week suits the team?\nBoth are free; the venue holds either until Friday."}
    choice = mint(owner=alice, agent="offsite-planner", request=week, answer_schema=ENUM)
    approval = openai_approval(owner=alice)
    assert len(mail.outbox) == 4

    browser.get(f"{live_server.url}/answers/")
    sign_in(browser, alice)
    titles = [a.text for a in browser.find_elements(By.CSS_SELECTOR, ".ts-inbox .ts-title")]
    assert titles == [
        "refund",
        "Which week suits the team?",
        "send_email",
        DRIVER,
    ]
    for width in WIDTHS:
        fits(browser, width)
    shoot(browser, "inbox")

    def open_from_inbox(title: str) -> None:
        browser.get(f"{live_server.url}/answers/")
        submit(browser, browser.find_element(By.LINK_TEXT, title))

    open_from_inbox("refund")  # an approval: approve / reject, a reason
    assert "refund" in browser.find_element(By.CSS_SELECTOR, "table.ts-args").text
    for width in WIDTHS:
        fits(browser, width)
    shoot(browser, "approval")
    submit(browser, browser.find_element(By.CSS_SELECTOR, "button[name=decision][value=approve]"))
    assert outcome(browser) == "answered"

    open_from_inbox("Which week suits the team?")  # a choice among constants
    for width in WIDTHS:
        fits(browser, width)
    shoot(browser, "enum")
    browser.find_element(By.CSS_SELECTOR, "input[name=answer][value='May 11']").click()
    submit(browser, browser.find_element(By.CSS_SELECTOR, ".ts-buttons button[type=submit]"))
    assert outcome(browser) == "answered"

    open_from_inbox("send_email")  # an approval whose arguments may be edited first
    to = browser.find_element(By.CSS_SELECTOR, "input[name='arg-to'], textarea[name='arg-to']")
    assert to.get_attribute("value").strip() == "ana@example.com"
    to.clear()
    to.send_keys("bo@example.com")
    for width in WIDTHS:
        fits(browser, width)
    shoot(browser, "edit")
    submit(browser, browser.find_element(By.CSS_SELECTOR, "button[name=decision][value=approve]"))
    assert outcome(browser) == "answered"

    open_from_inbox(DRIVER)  # free text
    browser.find_element(By.NAME, "answer").send_keys("Ring twice.")
    submit(browser, browser.find_element(By.CSS_SELECTOR, ".ts-buttons button[type=submit]"))
    assert outcome(browser) == "answered"

    answers = dict(CONTINUED)
    assert len(CONTINUED) == len(answers) == 4  # each run continued once
    assert answers[approval.claims.jti] == {"approved": True}
    assert answers[choice.claims.jti] == "May 11"
    assert answers[edit.claims.jti]["approved"] is True
    assert answers[edit.claims.jti]["override_args"]["to"] == "bo@example.com"
    assert answers[text.claims.jti] == "Ring twice."
    again = continue_once(resumed(text.claims.jti), lambda continuation: "twice")
    assert (again.ran, again.reason) == (False, "already continued")

    browser.get(f"{live_server.url}/answers/")
    assert browser.find_elements(By.CSS_SELECTOR, ".ts-inbox .ts-title") == []
    assert browser.find_element(By.CSS_SELECTOR, ".ts-empty").text


# -- refusals, CSRF, hostile text ------------------------------------------------------------------


def test_the_refusal_pages_say_what_happened(pages: Any, live_server: Any, browser: Any, alice: Any) -> None:
    from selenium.webdriver.common.by import By

    answered_pause = mint(owner=alice)
    expired_pause = mint(owner=alice)
    Pause.objects.filter(jti=expired_pause.claims.jti).update(expires_at=timezone.now())
    theirs = mint(owner=UserFactory.create(username="bob"))
    browser.get(f"{live_server.url}/answers/t/{answered_pause.token}/")
    sign_in(browser, alice)
    resume_pause(answered_pause.token, "done", user=alice)  # answered elsewhere meanwhile
    browser.refresh()
    assert outcome(browser) == "already_answered"
    for path, code in (
        (f"/answers/{expired_pause.claims.jti}/", "expired"),
        (f"/answers/{theirs.claims.jti}/", "not_found"),  # someone else's: as if there were none
        ("/answers/no-such-pause/", "not_found"),
        (f"/answers/t/{answered_pause.token[:-4]}abcd/", "invalid_token"),
    ):
        browser.get(live_server.url + path)
        assert outcome(browser) == code, path
        assert browser.find_element(By.TAG_NAME, "h1").text and browser.find_element(
            By.LINK_TEXT, "Go to your inbox"
        )


def test_an_answer_without_the_csrf_token_is_refused_and_the_pause_stays_pending(
    pages: Any, live_server: Any, browser: Any, alice: Any
) -> None:
    from selenium.webdriver.common.by import By

    minted = mint(owner=alice, request={"question": "Which week?"}, answer_schema=ENUM)
    browser.get(f"{live_server.url}/answers/{minted.claims.jti}/")
    sign_in(browser, alice)
    browser.execute_script("document.querySelector('input[name=csrfmiddlewaretoken]').remove()")
    browser.find_element(By.CSS_SELECTOR, "input[name=answer][value='May 4']").click()
    submit(browser, browser.find_element(By.CSS_SELECTOR, ".ts-buttons button[type=submit]"))
    assert "CSRF" in browser.find_element(By.TAG_NAME, "body").text
    assert Pause.objects.get(jti=minted.claims.jti).status == "pending"
    assert CONTINUED == []


HOSTILE = (
    "<script>document.title = 'pwned'</script><b>bold</b> & <img src=x onerror=\"document.title='img'\">"
)


def test_script_and_html_in_the_question_and_arguments_are_shown_as_text(
    pages: Any, live_server: Any, browser: Any, alice: Any
) -> None:
    from selenium.webdriver.common.by import By

    plain = mint(owner=alice, request={"question": HOSTILE}, answer_schema=FREE_TEXT)
    call = pydantic_ai_approval(owner=alice, args={"to": HOSTILE, "body": HOSTILE})
    browser.get(f"{live_server.url}/answers/")
    sign_in(browser, alice)
    assert HOSTILE.splitlines()[0] in browser.find_element(By.CSS_SELECTOR, ".ts-inbox").text
    for minted, where in ((plain, ".ts-question"), (call, "table.ts-args")):
        browser.get(f"{live_server.url}/answers/{minted.claims.jti}/")
        shown = browser.find_element(By.CSS_SELECTOR, where)
        assert "<script>document.title = 'pwned'</script>" in shown.text
        assert shown.find_elements(By.TAG_NAME, "script") == []
        assert shown.find_elements(By.TAG_NAME, "b") == []
        assert shown.find_elements(By.TAG_NAME, "img") == []
        assert browser.title not in ("pwned", "img")
