"""Continuing a run exactly once: claimed once, recorded when it returns, stalled when it crashed."""

from __future__ import annotations

from typing import Any

import pytest

from tests.pause_helpers import mint
from turnstate_app.models import Pause
from turnstate_app.pauses import (
    Continuation,
    ContinuationRefused,
    ContinueResult,
    continue_once,
    resume_pause,
)

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
