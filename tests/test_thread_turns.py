"""Continuations of one thread take turns: across processes, and past a holder that crashed."""

from __future__ import annotations

import asyncio
import json
import multiprocessing
import threading
import time
from collections.abc import Callable
from datetime import timedelta
from functools import partial
from typing import Any

import pytest
from django.db import connection, connections
from django.utils import timezone

from tests import lifecycle_processes
from tests.pause_helpers import amint, mint
from tests.test_continuation import next_stop
from turnstate_app.choices import ContinuationState
from turnstate_app.errors import ThreadBusyError
from turnstate_app.keys import THREAD_TURN_CHECKPOINT_ID, thread_turn_key
from turnstate_app.models import CheckpointMetadata, Pause
from turnstate_app.pauses import (
    Continuation,
    acontinue_once,
    aresume_pause,
    continue_once,
    resume_pause,
    thread_turns,
)
from turnstate_app.pauses.thread_turns import ThreadTurn, aturn_of, holding, take_turn, turn_of
from turnstate_app.ports import InMemoryCheckpointCommandPort, ModelCheckpointCommandPort, get_default_store
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


class Clock:
    """``time`` as the turn-taking code reads it: it moves only when the test moves it.

    ``sleep`` blocks until the test has moved the clock to the sleeper's wake-up time, which it
    notes meanwhile. So whether a heartbeat is fresh or stale depends on the test's steps alone,
    never on how fast a loaded machine runs.
    """

    def __init__(self) -> None:
        self.elapsed = 0.0
        self.wall, self.started = time.time(), time.monotonic()
        self.changed = threading.Condition()
        self.waking_at: dict[str, float] = {}  # sleeping thread's name -> when it wakes up

    def time(self) -> float:
        return self.wall + self.elapsed

    def monotonic(self) -> float:
        return self.started + self.elapsed

    def sleep(self, seconds: float) -> None:
        with self.changed:
            name, wake_at = threading.current_thread().name, self.elapsed + seconds
            self.waking_at[name] = wake_at
            self.changed.notify_all()
            self.changed.wait_for(lambda: self.elapsed >= wake_at)
            del self.waking_at[name]

    def advance(self, seconds: float) -> None:
        with self.changed:
            self.elapsed += seconds
            self.changed.notify_all()

    def until(self, predicate: Callable[[], bool], timeout: float = 60) -> bool:
        """Wait until ``predicate()`` holds (checked on each sleep and step, and every 50 ms)."""
        deadline = time.monotonic() + timeout
        with self.changed:
            while not predicate():
                if time.monotonic() > deadline:
                    return False
                self.changed.wait(0.05)
        return True


