"""Each fault after the answer, as operators meet it: one state, its reason, the documented action.

Every test answers a real LangGraph pause (``tests.after_answer_support.pay``, continued by
``continue_pause`` through ``TURNSTATE["AGENTS"]`` and ``RESUME_HANDLER`` =
``enqueue_continuation``), puts one fault in the way, and checks that

(a) the pause is counted by exactly one figure, the same in ``turnstate_status --json`` and in
    ``GET status/`` (as staff), and the admin's page of the pause shows its state and reason;
(b) the operator's action that ``docs/states.md`` documents for that state does what it says;
(c) in the end the node's side effect (a payment row) happened exactly once, or never.

The task runs on Django's ImmediateBackend (on the hand-off) or, where a worker must be killed
or must find the question changed, on django-tasks-db's ``db_worker`` in a process of its own.
"""

from __future__ import annotations

import json
import logging
import re
import signal
import sys
import time
import uuid
from datetime import timedelta
from importlib.util import find_spec
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import connection
from django.test import Client
from django.utils import timezone
from django.utils.html import escape
from rest_framework.test import APIClient

from tests import after_answer_support as support
from tests.api_support import client_for
from tests.factories import UserFactory
from turnstate_app.models import Pause
from turnstate_app.pauses import resume_pause
from turnstate_app.tasks import continue_pause

pytestmark = pytest.mark.django_db(transaction=True)

STATUS = "/api/turnstate/status/"
FIGURES = ("awaiting_handoff", "queued", "running", "stalled", "failed_continuations")
ENQUEUE = "turnstate_app.handoff.enqueue_continuation"
TASKS_API = "django.tasks" if find_spec("django.tasks") else "django_tasks"
IMMEDIATE = {"default": {"BACKEND": f"{TASKS_API}.backends.immediate.ImmediateBackend"}}
DATABASE_QUEUE = {"default": {"BACKEND": "django_tasks_db.DatabaseBackend"}}


@pytest.fixture
def wired(turnstate_settings: Any, settings: Any) -> Any:
    """The task path as a host wires it: AGENTS, enqueue_continuation, the ImmediateBackend."""
    settings.TASKS = IMMEDIATE
    turnstate_settings["AGENTS"] = dict(support.AGENTS)
    turnstate_settings["RESUME_HANDLER"] = ENQUEUE
    turnstate_settings["HANDOFF_TIMEOUT"] = 60  # the answer waits for the whole run, even on a slow machine
    return turnstate_settings


@pytest.fixture
def queued_for_a_worker(wired: Any, settings: Any) -> Any:
    """The same, with the task queued in the database for ``db_worker`` in another process."""
    if connection.vendor == "sqlite" and connection.is_in_memory_db():  # type: ignore[attr-defined]
        pytest.skip("an in-memory SQLite database cannot be opened by a second process")
    settings.TASKS = DATABASE_QUEUE
    return wired


@pytest.fixture
def api() -> APIClient:
    return client_for(UserFactory.create(username="operator", is_staff=True))


def figures(api: APIClient) -> list[dict[str, int]]:
    """The figures as ``turnstate_status --json`` prints them and as ``GET status/`` returns them."""
    out = StringIO()
    call_command("turnstate_status", "--json", stdout=out)
    response = api.get(STATUS)
    assert response.status_code == 200, response.content
    return [
        {name: document[name] for name in FIGURES}
        for document in (json.loads(out.getvalue()), response.json())
    ]


def assert_seen(
    api: APIClient, admin: Client, jti: str, figure: str | None, state: str, reason: str | None = None
) -> Pause:
    """Counted by ``figure`` alone (None: by none) in both, and the admin page shows ``state`` and
    the recorded reason, which contains ``reason``."""
    expected = {name: int(name == figure) for name in FIGURES}
    assert figures(api) == [expected, expected]
    pause = Pause.objects.get(jti=jti)
    assert pause.continuation == state, pause.continuation_reason
    page = admin.get(f"/admin/turnstate_app/pause/{pause.pk}/change/")
    assert page.status_code == 200
    html = page.content.decode()
    assert admin_field(html, "continuation") == state
    assert admin_field(html, "counted_as") == (figure or "—")
    if reason is not None:
        assert pause.continuation_reason is not None and reason in pause.continuation_reason
        assert admin_field(html, "continuation_reason") == escape(pause.continuation_reason)
    return pause


