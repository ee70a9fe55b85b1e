"""Continuations of one thread take turns: across processes, and past a holder that crashed."""

from __future__ import annotations

import json
import multiprocessing
import time
from typing import Any

import pytest
from django.db import connection

from tests import lifecycle_processes
from tests.pause_helpers import mint
from turnstate_app.errors import ThreadBusyError
from turnstate_app.keys import THREAD_TURN_CHECKPOINT_ID, continuation_key, thread_turn_key
from turnstate_app.models import CheckpointMetadata
from turnstate_app.pauses import Continuation, continue_once, resume_pause
from turnstate_app.pauses.thread_turns import take_turn
from turnstate_app.ports import InMemoryCheckpointCommandPort, get_default_store
from turnstate_app.turnstate import TurnCheckpointStore

SPAWN = multiprocessing.get_context("spawn")


@pytest.mark.django_db(transaction=True)
def test_two_pauses_of_one_thread_continued_at_once_run_one_after_the_other() -> None:
    first = mint(thread_id="thread-t", tool_call_id="call-a")
    second = mint(thread_id="thread-t", tool_call_id="call-b")
    for minted in (first, second):
        resume_pause(minted.token, "yes")
    barrier = SPAWN.Barrier(2)
    results = SPAWN.Queue()
    racers = [
        SPAWN.Process(
            target=lifecycle_processes.continue_answered,
            args=(dict(connection.settings_dict), minted.claims.jti, "turns", 0.4, barrier, results),
        )
        for minted in (first, second)
    ]
    for racer in racers:
        racer.start()
    outcomes = {jti: (ran, reason) for jti, ran, reason in (results.get(timeout=120) for _ in racers)}
    for racer in racers:
        racer.join(timeout=30)
    assert outcomes == {first.claims.jti: (True, None), second.claims.jti: (True, None)}
    earlier, later = lifecycle_processes.runs("turns")
    assert earlier["pid"] != later["pid"]
    assert earlier["left"] <= later["entered"], (earlier, later)  # strictly one after the other
    assert not CheckpointMetadata.objects.filter(key=thread_turn_key()).exists()  # given back


@pytest.mark.django_db
def test_a_turn_left_by_a_crashed_holder_is_taken_over_after_stalled_after(turnstate_settings: Any) -> None:
    turnstate_settings["STALLED_AFTER"] = 30
    store = get_default_store()
    place = {"thread_id": "thread-c", "checkpoint_id": THREAD_TURN_CHECKPOINT_ID, "key": thread_turn_key()}
    crashed = json.dumps({"holder": "gone", "since": time.time() - 31})
    CheckpointMetadata.objects.create(**place, value=crashed)
    turn = take_turn(store, "thread-c", wait=1)
    assert CheckpointMetadata.objects.get(**place).value == turn.value
    turn.release()
    assert not CheckpointMetadata.objects.filter(**place).exists()


@pytest.mark.django_db
def test_a_busy_thread_gives_the_continuation_back_untouched(turnstate_settings: Any) -> None:
    turnstate_settings["STALLED_AFTER"] = 0.3
    resumed = resume_pause(mint(thread_id="thread-busy").token, "yes")
    holder = take_turn(get_default_store(), "thread-busy", wait=0)
    holder.value = json.dumps({"holder": "alive", "since": time.time() + 3600})  # never stale
    CheckpointMetadata.objects.filter(key=thread_turn_key()).update(value=holder.value)

    def run(continuation: Continuation) -> None:
        pytest.fail("ran while another continuation held the thread")

    with pytest.raises(ThreadBusyError):
        continue_once(resumed, run)
    claim = continuation_key(resumed.claims.jti)
    assert not CheckpointMetadata.objects.filter(key=claim).exists()  # a redelivery may run it
    holder.release()
    assert continue_once(resumed, lambda continuation: "now").output == "now"


def test_turns_on_the_memory_port_too() -> None:
    store = TurnCheckpointStore(commands=InMemoryCheckpointCommandPort())
    turn = take_turn(store, "thread-m", wait=0)
    with pytest.raises(ThreadBusyError):
        take_turn(store, "thread-m", wait=0.05)
    turn.release()
    take_turn(store, "thread-m", wait=0).release()