@pytest.mark.django_db(transaction=True)
def test_a_continuation_running_longer_than_stalled_after_keeps_its_turn(
    turnstate_settings: Any, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """The holder's heartbeat keeps a waiting continuation waiting, however long the holder runs.

    The turn-taking code reads a clock the test moves: the holder runs five times STALLED_AFTER
    on it, each step shorter than STALLED_AFTER and taken only once the holder has beaten at the
    clock's time and the waiter has looked again. A waiter that ignored the heartbeat would take
    the turn over (its row is older than STALLED_AFTER from the second step) and run at once.
    """
    stalled_after, step = 0.3, 0.2  # the heartbeat thread beats every 0.1 s of real time
    turnstate_settings["STALLED_AFTER"] = stalled_after
    clock = Clock()
    monkeypatch.setattr(thread_turns, "time", clock)
    first = mint(thread_id="thread-long", tool_call_id="call-a")
    second = mint(thread_id="thread-long", tool_call_id="call-b")
    resumed = [resume_pause(minted.token, "yes") for minted in (first, second)]
    events: list[str] = []
    outcomes: dict[str, object] = {}
    holding_turn, finish = threading.Event(), threading.Event()

    def holder(continuation: Continuation) -> None:
        events.append("holder entered")
        holding_turn.set()
        assert finish.wait(60)
        events.append("holder left")

    def waiter(continuation: Continuation) -> None:
        events.append("waiter entered")

    def continue_in_thread(name: str, one: Any, run: Callable[[Continuation], None]) -> threading.Thread:
        def target() -> None:
            try:
                outcomes[name] = continue_once(one, run).ran
            except Exception as exc:
                outcomes[name] = exc
            finally:
                connections.close_all()

        thread = threading.Thread(target=target, name=name)
        thread.start()
        return thread

    beats = CheckpointMetadata.objects.filter(thread_id="thread-long", key__startswith="thread_turn:alive:")

    def holder_beat_since(moment: float) -> bool:
        """The holder's heartbeat row says it beat at ``moment`` or after (or the waiter ran)."""
        values = beats.values_list("value", flat=True)
        return any(json.loads(value)["at"] >= clock.wall + moment for value in values) or bool(outcomes)

    def waiter_asleep_past(moment: float) -> bool:
        """The waiter looked at the turn and sleeps until after ``moment`` (or is done)."""
        return clock.waking_at.get("waiter", moment) > moment or "waiter" in outcomes

    threads = [continue_in_thread("holder", resumed[0], holder)]
    try:
        assert holding_turn.wait(60)
        threads.append(continue_in_thread("waiter", resumed[1], waiter))
        for _ in range(round(5 * stalled_after / step)):
            assert clock.until(partial(holder_beat_since, clock.elapsed)), "the holder never beat"
            assert clock.until(partial(waiter_asleep_past, clock.elapsed)), "the waiter never waited"
            assert events == ["holder entered"], events  # the waiter waits: it never took the turn over
            clock.advance(step)
        assert clock.elapsed > 4 * stalled_after
    finally:
        finish.set()
        threads[0].join(60)
        clock.advance(stalled_after)  # past the waiter's sleep (never longer): it finds the turn given back
    threads[-1].join(60)
    assert not any(thread.is_alive() for thread in threads)
    assert outcomes == {"holder": True, "waiter": True}
    assert events == ["holder entered", "holder left", "waiter entered"]
    assert "took over a turn" not in caplog.text
    assert not CheckpointMetadata.objects.filter(
        thread_id="thread-long", checkpoint_id=THREAD_TURN_CHECKPOINT_ID
    ).exists()


def hold_turn(thread_id: str, value: str) -> None:
    """The thread's turn row as another process holding it writes it."""
    ModelCheckpointCommandPort().write_metadata_sync(
        thread_id=thread_id,
        checkpoint_id=THREAD_TURN_CHECKPOINT_ID,
        key=thread_turn_key(),
        value=value,
        task_id=None,
    )


@pytest.mark.django_db
def test_a_turn_left_by_a_crashed_holder_is_taken_over_after_stalled_after(turnstate_settings: Any) -> None:
    turnstate_settings["STALLED_AFTER"] = 30
    store = get_default_store()
    place = {"thread_id": "thread-c", "checkpoint_id": THREAD_TURN_CHECKPOINT_ID, "key": thread_turn_key()}
    crashed = json.dumps({"holder": "gone", "since": time.time() - 31})
    ModelCheckpointCommandPort().write_metadata_sync(**place, value=crashed, task_id=None)
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
    hold_turn("thread-busy", holder.value)

    def run(continuation: Continuation) -> None:
        pytest.fail("ran while another continuation held the thread")

    with pytest.raises(ThreadBusyError):
        continue_once(resumed, run)
    pause = Pause.objects.get(jti=resumed.claims.jti)
    assert pause.continuation == ContinuationState.FAILED  # given back: nothing ran
    assert pause.continuation_reason and pause.continuation_retry_at is not None
    assert list(Pause.objects.redeliverable()) == [pause]  # a redelivery may run it
    later = timezone.now() + timedelta(seconds=1)  # past STALLED_AFTER: nothing holds it, so not stalled
    assert not Pause.objects.stalled(later).exists()
    holder.release()
    assert continue_once(resumed, lambda continuation: "now").output == "now"
    assert Pause.objects.get(jti=resumed.claims.jti).continuation == ContinuationState.CONTINUED


def test_turns_on_the_memory_port_too() -> None:
    store = TurnCheckpointStore(commands=InMemoryCheckpointCommandPort())
    turn = take_turn(store, "thread-m", wait=0)
    with pytest.raises(ThreadBusyError):
        take_turn(store, "thread-m", wait=0.05)
    turn.release()
    take_turn(store, "thread-m", wait=0).release()


@pytest.mark.django_db(transaction=True)
async def test_async_continuations_of_one_thread_in_one_event_loop_take_turns() -> None:
    """The waiter sleeps on the event loop, not in the thread its holder needs to finish."""
    tokens = [(await amint(thread_id="thread-loop", tool_call_id=f"call-{i}")).token for i in range(2)]
    resumed = [await aresume_pause(token, i) for i, token in enumerate(tokens)]
    spans: list[tuple[float, float]] = []

    async def run(continuation: Continuation) -> None:
        entered = time.monotonic()
        await asyncio.sleep(0.2)
        await continuation.amint_next(**next_stop())  # needs the thread the waiter must not block
        spans.append((entered, time.monotonic()))

    results = await asyncio.gather(*(acontinue_once(one, run) for one in resumed))
    assert [result.ran for result in results] == [True, True]
    first, second = sorted(spans)
    assert first[1] <= second[0], spans


@pytest.mark.django_db
def test_a_turn_is_as_old_as_its_holding_not_its_waiting(turnstate_settings: Any) -> None:
    """A waiter that finally takes the turn must not look stalled to the next one at once."""
    turnstate_settings["STALLED_AFTER"] = 0.2
    store = get_default_store()
    holder = take_turn(store, "thread-w", wait=0)
    waiter = ThreadTurn(store, "thread-w")
    assert not waiter.try_take()
    time.sleep(0.25)  # the holder is stale now, and the waiter has waited as long
    taken_at = time.time()
    assert waiter.try_take()
    assert json.loads(CheckpointMetadata.objects.get(key=thread_turn_key()).value)["since"] >= taken_at
    assert not ThreadTurn(store, "thread-w").try_take()  # the new holder is not stale
    holder.release()  # the old holder's release leaves the new holder's row alone
    assert CheckpointMetadata.objects.filter(key=thread_turn_key()).exists()
    waiter.release()


@pytest.mark.django_db
def test_the_holder_of_a_turn_takes_it_again_without_waiting_on_itself() -> None:
    """A continuation that pauses its thread again (``pause_interrupts`` inside ``run``) holds the turn."""
    store = get_default_store()
    with turn_of(store, "thread-r"):
        held = CheckpointMetadata.objects.get(key=thread_turn_key()).value
        started = time.monotonic()
        with turn_of(store, "thread-r"):
            assert CheckpointMetadata.objects.get(key=thread_turn_key()).value == held
        assert time.monotonic() - started < 1
        assert CheckpointMetadata.objects.get(key=thread_turn_key()).value == held  # the inner left it held
        with pytest.raises(ThreadBusyError):
            take_turn(store, "thread-r", wait=0.05)  # another context still waits
    assert not CheckpointMetadata.objects.filter(key=thread_turn_key()).exists()


@pytest.mark.django_db(transaction=True)
async def test_async_code_holding_a_turn_takes_it_again_without_waiting() -> None:
    """``apause_interrupts`` inside an async continuation: the same re-entrant turn."""
    store = get_default_store()
    held = CheckpointMetadata.objects.filter(thread_id="thread-ar", key=thread_turn_key())
    async with aturn_of(store, "thread-ar"):
        started = time.monotonic()
        async with aturn_of(store, "thread-ar"):
            assert await held.aexists()
        assert time.monotonic() - started < 1
        assert await held.aexists()  # the inner block left the turn held
    assert not await held.aexists()


@pytest.mark.django_db
def test_a_holder_beats_only_while_the_turn_row_still_names_it() -> None:
    store = get_default_store()
    turn = take_turn(store, "thread-b", wait=0)
    beats = CheckpointMetadata.objects.filter(thread_id="thread-b", key__startswith="thread_turn:alive:")
    assert turn.beat()
    assert beats.count() == 1
    hold_turn("thread-b", json.dumps({"holder": "someone-else", "since": time.time()}))
    beats.delete()
    assert not turn.beat()  # taken over: it writes nothing more
    assert not beats.exists()


@pytest.mark.django_db(transaction=True)
def test_a_holder_writing_its_outcome_after_its_run_is_not_taken_over(turnstate_settings: Any) -> None:
    """Between the end of the run and the turn given back (the outcome is written then), the last
    heartbeat stays: a waiter seeing a turn row older than STALLED_AFTER must not take it over."""
    turnstate_settings["STALLED_AFTER"] = 0.6
    store = get_default_store()
    holder = take_turn(store, "thread-o", wait=0)
    holder.value = json.dumps({"holder": holder.holder, "since": time.time() - 60})  # held for long
    hold_turn("thread-o", holder.value)
    beats = CheckpointMetadata.objects.filter(thread_id="thread-o", key__startswith="thread_turn:alive:")
    with holding(holder):
        deadline = time.monotonic() + 30
        while not beats.exists():  # the heartbeat thread has beaten at least once
            assert time.monotonic() < deadline, "the holder never beat"
            time.sleep(0.02)
    waiter = ThreadTurn(store, "thread-o")
    assert not waiter.try_take()  # the run is over, the turn not yet given back: the holder is alive
    holder.release()
    assert not beats.exists()  # given back, its heartbeat goes with it
    assert waiter.try_take()
    waiter.release()
