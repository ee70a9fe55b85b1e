"""Two processes pausing the same thread's head at once mint one pause per interrupt, not two."""

from __future__ import annotations

import multiprocessing
import uuid
from collections import Counter

import pytest
from django.db import connection

from tests.contrib.langgraph.approvals import start, trip_approvals
from tests.contrib.langgraph.processes import pause_elsewhere
from turnstate_app.contrib.langgraph import DjangoCheckpointSaver
from turnstate_app.models import Pause

pytestmark = pytest.mark.django_db(transaction=True)
SPAWN = multiprocessing.get_context("spawn")
ROUNDS = 4


def test_two_processes_pausing_one_head_at_once_mint_each_interrupt_once() -> None:
    graph = trip_approvals(DjangoCheckpointSaver())
    threads = [f"race-{uuid.uuid4().hex[:12]}" for _ in range(ROUNDS)]
    for thread in threads:
        start(graph, thread)  # each stops at its two parallel approvals
    barrier = SPAWN.Barrier(2)
    results = SPAWN.Queue()
    racers = [
        SPAWN.Process(
            target=pause_elsewhere, args=(dict(connection.settings_dict), threads, barrier, results, n)
        )
        for n in range(2)
    ]
    for racer in racers:
        racer.start()
    outcomes = dict(results.get(timeout=240) for _ in racers)
    for racer in racers:
        racer.join(timeout=30)
    assert all(isinstance(outcome, list) for outcome in outcomes.values()), outcomes
    per_interrupt = Counter(
        Pause.objects.filter(thread_id__in=threads).values_list("thread_id", "interrupt_id")
    )
    assert len(per_interrupt) == 2 * ROUNDS
    assert set(per_interrupt.values()) == {1}, per_interrupt
