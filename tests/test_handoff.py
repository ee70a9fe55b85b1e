"""Handing answered pauses to RESUME_HANDLER: awaited, bounded, stamped only when it returned.

The handler runs on the hand-off worker's own database connection, so these tests commit
for real (``transaction=True``): the worker must see the answered rows.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import Awaitable, Iterator
from datetime import timedelta
from io import StringIO
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.core.management import CommandError, call_command
from django.db import OperationalError, connection
from django.utils import timezone

from tests.api_support import RESUME, client_for
from tests.pause_helpers import mint
from turnstate_app.managers import PauseQuerySet
from turnstate_app.models import CheckpointMetadata, Pause
from turnstate_app.pauses import ResumedPause, aresume_pause, redeliver, resume_pause
from turnstate_app.ports.sealing import value_mac

pytestmark = pytest.mark.django_db(transaction=True)

HANDLED: list[ResumedPause] = []
RELEASE = threading.Event()
DEADLINE = 10.0  # seconds: how long a test waits for a hand-off running in the background


@pytest.fixture(autouse=True)
def _fresh() -> Iterator[None]:
    HANDLED.clear()
    RELEASE.clear()
    yield
    RELEASE.set()  # never leave a worker blocked behind a failed test


def recording_handler(resumed: ResumedPause) -> None:
    HANDLED.append(resumed)


def failing_handler(resumed: ResumedPause) -> None:
    raise RuntimeError("queue unavailable")


async def async_handler(resumed: ResumedPause) -> None:
    await asyncio.sleep(0)
    HANDLED.append(resumed)


async def failing_async_handler(resumed: ResumedPause) -> None:
    await asyncio.sleep(0)
    raise RuntimeError("queue unavailable")


def awaitable_returning_handler(resumed: ResumedPause) -> Awaitable[None]:
    return async_handler(resumed)


def blocking_handler(resumed: ResumedPause) -> None:
    RELEASE.wait(timeout=30)  # bounded, so that code which waits on it still ends
    HANDLED.append(resumed)


def handed_off(jti: str) -> bool:
    return Pause.objects.filter(jti=jti, handed_off_at__isnull=False).exists()


def awaiting(jti: str) -> bool:
    return Pause.objects.awaiting_handoff().filter(jti=jti).exists()


def queued(jti: str) -> bool:
    """Handed off, its continuation waiting for a worker: the hand-off moves no state."""
    return Pause.objects.queued().filter(jti=jti, continuation="queued").exists()


def wait_until_handed_off(jti: str) -> None:
    deadline = time.monotonic() + DEADLINE
    while not handed_off(jti):
        assert time.monotonic() < deadline, f"pause {jti} was not stamped within {DEADLINE}s"
        time.sleep(0.02)


def answered_unhanded(n: int, turnstate_settings: dict[str, Any]) -> str:
    """Pause ``n``, answered while the handler failed: awaiting redelivery."""
    turnstate_settings["RESUME_HANDLER"] = "tests.test_handoff.failing_handler"
    minted = mint(n)
    resume_pause(minted.token, {"a": n})
    assert awaiting(minted.claims.jti)
    return minted.claims.jti


# -- async handlers are awaited ----------------------------------------------------------


@pytest.mark.parametrize("handler", ["async_handler", "awaitable_returning_handler"])
def test_an_async_handler_is_awaited_before_the_stamp(
    turnstate_settings: dict[str, Any], handler: str
) -> None:
    turnstate_settings["RESUME_HANDLER"] = f"tests.test_handoff.{handler}"
    minted = mint(1)
    resume_pause(minted.token, "x")
    assert [r.answer for r in HANDLED] == ["x"]
    assert handed_off(minted.claims.jti)


def test_a_raising_async_handler_leaves_the_pause_awaiting_handoff(
    turnstate_settings: dict[str, Any],
) -> None:
    turnstate_settings["RESUME_HANDLER"] = "tests.test_handoff.failing_async_handler"
    minted = mint(1)
    assert resume_pause(minted.token, "x").answer == "x"
    assert awaiting(minted.claims.jti)


async def test_aresume_pause_awaits_an_async_handler(turnstate_settings: dict[str, Any]) -> None:
    from asgiref.sync import sync_to_async

    turnstate_settings["RESUME_HANDLER"] = "tests.test_handoff.async_handler"
    minted = await sync_to_async(mint)(1)
    await aresume_pause(minted.token, "x")
    assert [r.answer for r in HANDLED] == ["x"]
    assert await sync_to_async(handed_off)(minted.claims.jti)


def test_redelivery_awaits_an_async_handler(turnstate_settings: dict[str, Any]) -> None:
    jti = answered_unhanded(1, turnstate_settings)
    turnstate_settings["RESUME_HANDLER"] = "tests.test_handoff.async_handler"
    assert redeliver().delivered == 1
    assert [r.answer for r in HANDLED] == [{"a": 1}]
    assert handed_off(jti) and queued(jti)


# -- a committed answer is reported as committed -----------------------------------------


def refuse_stamp(self: Any, *args: Any, **kwargs: Any) -> bool:
    raise OperationalError("the database refused the hand-off stamp")


def test_a_failed_stamp_is_logged_and_the_answer_still_returned(
    turnstate_settings: dict[str, Any], monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    turnstate_settings["RESUME_HANDLER"] = "tests.test_handoff.recording_handler"
    monkeypatch.setattr(PauseQuerySet, "mark_handed_off", refuse_stamp)
    minted = mint(1)
    with caplog.at_level(logging.ERROR, logger="turnstate_app"):
        assert resume_pause(minted.token, "x").answer == "x"
    assert len(HANDLED) == 1
    assert awaiting(minted.claims.jti)
    assert minted.claims.jti in caplog.text and "handed_off_at" in caplog.text


@pytest.mark.parametrize("atomic_requests", [False, True], ids=["autocommit", "ATOMIC_REQUESTS"])
def test_rest_reports_a_committed_answer_when_the_stamp_fails(
    turnstate_settings: dict[str, Any], monkeypatch: pytest.MonkeyPatch, atomic_requests: bool
) -> None:
    turnstate_settings["RESUME_HANDLER"] = "tests.test_handoff.recording_handler"
    monkeypatch.setitem(connection.settings_dict, "ATOMIC_REQUESTS", atomic_requests)
    monkeypatch.setattr(PauseQuerySet, "mark_handed_off", refuse_stamp)
    minted = mint(1)
    client = client_for(get_user_model().objects.create_user("someone"))
    client.raise_request_exception = False
    response = client.post(RESUME, {"token": minted.token, "answer": "x"}, format="json")
    assert response.status_code == 200, response.content
    assert response.json() == {"jti": minted.claims.jti, "status": "answered", "resumable": True}
    assert len(HANDLED) == 1
    assert awaiting(minted.claims.jti)
    retry = client.post(RESUME, {"token": minted.token, "answer": "x"}, format="json")
    assert retry.status_code == 409 and retry.json()["code"] == "already_answered"


# -- a hanging handler never holds the caller --------------------------------------------


def test_a_hanging_handler_does_not_hold_the_caller(turnstate_settings: dict[str, Any]) -> None:
    turnstate_settings["HANDOFF_TIMEOUT"] = 0.5
    turnstate_settings["RESUME_HANDLER"] = "tests.test_handoff.blocking_handler"
    minted = mint(1)
    jti = minted.claims.jti
    started = time.monotonic()
    resumed = resume_pause(minted.token, "x")
    elapsed = time.monotonic() - started
    assert elapsed < 0.5 + 5, f"resume_pause waited {elapsed:.1f}s on the handler"
    assert resumed.answer == "x"
    assert Pause.objects.get(jti=jti).status == "answered"
    assert awaiting(jti) and HANDLED == []
    RELEASE.set()
    wait_until_handed_off(jti)
    assert [r.answer for r in HANDLED] == ["x"]


def test_a_hanging_handler_does_not_hold_the_rest_response(turnstate_settings: dict[str, Any]) -> None:
    turnstate_settings["HANDOFF_TIMEOUT"] = 0.5
    turnstate_settings["RESUME_HANDLER"] = "tests.test_handoff.blocking_handler"
    minted = mint(1)
    started = time.monotonic()
    response = client_for(get_user_model().objects.create_user("someone")).post(
        RESUME, {"token": minted.token, "answer": "x"}, format="json"
    )
    assert time.monotonic() - started < 0.5 + 5
    assert response.status_code == 200 and response.json()["status"] == "answered"
    assert awaiting(minted.claims.jti)
    RELEASE.set()
    wait_until_handed_off(minted.claims.jti)


def test_a_quick_handler_is_stamped_before_the_caller_returns(turnstate_settings: dict[str, Any]) -> None:
    turnstate_settings["RESUME_HANDLER"] = "tests.test_handoff.recording_handler"
    minted = mint(1)
    resume_pause(minted.token, "x")
    assert handed_off(minted.claims.jti)
    assert queued(minted.claims.jti) and not awaiting(minted.claims.jti)


# -- redelivery reports what it cannot read and carries on -------------------------------


def undecodable(key: str, value: str) -> None:
    """A row the app wrote (its MAC verifies) that its codec cannot read back, as a bug or an
    older build would leave it; a row changed at rest is refused by its MAC instead."""
    row = CheckpointMetadata.objects.get(key=key)
    mac = value_mac(row.thread_id, row.checkpoint_id, row.key, value, None)
    CheckpointMetadata.objects.filter(pk=row.pk).update(value=value, encryption_key_id=None, value_mac=mac)


def test_redeliver_reports_unreadable_pauses_and_hands_over_the_rest(
    turnstate_settings: dict[str, Any],
) -> None:
    bad_turn = answered_unhanded(1, turnstate_settings)
    bad_answer = answered_unhanded(2, turnstate_settings)
    good = answered_unhanded(3, turnstate_settings)
    undecodable(f"turn_state:{bad_turn}", "not a record")
    undecodable(f"answer:{bad_answer}", "{not json")
    turnstate_settings["RESUME_HANDLER"] = "tests.test_handoff.recording_handler"
    out, err = StringIO(), StringIO()
    with pytest.raises(CommandError, match="2 pause"):
        call_command("turnstate_redeliver", "--older-than", "0", stdout=out, stderr=err)
    assert [r.claims.jti for r in HANDLED] == [good]
    assert handed_off(good)
    assert awaiting(bad_turn) and awaiting(bad_answer)
    report = err.getvalue()
    assert bad_turn in report and bad_answer in report and good not in report
    assert "redelivered 1 pause(s)" in out.getvalue() and "2 unreadable" in out.getvalue()


def test_redeliver_lists_unreadable_pauses_with_their_reason(turnstate_settings: dict[str, Any]) -> None:
    jti = answered_unhanded(1, turnstate_settings)
    undecodable(f"answer:{jti}", "{not json")
    turnstate_settings["RESUME_HANDLER"] = "tests.test_handoff.recording_handler"
    result = redeliver()
    assert (result.delivered, result.failed) == (0, 0)
    [(skipped, reason)] = result.unreadable
    assert skipped == jti and "answer" in reason


def deleting_handler(resumed: ResumedPause) -> None:
    """Erases the other pauses of the test, as a purge running meanwhile would."""
    HANDLED.append(resumed)
    Pause.objects.exclude(jti=resumed.claims.jti).delete()
    CheckpointMetadata.objects.exclude(thread_id=resumed.claims.thread_id).delete()


def test_redeliver_skips_a_pause_deleted_after_it_was_listed(turnstate_settings: dict[str, Any]) -> None:
    first = answered_unhanded(1, turnstate_settings)
    second = answered_unhanded(2, turnstate_settings)
    turnstate_settings["RESUME_HANDLER"] = "tests.test_handoff.deleting_handler"
    result = redeliver()
    assert [r.claims.jti for r in HANDLED] == [first]
    assert (result.delivered, result.failed, result.unreadable, result.gone) == (1, 0, (), 1)
    assert not Pause.objects.filter(jti=second).exists()


def test_redelivery_of_a_hanging_handler_is_bounded(turnstate_settings: dict[str, Any]) -> None:
    jti = answered_unhanded(1, turnstate_settings)
    turnstate_settings["HANDOFF_TIMEOUT"] = 0.5
    turnstate_settings["RESUME_HANDLER"] = "tests.test_handoff.blocking_handler"
    started = time.monotonic()
    result = redeliver()
    assert time.monotonic() - started < 0.5 + 5
    assert (result.delivered, result.running) == (0, 1)
    RELEASE.set()
    wait_until_handed_off(jti)


# -- the workers: a fixed few threads, a bounded exit ------------------------------------


def test_the_workers_are_a_fixed_few_threads_whatever_the_number_of_hand_offs() -> None:
    from turnstate_app.pauses.workers import HandoffWorkers

    pool = HandoffWorkers(2)
    names = [pool.submit(lambda: threading.current_thread().name) for _ in range(20)]
    try:
        assert len({future.result(timeout=DEADLINE) for future in names}) <= 2
        assert len(pool._threads) == 2
    finally:
        pool.shutdown(timeout=DEADLINE)
    assert not any(thread.is_alive() for thread in pool._threads)


def test_shutdown_waits_a_bounded_time_and_drops_queued_jobs() -> None:
    from turnstate_app.pauses.workers import HandoffWorkers

    pool = HandoffWorkers(1)
    running = threading.Event()

    def hang() -> bool:
        running.set()
        return RELEASE.wait(timeout=30)

    hanging = pool.submit(hang)
    queued = pool.submit(lambda: "never run")
    assert running.wait(timeout=DEADLINE)
    started = time.monotonic()
    pool.shutdown(timeout=0.2)
    assert time.monotonic() - started < 0.2 + 5
    assert queued.cancelled() and not hanging.done()
    with pytest.raises(RuntimeError, match="shut down"):
        pool.submit(lambda: None)
    RELEASE.set()
    assert hanging.result(timeout=DEADLINE) is True


def test_redeliver_dry_run_lists_what_it_would_hand_and_hands_nothing(
    turnstate_settings: dict[str, Any],
) -> None:
    """``--dry-run`` names the answers awaiting their hand-off and calls no handler; ``--jti=``
    narrows it to one; a pause that is not one to hand again is refused by name."""
    first, second = answered_unhanded(1, turnstate_settings), answered_unhanded(2, turnstate_settings)
    assert "RESUME_HANDLER raised RuntimeError: queue unavailable" in str(
        Pause.objects.get(jti=first).continuation_reason
    )
    turnstate_settings["RESUME_HANDLER"] = "tests.test_handoff.recording_handler"
    out = StringIO()
    call_command("turnstate_redeliver", "--older-than", "0", "--dry-run", stdout=out)
    assert f"would hand again: pause {first}" in out.getvalue()
    assert f"would hand again: pause {second}" in out.getvalue()
    assert "2 pause(s) would be handed again" in out.getvalue()
    assert HANDLED == [] and awaiting(first) and awaiting(second)
    one = StringIO()
    call_command("turnstate_redeliver", f"--jti={second}", "--dry-run", stdout=one)
    assert one.getvalue().splitlines() == [
        f"would hand again: pause {second}",
        "1 pause(s) would be handed again",
    ]
    with pytest.raises(CommandError, match="is not one to hand again"):
        call_command("turnstate_redeliver", "--jti=no-such-pause", stdout=StringIO())
    call_command("turnstate_redeliver", f"--jti={second}", stdout=StringIO())
    assert [resumed.claims.jti for resumed in HANDLED] == [second] and awaiting(first)


# -- a hand-off that reached a queue whose worker never claimed it -----------------------


def backdate_handoff(jti: str, seconds: float) -> None:
    Pause.objects.filter(jti=jti).update(handed_off_at=timezone.now() - timedelta(seconds=seconds))


def test_a_pause_handed_off_but_never_claimed_is_handed_again_after_stalled_after(
    turnstate_settings: dict[str, Any],
) -> None:
    """The queue took the task and its worker died before the claim, writing nothing: the pause
    stays queued, and redelivery hands it again once STALLED_AFTER has passed since the hand-off."""
    turnstate_settings["RESUME_HANDLER"] = "tests.test_handoff.recording_handler"
    turnstate_settings["STALLED_AFTER"] = 60
    minted = mint(1)
    jti = minted.claims.jti
    resume_pause(minted.token, {"a": 1})
    wait_until_handed_off(jti)
    assert redeliver().delivered == 0  # handed off a moment ago: its worker may still come
    backdate_handoff(jti, 61)
    assert [pause.jti for pause in Pause.objects.lost_in_queue(timezone.now())] == [jti]
    result = redeliver()
    assert (result.delivered, result.listed) == (1, (jti,))
    assert [resumed.claims.jti for resumed in HANDLED] == [jti, jti]
    assert queued(jti)  # handed off anew, stamped now: not handed again before STALLED_AFTER
    assert redeliver().delivered == 0


def test_a_group_waiting_for_its_other_answers_is_not_handed_again(
    turnstate_settings: dict[str, Any],
) -> None:
    turnstate_settings["RESUME_HANDLER"] = "tests.test_handoff.recording_handler"
    turnstate_settings["STALLED_AFTER"] = 60
    first = mint(1, group="g-lost", thread_id="thread-lost", tool_call_id="call-1")
    mint(2, group="g-lost", thread_id="thread-lost", tool_call_id="call-2")
    resume_pause(first.token, {"a": 1})
    wait_until_handed_off(first.claims.jti)
    backdate_handoff(first.claims.jti, 3600)
    assert not Pause.objects.lost_in_queue(timezone.now()).exists()  # the other answer is still awaited
    assert redeliver().delivered == 0
