"""Two real processes answer the last two pauses of a group at once: the run continues once."""

from __future__ import annotations

import multiprocessing
from concurrent.futures import ProcessPoolExecutor

import pytest
from django.db import connection

from tests.contrib.pydantic_ai.agents import first_run, tool_runs, travel_agent
from tests.contrib.pydantic_ai.conversations import sync
from tests.contrib.pydantic_ai.processes import answer_then_continue
from turnstate_app.contrib.pydantic_ai import DjangoConversationStore, pause_deferred

pytestmark = pytest.mark.django_db(transaction=True)
SPAWN = multiprocessing.get_context("spawn")
ROUNDS = 3


def test_two_processes_completing_a_group_at_once_continue_it_once() -> None:
    agent = travel_agent()
    store = DjangoConversationStore()
    books, dates = [], []
    for n in range(ROUNDS):
        result = first_run(agent, f"race-{n}")
        sync(store.save, result)
        by_call = {
            p.claims.tool_call_id: p.token
            for p in pause_deferred(result, store=store, run_id=f"run-{n}", session_id="s", agent=agent)
        }
        books.append((by_call["call-book"], {"approved": True}))
        dates.append((by_call["call-date"], f"day {n}"))

    with SPAWN.Manager() as manager, ProcessPoolExecutor(2, mp_context=SPAWN) as pool:
        barrier = manager.Barrier(2)
        settings = dict(connection.settings_dict)
        futures = [pool.submit(answer_then_continue, settings, rounds, barrier) for rounds in (books, dates)]
        left, right = (future.result(timeout=180) for future in futures)

    for n, pair in enumerate(zip(left, right, strict=True)):
        ran = sorted(outcome[0] for outcome in pair)
        assert ran == [False, True], (n, pair)
        [loser_reason] = [reason for did_run, reason in pair if not did_run]
        assert loser_reason in {"already continued", "continuation claimed elsewhere"}, pair
        stored = sync(store.load, f"race-{n}")
        assert stored is not None and stored.deferred_tool_requests is None
    assert tool_runs("book_flight") == ROUNDS  # once per run, never twice
