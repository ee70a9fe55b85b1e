"""``turnstate_app.tasks.continue_pause``: an answer continued by the graph or agent ``AGENTS`` names.

Run in-process (``Task.call``) and by django-tasks-db's real worker (``manage.py db_worker
--batch``) in a child process: Django 6's ``django.tasks`` or the ``django-tasks`` backport on
5.2, whichever this environment has.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import uuid
from io import StringIO
from typing import Any

import django
import pytest
from django.core.management import call_command
from django.db import connection
from django.utils import timezone

from tests.contrib.openai_agents import agents as payments
from tests.contrib.pydantic_ai.agents import first_run, tool_runs, travel_agent
from tests.contrib.pydantic_ai.conversations import sync
from tests.contrib.registered import AGENTS, trip
from tests.demo_runs import ROOT, this_tree
from tests.pause_helpers import answered
from turnstate_app.choices import ContinuationState
from turnstate_app.contrib.langgraph import pause_interrupts
from turnstate_app.contrib.openai_agents import pause_approvals
from turnstate_app.contrib.pydantic_ai import DjangoConversationStore, pause_deferred
from turnstate_app.models import Pause
from turnstate_app.pauses import MintedPause, redeliver, resume_pause
from turnstate_app.status import lifecycle_status
from turnstate_app.tasks import continue_pause

pytestmark = pytest.mark.django_db(transaction=True)

APPROVE = {"approved": True}


@pytest.fixture
def agents(turnstate_settings: Any) -> Any:
    turnstate_settings["AGENTS"] = dict(AGENTS)
    return turnstate_settings


def paused_trip() -> tuple[str, MintedPause]:
    thread = f"trip-{uuid.uuid4().hex[:12]}"
    config: Any = {"configurable": {"thread_id": thread}}
    trip.invoke({"transcript": []}, config)
    (minted,) = pause_interrupts(trip, config, run_id=thread, session_id="s")
    return thread, minted


def paused_travel(*, named: bool = True) -> list[MintedPause]:
    agent = travel_agent(name="travel")
    store = DjangoConversationStore()
    result = first_run(agent, f"conv-{uuid.uuid4().hex[:12]}")
    sync(store.save, result)
    return pause_deferred(result, store=store, run_id="r", session_id="s", agent=agent if named else None)


def paused_payments() -> list[MintedPause]:
    agent = payments.payments_agent(name="payments")
    result = payments.first_run(agent)
    return pause_approvals(result, agent=agent, run_id=f"run-{uuid.uuid4().hex[:12]}", session_id=None)


def answer_all(pauses: list[MintedPause]) -> None:
    for minted in pauses:
        resume_pause(minted.token, "Monday" if minted.claims.name == "ask_date" else APPROVE)


def continuation_of(minted: MintedPause) -> Pause:
    return Pause.objects.get(jti=minted.claims.jti)


def assert_failed(pauses: list[MintedPause], reason: str) -> None:
    """Nothing ran and the wiring fault is listed for operators: ``failed`` (never ``running``),
    with ``reason``, one attempt spent and the next try set."""
    for minted in pauses:
        pause = continuation_of(minted)
        assert (pause.continuation, pause.continuation_reason) == (ContinuationState.FAILED, reason)
        assert pause.continuation_attempts == 1
        assert pause.continuation_retry_at is not None and pause.continuation_retry_at > timezone.now()
    assert lifecycle_status().failed_continuations == len(pauses)


def fix_and_redeliver(settings: Any, delivered: int) -> None:
    """The settings fixed, ``turnstate_redeliver`` hands the failed answers to the task again."""
    settings["AGENTS"] = dict(AGENTS)
    settings["RESUME_HANDLER"] = "turnstate_app.handoff.enqueue_continuation"
    out = StringIO()
    call_command("turnstate_redeliver", "--older-than", "0", stdout=out)
    assert f"redelivered {delivered} pause(s); 0 failed again" in out.getvalue()


def assert_continued(pauses: list[MintedPause]) -> None:
    for minted in pauses:
        pause = continuation_of(minted)
        assert (pause.continuation, pause.continuation_reason) == (ContinuationState.CONTINUED, None)
    assert lifecycle_status().failed_continuations == 0


def test_a_graph_pause_continues_once_however_often_the_task_is_delivered(agents: Any) -> None:
    thread, minted = paused_trip()
    resume_pause(minted.token, "May 4")
    first = continue_pause.call(minted.claims.jti)
    again = continue_pause.call(minted.claims.jti)
    assert first == {"jti": minted.claims.jti, "ran": True, "reason": None, "minted": []}
    assert again["ran"] is False and again["reason"] == "already continued"
    transcript = trip.get_state({"configurable": {"thread_id": thread}}).values["transcript"]
    assert transcript == ["planned", "answered May 4", "booked for May 4"]
    assert_continued([minted])


def test_an_agent_group_continues_once_and_runs_the_approved_tool_once(agents: Any) -> None:
    pauses = paused_travel()
    answer_all(pauses)
    outcomes = [continue_pause.call(minted.claims.jti) for minted in [*pauses, *pauses]]
    assert [outcome["ran"] for outcome in outcomes] == [True, False, False, False]
    assert tool_runs("book_flight") == 1


def test_an_openai_agents_group_continues_once_and_runs_the_approved_tools_once(agents: Any) -> None:
    pauses = paused_payments()
    answer_all(pauses)
    outcomes = [continue_pause.call(minted.claims.jti) for minted in [*pauses, *pauses]]
    assert [outcome["ran"] for outcome in outcomes] == [True, False, False, False]
    assert payments.tool_runs("pay") == ["2400 to acme"] and payments.tool_runs("notify") == ["bob"]


def test_a_pydantic_ai_pause_with_no_identity_is_refused_naming_pause_deferred_with_agent(
    agents: Any,
) -> None:
    pauses = paused_travel(named=False)
    answer_all(pauses)
    outcome = continue_pause.call(pauses[0].claims.jti)
    assert outcome["ran"] is False
    assert "pause_deferred(..., agent=" in outcome["reason"] and "AGENTS" in outcome["reason"]
    for minted in pauses:  # the whole group, never claimed, never handed again
        pause = continuation_of(minted)
        assert (pause.continuation, pause.continuation_reason) == (
            ContinuationState.REFUSED,
            outcome["reason"],
        )
        assert (pause.continuation_attempts, pause.continuation_retry_at) == (0, None)
    assert lifecycle_status().failed_continuations == 2
    assert redeliver(dry_run=True).listed == ()
    assert tool_runs("book_flight") == 0


def test_a_mint_pause_pause_is_refused_pointing_to_continue_once(agents: Any) -> None:
    minted = answered()  # mint_pause records no graph or agent name
    outcome = continue_pause.call(minted.claims.jti)
    assert outcome["ran"] is False
    assert "continue_once" in outcome["reason"] and "mint_pause" in outcome["reason"]
    assert "pause_deferred" not in outcome["reason"]  # PydanticAI's advice, not this pause's
    pause = continuation_of(minted)
    assert (pause.continuation, pause.continuation_reason) == (ContinuationState.REFUSED, outcome["reason"])
    assert lifecycle_status().failed_continuations == 1


def test_a_name_agents_does_not_hold_fails_and_continues_once_the_settings_are_fixed(
    turnstate_settings: Any,
) -> None:
    turnstate_settings["AGENTS"] = {"travel": AGENTS["travel"]}
    thread, minted = paused_trip()
    resume_pause(minted.token, "May 4")

    outcome = continue_pause.call(minted.claims.jti)

    assert outcome["ran"] is False
    assert "no TURNSTATE['AGENTS'] entry for 'task-trip'" in outcome["reason"]
    assert_failed([minted], outcome["reason"])
    transcript = trip.get_state({"configurable": {"thread_id": thread}}).values["transcript"]
    assert transcript == ["planned"]  # nothing ran

    fix_and_redeliver(turnstate_settings, delivered=1)

    transcript = trip.get_state({"configurable": {"thread_id": thread}}).values["transcript"]
    assert transcript == ["planned", "answered May 4", "booked for May 4"]  # the node ran once
    assert_continued([minted])


def test_an_agents_module_that_raises_on_import_fails_naming_the_error_and_continues_once_fixed(
    turnstate_settings: Any,
) -> None:
    turnstate_settings["AGENTS"] = {"travel": "tests.contrib.raising_agents.travel"}
    pauses = paused_travel()
    answer_all(pauses)

    outcome = continue_pause.call(pauses[0].claims.jti)

    assert outcome["ran"] is False
    assert "AGENTS['travel'] = 'tests.contrib.raising_agents.travel'" in outcome["reason"]
    assert "RuntimeError" in outcome["reason"] and "BOOKING_API_KEY is not set" in outcome["reason"]
    assert_failed(pauses, outcome["reason"])  # the whole group
    assert tool_runs("book_flight") == 0

    fix_and_redeliver(turnstate_settings, delivered=2)  # each member handed again; one continues

    assert tool_runs("book_flight") == 1
    assert_continued(pauses)


def test_an_entry_named_otherwise_fails_naming_the_objects_name(turnstate_settings: Any) -> None:
    turnstate_settings["AGENTS"] = {"task-trip": AGENTS["travel"]}
    _, minted = paused_trip()
    resume_pause(minted.token, "May 4")
    outcome = continue_pause.call(minted.claims.jti)
    assert outcome["ran"] is False and "an object called 'travel'" in outcome["reason"]
    assert_failed([minted], outcome["reason"])


def test_a_framework_that_is_not_installed_fails_naming_its_extra(
    turnstate_settings: Any, monkeypatch: pytest.MonkeyPatch, tmp_path: Any
) -> None:
    pauses = paused_travel()
    answer_all(pauses)
    # As if pydantic-ai were not installed in the worker: the entry's module cannot import it.
    (tmp_path / "worker_agents.py").write_text(
        "from pydantic_ai import Agent\ntravel = Agent(name='travel')\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setitem(sys.modules, "pydantic_ai", None)
    turnstate_settings["AGENTS"] = {"travel": "worker_agents.travel"}
    outcome = continue_pause.call(pauses[0].claims.jti)
    assert outcome["ran"] is False
    extra = r"does not import \(import of pydantic_ai halted.*turnstate-app\[pydantic-ai\]"
    assert re.search(extra, outcome["reason"]), outcome["reason"]
    assert_failed(pauses, outcome["reason"])
    assert tool_runs("book_flight") == 0


def test_enqueue_continuation_on_the_immediate_backend_continues_on_the_hand_off(agents: Any) -> None:
    agents["RESUME_HANDLER"] = "turnstate_app.handoff.enqueue_continuation"
    thread, minted = paused_trip()
    resume_pause(minted.token, "May 4")
    pause = continuation_of(minted)
    assert pause.continuation == ContinuationState.CONTINUED and pause.handed_off_at is not None
    transcript = trip.get_state({"configurable": {"thread_id": thread}}).values["transcript"]
    assert transcript == ["planned", "answered May 4", "booked for May 4"]


# -- the real worker ----------------------------------------------------------------------


def db_worker() -> subprocess.CompletedProcess[str]:
    """django-tasks-db's worker in a child process: every task enqueued, then exit (``--batch``)."""
    env = {key: value for key, value in os.environ.items() if key != "DJANGO_SETTINGS_MODULE"}
    env.update(
        DJANGO_SETTINGS_MODULE="tests.settings_worker",
        TURNSTATE_WORKER_DB=str(connection.settings_dict["NAME"]),
    )
    command = [sys.executable, "-m", "django", "db_worker", "--batch", "--no-startup-delay", "--no-reload"]
    return subprocess.run(command, cwd=ROOT, env=this_tree(env), capture_output=True, text=True, timeout=120)


