"""Continuing a run exactly once: claimed once, recorded when it returns, crashed when it raised,
stalled when its process died after the claim."""

from __future__ import annotations

import time
from datetime import timedelta
from io import StringIO
from typing import Any

import pytest
from django.core.management import CommandError, call_command
from django.db import OperationalError, connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from tests.pause_helpers import amint, mint, mint_fields
from tests.test_pauses import data_statements
from turnstate_app.choices import ContinuationState
from turnstate_app.models import Pause
from turnstate_app.pauses import (
    Continuation,
    ContinuationRefused,
    ContinueResult,
    ResumedPause,
    acontinue_once,
    aresume_pause,
    continue_once,
    resume_pause,
)
from turnstate_app.status import lifecycle_status
from turnstate_app.turnstate import TurnCheckpointStore

pytestmark = pytest.mark.django_db


def test_a_continuation_runs_once_and_a_redelivery_runs_nothing() -> None:
    minted = mint()
    resumed = resume_pause(minted.token, {"ok": True})
    runs: list[Any] = []

    def run(continuation: Continuation) -> str:
        runs.append(continuation.resumed.answer)
        return "done"

    first = continue_once(resumed, run)
    again = continue_once(resumed, run)
    assert first == ContinueResult(ran=True, output="done", minted=[], reason=None)
    assert again == ContinueResult(ran=False, reason="already continued")
    assert runs == [{"ok": True}]
    assert Pause.objects.get(jti=minted.claims.jti).continuation == ContinuationState.CONTINUED


def test_a_refused_continuation_is_recorded_as_refused() -> None:
    resumed = resume_pause(mint().token, "no")
    runs: list[str] = []

    def run(continuation: Continuation) -> None:
        runs.append("ran")
        raise ContinuationRefused("the interrupt is no longer pending")

    assert continue_once(resumed, run) == ContinueResult(
        ran=False, reason="the interrupt is no longer pending"
    )
    pause = Pause.objects.get(jti=resumed.claims.jti)
    assert pause.continuation == ContinuationState.REFUSED
    assert pause.continuation_reason == "the interrupt is no longer pending"
    assert lifecycle_status().failed_continuations == 1
    assert continue_once(resumed, run) == ContinueResult(
        ran=False, reason="continuation failed before: the interrupt is no longer pending"
    )
    assert runs == ["ran"]


def die_after_the_claim(resumed: ResumedPause, *, ago: float = 0) -> None:
    """What a worker killed after its claim leaves behind: the claim (queued -> running, ``ago``
    seconds ago), and nothing after it."""
    lead = Pause.objects.get(jti=resumed.claims.jti)
    assert Pause.objects.claim(lead.pk, now=timezone.now() - timedelta(seconds=ago))


def test_a_process_that_died_after_the_claim_shows_as_stalled_after_stalled_after(
    turnstate_settings: Any,
) -> None:
    turnstate_settings["STALLED_AFTER"] = 60
    resumed = resume_pause(mint().token, "yes")
    die_after_the_claim(resumed)
    now = timezone.now()
    assert not Pause.objects.stalled(now).exists()
    assert lifecycle_status(now=now).running == 1
    later = now + timedelta(seconds=61)
    assert list(Pause.objects.stalled(later).values_list("jti", flat=True)) == [resumed.claims.jti]
    assert (lifecycle_status(now=later).running, lifecycle_status(now=later).stalled) == (0, 1)
    assert continue_once(resumed, lambda continuation: pytest.fail("ran twice")) == ContinueResult(
        ran=False, reason="continuation claimed elsewhere"
    )


CONTINUED_BY_THE_HANDLER: list[ContinueResult] = []


def continuing_handler(resumed: ResumedPause) -> None:
    """A RESUME_HANDLER whose run, its cause fixed, returns."""
    CONTINUED_BY_THE_HANDLER.append(continue_once(resumed, lambda continuation: "recovered"))


