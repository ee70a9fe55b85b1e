"""The promise: a pause minted in one process is answered, exactly once, from others."""

from __future__ import annotations

import json
import multiprocessing
import os
from collections import Counter
from concurrent.futures import ProcessPoolExecutor

import pytest
from django.db import connection

from tests.pause_helpers import mint
from tests.processes import race_to_answer, resume_elsewhere
from turnstate_app.checkpoints import answer_key
from turnstate_app.models import CheckpointMetadata, Pause
from turnstate_app.turnstate import TurnCheckpoint

pytestmark = pytest.mark.django_db(transaction=True)
SPAWN = multiprocessing.get_context("spawn")


def test_a_second_process_resumes_and_gets_the_same_checkpoint() -> None:
    minted = mint(1, messages=[{"role": "user", "content": "Book me a flight."}])
    with ProcessPoolExecutor(1, mp_context=SPAWN) as pool:
        result = pool.submit(
            resume_elsewhere, dict(connection.settings_dict), minted.token, "May 3rd"
        ).result()
    assert result["pid"] != os.getpid()
    assert result["jti"] == minted.claims.jti
    assert result["answer"] == "May 3rd"
    checkpoint = TurnCheckpoint.decode(result["checkpoint"])
    assert checkpoint.messages == [{"role": "user", "content": "Book me a flight."}]
    assert checkpoint.thread_id == "thread-1" and checkpoint.run_id == "run-1"
    assert Pause.objects.get().status == "answered"


def test_eight_processes_racing_to_answer_one_pause_have_one_winner() -> None:
    minted = mint(1)
    barrier = SPAWN.Barrier(8)
    results = SPAWN.Queue()
    racers = [
        SPAWN.Process(
            target=race_to_answer,
            args=(dict(connection.settings_dict), minted.token, worker, barrier, results),
        )
        for worker in range(8)
    ]
    for racer in racers:
        racer.start()
    outcomes = dict(results.get(timeout=120) for _ in racers)
    for racer in racers:
        racer.join(timeout=30)
    assert Counter(outcomes.values()) == Counter({"answered": 1, "already_answered": 7}), outcomes
    [winner] = [worker for worker, outcome in outcomes.items() if outcome == "answered"]
    [answer] = CheckpointMetadata.objects.filter(key=answer_key(minted.claims))
    assert json.loads(answer.value) == {"worker": winner}
    assert Pause.objects.get().status == "answered"
