"""The invocation goes on once, when the last confirmation of its group is answered, from the database alone.

The payments app runs on a scripted model over ``DjangoSessionService`` (ADK's own in-memory service
where a test says so) and stops for ``pay`` and ``book``; each run of a tool is a row, counted here.
"""

from __future__ import annotations

import asyncio
import multiprocessing
from concurrent.futures import ProcessPoolExecutor
from typing import Any

import pytest
from django.db import connection
from google.adk.sessions import InMemorySessionService
from google.genai import types

from tests.contrib.google_adk.agents import afirst_run, payments_app, runner_for, tool_runs
from tests.contrib.google_adk.paused import BOOK_ANSWER, CONFIRM, REJECT, paused, said
from tests.contrib.google_adk.processes import continue_elsewhere
from tests.factories import UserFactory
from tests.processes import answer_over_rest
from turnstate_app.choices import ContinuationState
from turnstate_app.contrib.google_adk import (
    DjangoSessionService,
    acontinue_invocation,
    apause_confirmations,
    continue_invocation,
)
from turnstate_app.contrib.google_adk.confirmations import REQUEST_CONFIRMATION
from turnstate_app.errors import PauseAlreadyAnsweredError
from turnstate_app.models import Pause
from turnstate_app.pauses import aresume_pause, resume_pause

pytestmark = pytest.mark.django_db(transaction=True)
SPAWN = multiprocessing.get_context("spawn")
BOOKED = '{"day": "tuesday", "room": "A", "seats": 3}'


def continuations(run: Any) -> dict[str, Any]:
    """Where each pause's continuation stands, by tool name (None: not answered)."""
    states = dict(Pause.objects.values_list("jti", "continuation"))
    return {name: states[minted.claims.jti] for name, minted in run.pauses.items()}


def confirmations_answered(run: Any) -> int:
    """How many confirmation answers the session holds (each resume of the invocation adds its own)."""
    session = asyncio.run(
        run.runner.session_service.get_session(
            app_name=run.runner.app_name, user_id=run.user_id, session_id=run.session_id
        )
    )
    return sum(
        1
        for event in session.events
        if event.author == "user"
        for response in event.get_function_responses()
        if response.name == REQUEST_CONFIRMATION
    )


def test_a_partial_answer_continues_nothing() -> None:
    run = paused(DjangoSessionService())
    (first,) = run.answer(pay=CONFIRM)
    result = continue_invocation(run.runner, first)
    assert (result.ran, result.reason) == (False, "group incomplete")
    assert tool_runs("pay") == []
    assert continuations(run) == {"pay": ContinuationState.QUEUED, "book": None}  # nothing claimed


def test_the_group_resumes_the_same_invocation_once_and_a_redelivery_runs_nothing() -> None:
    run = paused(DjangoSessionService())
    first, last = run.answer(pay=CONFIRM, book=BOOK_ANSWER)
    result = continue_invocation(run.runner, last)
    again = [continue_invocation(run.runner, first), continue_invocation(run.runner, last)]
    assert result.ran and result.minted == [] and "paid 2400 to acme" in said(result.output)
    assert {event.invocation_id for event in result.output} == {run.invocation_id}
    assert [(r.ran, r.reason) for r in again] == [(False, "already continued")] * 2
    assert tool_runs("pay") == ["2400 to acme"] and tool_runs("book") == [BOOKED]
    assert set(continuations(run).values()) == {ContinuationState.CONTINUED}
    assert confirmations_answered(run) == 2  # one user message answering both, sent once


def test_adks_own_in_memory_session_service_continues_in_process() -> None:
    run = paused(InMemorySessionService())
    _, last = run.answer(pay=CONFIRM, book=BOOK_ANSWER)
    result = continue_invocation(run.runner, last)
    assert result.ran and tool_runs("pay") == ["2400 to acme"] and tool_runs("book") == [BOOKED]


def test_a_rejection_never_runs_the_tool_and_the_invocation_resumes_once_with_it() -> None:
    run = paused(DjangoSessionService())
    _, last = run.answer(pay=REJECT, book=BOOK_ANSWER)
    result = continue_invocation(run.runner, last)
    assert result.ran and "This tool call is rejected." in said(result.output)
    assert tool_runs("pay") == [] and tool_runs("book") == [BOOKED]
    assert confirmations_answered(run) == 2
    assert not continue_invocation(run.runner, last).ran
    assert tool_runs("pay") == []


def test_answered_twice_the_second_answer_is_refused() -> None:
    run = paused(DjangoSessionService())
    run.answer(pay=CONFIRM)
    with pytest.raises(PauseAlreadyAnsweredError):
        resume_pause(run.pauses["pay"].token, REJECT)
    (last,) = run.answer(book=BOOK_ANSWER)
    assert continue_invocation(run.runner, last).ran
    assert tool_runs("pay") == ["2400 to acme"]  # the first answer stands