@pytest.mark.django_db(transaction=True)  # the handler continues on a hand-off worker's connection
def test_a_run_that_raises_is_crashed_at_once_and_handed_again_only_when_an_operator_names_it(
    turnstate_settings: Any,
) -> None:
    CONTINUED_BY_THE_HANDLER.clear()
    resumed = resume_pause(mint().token, "yes")
    jti = resumed.claims.jti
    runs: list[str] = []

    def crash(continuation: Continuation) -> None:
        runs.append("crash")
        raise RuntimeError("the booking API timed out")

    with pytest.raises(RuntimeError, match="the booking API timed out"):
        continue_once(resumed, crash)
    pause = Pause.objects.get(jti=jti)
    assert pause.continuation == ContinuationState.CRASHED
    assert pause.continuation_reason == "RuntimeError: the booking API timed out"
    # Listed as failed at once, and never as stalled, however long it waits.
    for at in (timezone.now(), timezone.now() + timedelta(days=1)):
        status = lifecycle_status(now=at)
        assert (status.failed_continuations, status.stalled, status.running) == (1, 0, 0), status
        assert (status.awaiting_handoff, status.queued) == (0, 0), status
    again = continue_once(resumed, lambda continuation: runs.append("again"))
    assert not again.ran and again.reason is not None
    assert again.reason.startswith("the run raised before: RuntimeError: the booking API timed out")
    assert "turnstate_redeliver --jti" in again.reason
    assert runs == ["crash"]

    turnstate_settings["RESUME_HANDLER"] = f"{__name__}.continuing_handler"
    unnamed = StringIO()
    call_command("turnstate_redeliver", "--older-than", "0", stdout=unnamed)
    assert "redelivered 0 pause(s)" in unnamed.getvalue()
    assert CONTINUED_BY_THE_HANDLER == []
    assert Pause.objects.get(jti=jti).continuation == ContinuationState.CRASHED

    named = StringIO()
    call_command("turnstate_redeliver", f"--jti={jti}", stdout=named)
    assert "redelivered 1 pause(s)" in named.getvalue()
    [handled] = CONTINUED_BY_THE_HANDLER  # handed once, run once
    assert handled == ContinueResult(ran=True, output="recovered")
    assert Pause.objects.get(jti=jti).continuation == ContinuationState.CONTINUED
    assert lifecycle_status().failed_continuations == 0
    with pytest.raises(CommandError, match="not one to hand again"):
        call_command("turnstate_redeliver", f"--jti={jti}", stdout=StringIO())
    assert len(CONTINUED_BY_THE_HANDLER) == 1


@pytest.mark.django_db(transaction=True)  # outside an atomic block, as a worker continues
def test_a_completion_whose_write_fails_once_is_written_again_and_the_run_is_not_run_again() -> None:
    resumed = resume_pause(mint().token, "yes")
    runs: list[str] = []
    completions: list[str] = []

    def fail_the_first_completion(execute: Any, sql: str, params: Any, many: bool, context: Any) -> Any:
        sets_continued = "continued" in sql or "continued" in [str(param) for param in params or ()]
        if sql.lstrip().upper().startswith("UPDATE") and sets_continued:
            completions.append(sql)
            if len(completions) == 1:
                raise OperationalError("the connection was lost")
        return execute(sql, params, many, context)

    def run(continuation: Continuation) -> str:
        runs.append("ran")
        return "done"

    with connection.execute_wrapper(fail_the_first_completion):
        result = continue_once(resumed, run)
    assert result == ContinueResult(ran=True, output="done")
    assert runs == ["ran"]
    assert len(completions) == 2  # the failed write, then the one that landed
    assert Pause.objects.get(jti=resumed.claims.jti).continuation == ContinuationState.CONTINUED
    assert continue_once(resumed, run).reason == "already continued"
    assert runs == ["ran"]


def test_the_next_pause_carries_the_owner_and_ids_of_the_continued_one(users: dict[str, Any]) -> None:
    resumed = resume_pause(mint(owner=users["owner"]).token, "go on")

    def run(continuation: Continuation) -> None:
        with pytest.raises(ValueError, match="has an owner"):
            continuation.mint_next(**next_stop(owner=None))
        continuation.mint_next(**next_stop())

    result = continue_once(resumed, run)
    [minted] = result.minted
    pause = Pause.objects.get(jti=minted.claims.jti)
    assert pause.owner == users["owner"]
    claims = resumed.claims
    assert (pause.session_id, pause.run_id, pause.thread_id) == (
        claims.session_id,
        claims.run_id,
        claims.thread_id,
    )
    assert Pause.objects.count() == 2  # the refused unowned mint wrote nothing


@pytest.mark.django_db(transaction=True)
async def test_acontinue_once_awaits_an_async_run() -> None:
    minted = await amint()
    resumed = await aresume_pause(minted.token, "async yes")

    async def run(continuation: Continuation) -> Any:
        next_pause = await continuation.amint_next(**next_stop())
        return continuation.resumed.answer, next_pause.claims.run_id

    result = await acontinue_once(resumed, run)
    assert result.ran and result.output == ("async yes", resumed.claims.run_id)
    assert len(result.minted) == 1
    again = await acontinue_once(resumed, run)
    assert again == ContinueResult(ran=False, reason="already continued")