def admin_field(html: str, name: str) -> str:
    """What the admin's change page shows for the read-only field ``name``."""
    shown = re.search(rf'field-{name}">.*?<div class="readonly">(.*?)</div>', html, re.DOTALL)
    assert shown is not None, name
    return shown.group(1)


def redeliver(*args: str) -> str:
    out = StringIO()
    call_command("turnstate_redeliver", *args, stdout=out)
    return out.getvalue()


# -- 1. the hand-off -----------------------------------------------------------------------------


def test_1_an_enqueue_that_raises_waits_for_handoff_until_redelivered(
    wired: Any, api: APIClient, admin_client: Client, caplog: pytest.LogCaptureFixture
) -> None:
    """Fault: RESUME_HANDLER raises (the broker is down) the first time. Seen as awaiting_handoff
    (queued, never handed off; the log names the error). Operator: ``turnstate_redeliver
    --older-than 0``. Then continued, and the node paid once."""
    wired["RESUME_HANDLER"] = "tests.after_answer_support.enqueue_after_one_failure"
    thread, minted = support.paused()
    with caplog.at_level(logging.ERROR, logger="turnstate_app.pauses.handoff"):
        resume_pause(minted.token, "yes")
    assert f"RESUME_HANDLER failed for pause {minted.claims.jti}" in caplog.text
    assert "the task broker refused the connection" in caplog.text
    pause = assert_seen(
        api,
        admin_client,
        minted.claims.jti,
        "awaiting_handoff",
        "queued",
        "RESUME_HANDLER raised ConnectionError: the task broker refused",
    )
    assert pause.handed_off_at is None and support.payments(thread) == 0

    assert "redelivered 1 pause(s); 0 failed again" in redeliver("--older-than", "0")

    pause = assert_seen(api, admin_client, minted.claims.jti, None, "continued")
    assert pause.handed_off_at is not None and support.payments(thread) == 1


# -- 2, 3. the task fails before the claim -------------------------------------------------------


def test_2_a_name_agents_lacks_is_failed_until_settings_are_fixed_and_redelivered(
    wired: Any, api: APIClient, admin_client: Client
) -> None:
    """Fault: AGENTS has no entry for the pause's graph. Seen as failed_continuations (failed,
    the reason names the entry, attempts 1, next try set). Operator: fix AGENTS, then
    ``turnstate_redeliver --older-than 0``. Then continued, the node paid once."""
    wired["AGENTS"] = {"task-trip": "tests.contrib.registered.trip"}
    thread, minted = support.paused()
    resume_pause(minted.token, "yes")
    entry = f"no TURNSTATE['AGENTS'] entry for '{support.NAME}'"
    pause = assert_seen(api, admin_client, minted.claims.jti, "failed_continuations", "failed", entry)
    assert pause.continuation_attempts == 1
    assert pause.continuation_retry_at is not None and pause.continuation_retry_at > timezone.now()
    assert pause.handed_off_at is not None and support.payments(thread) == 0

    wired["AGENTS"] = dict(support.AGENTS)
    assert "redelivered 1 pause(s); 0 failed again" in redeliver("--older-than", "0")

    pause = assert_seen(api, admin_client, minted.claims.jti, None, "continued")
    assert support.payments(thread) == 1