@pytest.fixture
def database_backend(agents: Any, settings: Any) -> Any:
    settings.TASKS = {"default": {"BACKEND": "django_tasks_db.DatabaseBackend"}}
    agents["RESUME_HANDLER"] = "turnstate_app.handoff.enqueue_continuation"
    return agents


def test_the_tasks_api_is_djangos_own_on_6_and_the_backport_on_5_2() -> None:
    expected = "django.tasks" if django.VERSION >= (6, 0) else "django_tasks"
    assert type(continue_pause).__module__.startswith(expected + ".")


def test_the_db_worker_continues_a_graph_once_also_when_the_task_is_redelivered(
    database_backend: Any,
) -> None:
    from django_tasks_db.models import DBTaskResult

    thread, minted = paused_trip()
    resume_pause(minted.token, "May 4")  # the hand-off enqueues continue_pause
    assert DBTaskResult.objects.count() == 1
    worker = db_worker()
    assert worker.returncode == 0, worker.stderr
    again = continue_pause.enqueue(minted.claims.jti)  # a redelivered task
    worker = db_worker()
    assert worker.returncode == 0, worker.stderr
    results: list[Any] = list(
        DBTaskResult.objects.order_by("enqueued_at").values_list("status", "return_value")
    )
    assert [status for status, _ in results] == ["SUCCESSFUL", "SUCCESSFUL"]
    assert results[0][1]["ran"] is True
    again.refresh()
    returned: Any = again.return_value
    assert returned["ran"] is False and returned["reason"] == "already continued"
    transcript = trip.get_state({"configurable": {"thread_id": thread}}).values["transcript"]
    assert transcript == ["planned", "answered May 4", "booked for May 4"]  # the node ran once