def test_redeliver_lists_stalled_continuations_and_releases_them_only_when_asked(
    turnstate_settings: Any,
) -> None:
    turnstate_settings["STALLED_AFTER"] = 60
    resumed = resume_pause(mint().token, "yes")
    Pause.objects.filter(jti=resumed.claims.jti).update(handed_off_at=timezone.now())
    die_after_the_claim(resumed, ago=120)
    listed = StringIO()
    call_command("turnstate_redeliver", "--stalled", stdout=listed)
    assert f"stalled: pause {resumed.claims.jti}" in listed.getvalue()
    assert "1 stalled continuation(s)" in listed.getvalue()
    assert Pause.objects.stalled(timezone.now()).count() == 1  # listing released nothing
    assert continue_once(resumed, lambda continuation: "early").reason == "continuation claimed elsewhere"
    with pytest.raises(CommandError, match="--stalled"):
        call_command("turnstate_redeliver", "--release")
    released = StringIO()
    call_command("turnstate_redeliver", "--stalled", "--release", stdout=released)
    assert "released 1 stalled continuation(s)" in released.getvalue()
    assert not Pause.objects.stalled(timezone.now()).exists()
    assert Pause.objects.get(jti=resumed.claims.jti).continuation == ContinuationState.QUEUED
    assert Pause.objects.awaiting_handoff().filter(jti=resumed.claims.jti).exists()  # redelivered next
    assert continue_once(resumed, lambda continuation: "again").output == "again"
    assert Pause.objects.get(jti=resumed.claims.jti).continuation == ContinuationState.CONTINUED


def test_a_continuation_that_returned_is_never_released() -> None:
    resumed = resume_pause(mint().token, "yes")
    continue_once(resumed, lambda continuation: None)
    later = timezone.now() + timedelta(days=1)
    assert Pause.objects.all().release_stalled(later) == []
    assert continue_once(resumed, lambda continuation: pytest.fail("ran twice")).reason == "already continued"


def next_stop(**overrides: Any) -> dict[str, Any]:
    fields = mint_fields(tool_call_id=f"call-next-{time.monotonic_ns()}")
    for carried in ("owner", "session_id", "run_id", "thread_id"):
        fields.pop(carried)
    return fields | overrides


STATEMENTS_PER_CONTINUATION = 4
"""What ``continue_once`` sends for a pause without a group (6 before the claim became the
ledger's own state: it stamped a column and inserted a row; 5 while the ledger was read first)."""


def test_statements_per_continuation() -> None:
    """The claim (queued -> running, one UPDATE that checks everything itself), the thread's turn
    taken and given back, and the completion (running -> continued): no read."""
    resumed = resume_pause(mint().token, "yes")
    with CaptureQueriesContext(connection) as continuing:
        assert continue_once(resumed, lambda continuation: None).ran
    assert len(data_statements(continuing)) == STATEMENTS_PER_CONTINUATION, data_statements(continuing)


def test_any_port_claims_the_continuation(memory_port: Any) -> None:
    store = TurnCheckpointStore(commands=memory_port)
    resumed = resume_pause(mint(store=store).token, "yes", store=store)
    assert continue_once(resumed, lambda continuation: "ran", store=store).output == "ran"
    assert continue_once(resumed, lambda continuation: "twice", store=store).reason == "already continued"
    # Claimed by a process that never recorded the outcome: the claim still holds, whatever the port.
    other = resume_pause(mint(store=store).token, "yes", store=store)
    die_after_the_claim(other)
    assert continue_once(other, lambda continuation: "twice", store=store).reason == (
        "continuation claimed elsewhere"
    )


def test_a_pause_for_another_agent_is_refused_before_anything_is_claimed() -> None:
    minted = mint(agent="trip")
    resumed = resume_pause(minted.token, "yes")
    runs: list[str] = []

    def run(continuation: Continuation) -> str:
        runs.append(continuation.resumed.claims.jti)
        return "done"

    refused = continue_once(resumed, run, agent="billing")

    assert refused.ran is False and refused.reason is not None
    assert "'trip'" in refused.reason and "'billing'" in refused.reason
    assert runs == []
    pause = Pause.objects.get(jti=minted.claims.jti)  # nothing claimed, nothing recorded against it
    assert pause.agent == "trip" and pause.continuation == ContinuationState.QUEUED
    assert (pause.continuation_reason, pause.continuation_attempts) == (None, 0)
    assert continue_once(resumed, run, agent="trip") == ContinueResult(ran=True, output="done")


def test_a_pause_that_recorded_no_agent_is_continued_by_any() -> None:
    resumed = resume_pause(mint().token, "yes")
    assert Pause.objects.get(jti=resumed.claims.jti).agent is None
    assert continue_once(resumed, lambda continuation: "done", agent="billing").ran
