"""``continue_pause`` with an ADK ``App`` (or a root agent) in ``AGENTS``: a runner on Django's database.

The framework is told by the object's type (``google.adk``'s ``App`` or ``BaseAgent``, or a
subclass), never by the root package name "google".
"""

from __future__ import annotations

import multiprocessing
from concurrent.futures import ProcessPoolExecutor
from typing import Any

import pytest
from asgiref.sync import async_to_sync
from django.db import connection
from google.adk.runners import Runner

from tests.contrib.google_adk.agents import AGENTS, APP, ROOT_AGENT, afirst_run, tool_runs
from tests.contrib.google_adk.paused import BOOK_ANSWER, CONFIRM
from tests.contrib.google_adk.processes import continue_pause_elsewhere
from turnstate_app.agents import agent_for, framework_of
from turnstate_app.choices import ContinuationState
from turnstate_app.contrib.google_adk import DjangoSessionService, pause_confirmations
from turnstate_app.models import Pause
from turnstate_app.pauses import MintedPause, resume_pause
from turnstate_app.tasks import continue_pause

pytestmark = pytest.mark.django_db(transaction=True)
SPAWN = multiprocessing.get_context("spawn")
BOOKED = '{"day": "tuesday", "room": "A", "seats": 3}'


@pytest.fixture
def agents(turnstate_settings: Any) -> Any:
    turnstate_settings["AGENTS"] = dict(AGENTS)
    return turnstate_settings


def paused_with(runner: Runner, agent: Any) -> list[MintedPause]:
    session_id, events = async_to_sync(afirst_run)(runner)
    invocation_id = events[-1].invocation_id
    return pause_confirmations(
        events, agent=agent, user_id="alice", session_id=session_id, invocation_id=invocation_id
    )


def answer_all(pauses: list[MintedPause]) -> None:
    for minted in pauses:
        resume_pause(minted.token, BOOK_ANSWER if minted.claims.name == "book" else CONFIRM)


def test_an_adk_app_group_continues_once_however_often_the_task_is_delivered(agents: Any) -> None:
    pauses = paused_with(Runner(app=APP, session_service=DjangoSessionService()), APP)
    answer_all(pauses)
    outcomes = [continue_pause.call(minted.claims.jti) for minted in [*pauses, *pauses]]
    assert [outcome["ran"] for outcome in outcomes] == [True, False, False, False]
    assert tool_runs("pay") == ["2400 to acme"] and tool_runs("book") == [BOOKED]
    assert set(Pause.objects.values_list("continuation", flat=True)) == {ContinuationState.CONTINUED}


def test_a_root_agent_entry_continues_in_the_app_of_its_own_name(agents: Any) -> None:
    runner = Runner(agent=ROOT_AGENT, app_name=ROOT_AGENT.name, session_service=DjangoSessionService())
    pauses = paused_with(runner, ROOT_AGENT)
    assert set(Pause.objects.values_list("agent", flat=True)) == {"adk_root"}
    answer_all(pauses)
    assert continue_pause.call(pauses[-1].claims.jti)["ran"] is True
    assert tool_runs("pay") == ["2400 to acme"]


def test_the_task_continues_in_a_process_that_never_saw_the_pause(agents: Any) -> None:
    pauses = paused_with(Runner(app=APP, session_service=DjangoSessionService()), APP)
    answer_all(pauses)
    with ProcessPoolExecutor(1, mp_context=SPAWN) as pool:
        outcome = pool.submit(
            continue_pause_elsewhere, dict(connection.settings_dict), pauses[0].claims.jti
        ).result(timeout=180)
    assert (outcome["ran"], outcome["reason"]) == (True, None), outcome
    assert tool_runs("pay") == ["2400 to acme"] and tool_runs("book") == [BOOKED]


def test_adk_is_told_by_type_not_by_the_root_package_name(agents: Any) -> None:
    class Own:  # a project's own class under a "google" package
        name = "own"

    Own.__module__ = "google.own"

    class App:  # named like ADK's, defined elsewhere
        name = "app"

    assert framework_of(Own()) is None and framework_of(App()) is None
    assert framework_of(APP) == framework_of(ROOT_AGENT) == "google.adk"
    assert agent_for("adk_payments") == (APP, "turnstate_app.contrib.google_adk")
    assert agent_for("adk_root") == (ROOT_AGENT, "turnstate_app.contrib.google_adk")