def test_the_db_worker_continues_an_agent_group_once(database_backend: Any) -> None:
    from django_tasks_db.models import DBTaskResult

    pauses = paused_travel()
    answer_all(pauses)
    worker = db_worker()
    assert worker.returncode == 0, worker.stderr
    values: list[Any] = list(DBTaskResult.objects.values_list("return_value", flat=True))
    returned = sorted(values, key=lambda r: r["ran"])
    assert [r["ran"] for r in returned] == [False, True]
    assert tool_runs("book_flight") == 1


def test_the_db_worker_continues_an_openai_agents_group_once(database_backend: Any) -> None:
    from django_tasks_db.models import DBTaskResult

    answer_all(paused_payments())  # each answer's hand-off enqueues continue_pause
    worker = db_worker()
    assert worker.returncode == 0, worker.stderr
    returned: list[Any] = list(DBTaskResult.objects.values_list("return_value", flat=True))
    assert sorted(r["ran"] for r in returned) == [False, True]
    assert payments.tool_runs("pay") == ["2400 to acme"]


def test_only_the_sdks_agent_counts_as_an_openai_agents_sdk_agent() -> None:
    from turnstate_app.agents import framework_of

    class Own:  # a project's own package may well be called "agents"
        name = "own"

    Own.__module__ = "agents.own"
    assert framework_of(Own()) is None
    assert framework_of(payments.payments_agent()) == "agents"
