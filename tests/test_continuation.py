"""Continuing a run exactly once: claimed once, recorded when it returns, stalled when it crashed."""

from __future__ import annotations

import time
from datetime import timedelta
from io import StringIO
from typing import Any

import pytest
from django.core.management import CommandError, call_command
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from tests.pause_helpers import amint, mint, mint_fields
from tests.test_pauses import data_statements
from turnstate_app.keys import continuation_key
from turnstate_app.models import CheckpointMetadata, Pause
from turnstate_app.pauses import (
    Continuation,
    ContinuationRefused,
    ContinueResult,
    acontinue_once,
    aresume_pause,
    continue_once,
    resume_pause,
)
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
    assert Pause.objects.get(jti=minted.claims.jti).continued_at is not None


def test_a_refused_continuation_is_recorded_as_failed() -> None:
    resumed = resume_pause(mint().token, "no")

    def run(continuation: Continuation) -> None:
        raise ContinuationRefused("the interrupt is no longer pending")

    assert continue_once(resumed, run) == ContinueResult(
        ran=False, reason="the interrupt is no longer pending"
    )
    pause = Pause.objects.get(jti=resumed.claims.jti)
    assert pause.continuation_failure == "the interrupt is no longer pending"
    assert continue_once(resumed, run).ran is False


def test_a_crash_after_the_claim_shows_as_stalled_after_stalled_after(turnstate_settings: Any) -> None:
    turnstate_settings["STALLED_AFTER"] = 60
    resumed = resume_pause(mint().token, "yes")

    def run(continuation: Continuation) -> None:
        raise RuntimeError("the worker died mid-run")

    with pytest.raises(RuntimeError):
        continue_once(resumed, run)
    now = timezone.now()
    assert not Pause.objects.stalled(now).exists()
    assert list(Pause.objects.stalled(now + timedelta(seconds=61)).values_list("jti", flat=True)) == [
        resumed.claims.jti
    ]
    assert continue_once(resumed, run) == ContinueResult(ran=False, reason="continuation claimed elsewhere")


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
    turnstate_settings["STALLED_AFTER"] = 0.01
    resumed = resume_pause(mint().token, "yes")
    Pause.objects.filter(jti=resumed.claims.jti).update(handed_off_at=timezone.now())

    def crash(continuation: Continuation) -> None:
        raise RuntimeError("killed")

    with pytest.raises(RuntimeError):
        continue_once(resumed, crash)
    time.sleep(0.05)
    listed = StringIO()
    call_command("turnstate_redeliver", "--stalled", stdout=listed)
    assert f"stalled: pause {resumed.claims.jti}" in listed.getvalue()
    assert "1 stalled continuation(s)" in listed.getvalue()
    assert Pause.objects.stalled(timezone.now()).count() == 1  # listing released nothing
    with pytest.raises(CommandError, match="--stalled"):
        call_command("turnstate_redeliver", "--release")
    released = StringIO()
    call_command("turnstate_redeliver", "--stalled", "--release", stdout=released)
    assert "released 1 stalled continuation(s)" in released.getvalue()
    assert not Pause.objects.stalled(timezone.now()).exists()
    assert Pause.objects.awaiting_handoff().filter(jti=resumed.claims.jti).exists()  # redelivered next
    assert continue_once(resumed, lambda continuation: "again").output == "again"


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


STATEMENTS_PER_CONTINUATION = 6
"""What ``continue_once`` sends for a pause without a group, as docs/lifecycle.md counts them."""


def test_statements_per_continuation() -> None:
    """As docs/lifecycle.md counts them: ledger read, claim stamped, claim, turn taken, outcome
    recorded, turn given back."""
    resumed = resume_pause(mint().token, "yes")
    with CaptureQueriesContext(connection) as continuing:
        assert continue_once(resumed, lambda continuation: None).ran
    assert len(data_statements(continuing)) == STATEMENTS_PER_CONTINUATION, data_statements(continuing)


def test_any_port_claims_the_continuation(memory_port: Any) -> None:
    store = TurnCheckpointStore(commands=memory_port)
    resumed = resume_pause(mint(store=store).token, "yes", store=store)
    assert continue_once(resumed, lambda continuation: "ran", store=store).output == "ran"
    assert continue_once(resumed, lambda continuation: "twice", store=store).reason == "already continued"
    Pause.objects.update(continued_at=None)  # as if the outcome was never recorded: the claim still holds
    assert continue_once(resumed, lambda continuation: "twice", store=store).reason == (
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
    assert not CheckpointMetadata.objects.filter(key=continuation_key(minted.claims.jti)).exists()
    pause = Pause.objects.get(jti=minted.claims.jti)
    assert pause.agent == "trip" and pause.continuation_failure is None
    assert continue_once(resumed, run, agent="trip") == ContinueResult(ran=True, output="done")


def test_a_pause_that_recorded_no_agent_is_continued_by_any() -> None:
    resumed = resume_pause(mint().token, "yes")
    assert Pause.objects.get(jti=resumed.claims.jti).agent is None
    assert continue_once(resumed, lambda continuation: "done", agent="billing").ran