def test_3_an_agents_module_raising_on_import_is_a_configuration_failure(
    wired: Any, api: APIClient, admin_client: Client, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Fault: the AGENTS entry's module raises RuntimeError when imported. Seen as
    failed_continuations (failed, a configuration reason naming RuntimeError; the task returns,
    no RuntimeError escapes it). Operator: fix AGENTS, ``turnstate_redeliver --older-than 0``.
    Then continued, the node paid once."""
    module = f"broken_agents_{uuid.uuid4().hex[:8]}"
    (tmp_path / f"{module}.py").write_text("raise RuntimeError('the config service is unreachable')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    wired["AGENTS"] = {support.NAME: f"{module}.pay"}
    thread, minted = support.paused()
    resume_pause(minted.token, "yes")
    reason = "raised RuntimeError on import (the config service is unreachable)"
    pause = assert_seen(api, admin_client, minted.claims.jti, "failed_continuations", "failed", reason)
    assert f"AGENTS['{support.NAME}']" in str(pause.continuation_reason) and pause.continuation_attempts == 1
    assert module not in sys.modules

    outcome = continue_pause.call(minted.claims.jti)  # a worker's next try: a result, not a raise
    assert outcome["ran"] is False and reason in outcome["reason"]
    assert Pause.objects.get(jti=minted.claims.jti).continuation_attempts == 2

    wired["AGENTS"] = dict(support.AGENTS)
    assert "redelivered 1 pause(s); 0 failed again" in redeliver("--older-than", "0")

    assert_seen(api, admin_client, minted.claims.jti, None, "continued")
    assert support.payments(thread) == 1


# -- 4. the worker dies after the claim ---------------------------------------------------------


def test_4_a_worker_killed_after_its_claim_is_stalled_until_released_and_redelivered(
    queued_for_a_worker: Any, api: APIClient, admin_client: Client, tmp_path: Path
) -> None:
    """Fault: db_worker (another process) claims the continuation and is SIGKILLed while the node
    waits, before it pays. Seen as running, then stalled once STALLED_AFTER (1 s in both
    processes; the first read uses 600 s, so "running" is not a race) has passed. Operator:
    ``turnstate_redeliver --stalled --release``, then ``--older-than 0``; a new worker continues
    it. The node was entered twice and paid once."""
    gate = tmp_path / "gate"
    thread, minted = support.paused(gate=gate)
    resume_pause(minted.token, "yes")  # enqueued for the worker
    assert_seen(api, admin_client, minted.claims.jti, "queued", "queued")

    database = str(connection.settings_dict["NAME"])
    worker = support.start_worker(database, tmp_path / "worker.log")
    try:
        entered = Path(f"{gate}.entered")
        deadline = time.monotonic() + 120
        while not entered.exists():
            assert worker.poll() is None, (tmp_path / "worker.log").read_text()
            assert time.monotonic() < deadline, "the worker never reached the node"
            time.sleep(0.05)
    finally:
        worker.send_signal(signal.SIGKILL)
        worker.wait(timeout=30)
    assert worker.returncode == -signal.SIGKILL

    queued_for_a_worker["STALLED_AFTER"] = 600
    pause = assert_seen(api, admin_client, minted.claims.jti, "running", "running")
    queued_for_a_worker["STALLED_AFTER"] = 1
    assert pause.continuation_since is not None
    time.sleep(max(0.0, (pause.continuation_since + timedelta(seconds=1.1) - timezone.now()).total_seconds()))
    assert_seen(api, admin_client, minted.claims.jti, "stalled", "running")
    listed = admin_client.get("/admin/turnstate_app/pause/", {"continuation": "stalled"})
    assert [row.jti for row in listed.context["cl"].result_list] == [minted.claims.jti]
    assert support.payments(thread) == 0

    assert "released 1 stalled continuation(s)" in redeliver("--stalled", "--release")
    assert_seen(api, admin_client, minted.claims.jti, "awaiting_handoff", "queued")
    gate.touch()  # from now on the node goes straight on
    assert "redelivered 1 pause(s); 0 failed again" in redeliver("--older-than", "0")
    finished = support.run_worker(database)
    assert finished.returncode == 0, finished.stderr

    assert_seen(api, admin_client, minted.claims.jti, None, "continued")
    killed, survivor = entered.read_text().split()
    assert killed == str(worker.pid) and survivor != killed
    assert support.payments(thread) == 1


# -- 5. the run raises -------------------------------------------------------------------------


def test_5_a_run_that_raises_is_crashed_at_once_and_handed_again_only_by_its_jti(
    wired: Any, api: APIClient, admin_client: Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Fault: the node reads ``answer["approved"]`` of the text answer "yes": TypeError. Seen as
    failed_continuations at once (crashed, the reason names TypeError), not as stalled; plain
    redelivery leaves it alone. Operator: fix the node, ``turnstate_redeliver --jti <jti>``.
    Then continued, the node paid once."""
    monkeypatch.setattr(support, "ACCEPTS_TEXT", False)
    thread, minted = support.paused()
    jti = minted.claims.jti
    resume_pause(minted.token, "yes")
    assert_seen(api, admin_client, jti, "failed_continuations", "crashed", "TypeError: string indices")

    for args in ((), ("--older-than", "0")):
        assert "redelivered 0 pause(s)" in redeliver(*args)
    assert_seen(api, admin_client, jti, "failed_continuations", "crashed", "TypeError")
    assert support.payments(thread) == 0

    monkeypatch.setattr(support, "ACCEPTS_TEXT", True)  # the fix: the node takes a plain "yes"
    assert "redelivered 1 pause(s); 0 failed again" in redeliver(f"--jti={jti}")

    assert_seen(api, admin_client, jti, None, "continued")
    assert support.payments(thread) == 1


# -- 6. recording the outcome fails --------------------------------------------------------------


def test_6_a_failed_completion_write_is_retried_and_the_run_is_not_run_again(
    wired: Any, api: APIClient, admin_client: Client, caplog: pytest.LogCaptureFixture
) -> None:
    """Fault: the UPDATE that records "continued" raises OperationalError once, after the node
    paid. Seen as nothing to do: the write is tried again, the pause is continued. Operator:
    none (``turnstate_redeliver --older-than 0`` hands nothing; a redelivered task runs
    nothing). The node paid once."""
    wired["RESUME_HANDLER"] = "tests.after_answer_support.enqueue_failing_the_first_completion"
    thread, minted = support.paused()
    with caplog.at_level(logging.WARNING, logger="turnstate_app.pauses.continuation"):
        resume_pause(minted.token, "yes")
    assert support.COMPLETION_WRITES[minted.claims.jti] == ["failed", "written"]
    assert "recording that the run returned failed; trying again" in caplog.text

    assert_seen(api, admin_client, minted.claims.jti, None, "continued")
    assert "redelivered 0 pause(s)" in redeliver("--older-than", "0")
    assert continue_pause.call(minted.claims.jti)["reason"] == "already continued"
    assert support.payments(thread) == 1


# -- 7. the binding refuses ----------------------------------------------------------------------


def test_7_a_changed_question_is_refused_and_never_handed_again(
    queued_for_a_worker: Any, api: APIClient, admin_client: Client
) -> None:
    """Fault: while the task waits in the queue, the stored interrupt's question changes. Seen as
    failed_continuations (refused, "the question changed since it was asked"). Operator: none
    brings it back (plain and ``--older-than 0`` redelivery skip it, ``--jti`` refuses): ask the
    person anew. The node never paid."""
    from django_tasks_db.models import DBTaskResult

    thread, minted = support.paused()
    jti = minted.claims.jti
    resume_pause(minted.token, "yes")
    support.change_question(thread)
    finished = support.run_worker(str(connection.settings_dict["NAME"]))
    assert finished.returncode == 0, finished.stderr

    changed = "the question changed since it was asked"
    assert_seen(api, admin_client, jti, "failed_continuations", "refused", changed)
    for args in ((), ("--older-than", "0")):
        assert "redelivered 0 pause(s)" in redeliver(*args)
    with pytest.raises(CommandError, match="never handed again"):
        redeliver(f"--jti={jti}")
    assert_seen(api, admin_client, jti, "failed_continuations", "refused", changed)
    assert DBTaskResult.objects.count() == 1  # enqueued once, by the answer
    assert support.payments(thread) == 0