def test_a_runner_of_another_app_is_refused_before_anything_is_claimed() -> None:
    run = paused(DjangoSessionService())
    _, last = run.answer(pay=CONFIRM, book=BOOK_ANSWER)
    other = runner_for(payments_app(name="other_app"), DjangoSessionService())
    result = continue_invocation(other, last)
    assert (
        not result.ran
        and "'adk_payments'" in (result.reason or "")
        and "'other_app'" in (result.reason or "")
    )
    assert tool_runs("pay") == []
    assert set(continuations(run).values()) == {ContinuationState.QUEUED}  # nothing claimed
    assert continue_invocation(run.runner, last).ran  # the right app still continues it


def test_the_next_stop_is_the_next_group_with_owner_and_app_carried() -> None:
    owner: Any = UserFactory()
    run = paused(DjangoSessionService(), text="Pay acme 2400, book room A, and refund 100.", owner=owner)
    _, last = run.answer(pay=CONFIRM, book=BOOK_ANSWER)
    result = continue_invocation(run.runner, last)
    (refund,) = result.minted
    assert result.ran and refund.claims.name == "refund" and refund.claims.run_id == run.invocation_id
    row = Pause.objects.get(jti=refund.claims.jti)
    assert (row.owner, row.agent, row.thread_id) == (owner, "adk_payments", run.session_id)
    assert row.group is not None and row.group != Pause.objects.get(jti=last.claims.jti).group
    done = continue_invocation(run.runner, resume_pause(refund.token, CONFIRM, user=owner))
    assert done.ran and "refunded 100" in said(done.output) and tool_runs("refund") == ["100"]
    assert tool_runs("pay") == ["2400 to acme"]


def test_async_twins() -> None:
    async def run() -> Any:
        runner = runner_for(payments_app(), DjangoSessionService())
        session_id, events = await afirst_run(runner)
        pauses = await apause_confirmations(
            events,
            agent=runner.app,
            user_id="alice",
            session_id=session_id,
            invocation_id=events[-1].invocation_id,
        )
        answers = {"pay": CONFIRM, "book": BOOK_ANSWER}
        answered = [await aresume_pause(minted.token, answers[minted.claims.name or ""]) for minted in pauses]
        return await acontinue_invocation(runner, answered[-1])

    result = asyncio.run(run())
    assert result.ran and tool_runs("pay") == ["2400 to acme"] and tool_runs("book") == [BOOKED]


def test_answered_over_rest_in_one_process_and_continued_in_another() -> None:
    run = paused(DjangoSessionService())
    settings = dict(connection.settings_dict)
    answers = []
    for name, answer in (("pay", CONFIRM), ("book", BOOK_ANSWER)):  # a process (and a user) each
        with ProcessPoolExecutor(1, mp_context=SPAWN) as pool:
            token = run.pauses[name].token
            answers.append(pool.submit(answer_over_rest, settings, token, answer).result(timeout=180))
    assert [status for status, _ in answers] == [200, 200], answers
    with ProcessPoolExecutor(1, mp_context=SPAWN) as pool:
        ran, reason, words = pool.submit(
            continue_elsewhere, settings, run.pauses["book"].claims.jti, None
        ).result(timeout=180)
    assert (ran, reason) == (True, None) and "paid 2400 to acme" in words
    assert tool_runs("pay") == ["2400 to acme"] and tool_runs("book") == [BOOKED]


def test_three_processes_continuing_at_once_run_the_tool_once() -> None:
    run = paused(DjangoSessionService())
    _, last = run.answer(pay=CONFIRM, book=BOOK_ANSWER)
    with SPAWN.Manager() as manager, ProcessPoolExecutor(3, mp_context=SPAWN) as pool:
        barrier = manager.Barrier(3)
        settings = dict(connection.settings_dict)
        futures = [pool.submit(continue_elsewhere, settings, last.claims.jti, barrier) for _ in range(3)]
        outcomes = [future.result(timeout=180) for future in futures]
    assert sorted(ran for ran, _, _ in outcomes) == [False, False, True], outcomes
    assert {reason for ran, reason, _ in outcomes if not ran} <= {
        "already continued",
        "continuation claimed elsewhere",
    }
    assert tool_runs("pay") == ["2400 to acme"] and tool_runs("book") == [BOOKED]
    assert confirmations_answered(run) == 2


def test_a_message_that_is_not_a_confirmation_does_not_resume_it_but_the_pause_still_does() -> None:
    run = paused(DjangoSessionService())
    chat = types.UserContent("hello?")
    asyncio.run(
        _drain(run.runner.run_async(user_id=run.user_id, session_id=run.session_id, new_message=chat))
    )
    _, last = run.answer(pay=CONFIRM, book=BOOK_ANSWER)
    result = continue_invocation(run.runner, last)
    assert result.ran, result.reason
    assert tool_runs("pay") == ["2400 to acme"]


async def _drain(events: Any) -> None:
    async for _ in events:
        pass
