"""Handing an answered pause to ``RESUME_HANDLER``: after commit, at least once, never blocking long.

The ledger records when a hand-off succeeded, so a crash, a failing handler or a failed
stamp after the answer committed strands nothing: ``turnstate_redeliver`` hands such
pauses over again. Handlers must therefore be idempotent.

The handler runs on a hand-off worker (:mod:`turnstate_app.pauses.workers`); the one who
answered waits for it at most ``HANDOFF_TIMEOUT`` seconds. A handler that takes longer
keeps running, and its pause is stamped when (if) it returns.
"""

from __future__ import annotations

import enum
import inspect
import json
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from asgiref.sync import async_to_sync
from django.utils import timezone
from django.utils.module_loading import import_string

from turnstate_app import telemetry
from turnstate_app.conf import conf
from turnstate_app.contracts import PauseClaims
from turnstate_app.errors import ChangedAtRestError, PayloadBindingError
from turnstate_app.models import Pause
from turnstate_app.pauses import workers
from turnstate_app.pauses.binding import answer_changed, answer_verifies, identity_of
from turnstate_app.pauses.signals import pause_answered
from turnstate_app.turnstate import TurnCheckpoint, TurnCheckpointStore

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class ResumedPause:
    """An answered pause: who it was, what the person said, and the turn to continue (if any)."""

    claims: PauseClaims
    answer: Any
    checkpoint: TurnCheckpoint | None
    answered_at: datetime | None = field(default=None, compare=False)
    """When the answer was given (None: not known here), for the continuation's delay."""
    answer_traceparent: str | None = field(default=None, compare=False)
    """The trace the answer was given in (None: none), which the continuation's span links to."""
    answer_refused: str | None = field(default=None, compare=False)
    """Why the answer read back from the store is not the one given (its MAC does not verify);
    a continuation refuses it. None: it verified, or it was given in this process."""

    @property
    def resumable(self) -> bool:
        """Whether this resume got a turn state to continue from."""
        return self.checkpoint is not None


class HandOff(enum.Enum):
    """How one hand-off ended, as far as the caller waited."""

    NO_HANDLER = "no handler"
    DELIVERED = "delivered"  # the handler returned and the ledger recorded it
    FAILED = "failed"  # the handler raised, or its success could not be recorded
    RUNNING = "running"  # still running after HANDOFF_TIMEOUT; stamped when (if) it returns


def resume_handler() -> Callable[[ResumedPause], Any] | None:
    path = conf.RESUME_HANDLER
    return None if path is None else import_string(path)


def after_answer(resumed: ResumedPause) -> None:
    """Run once the answer is committed: the signal, then the hand-off. Never raises."""
    for receiver, result in pause_answered.send_robust(sender=Pause, resumed=resumed):
        if isinstance(result, Exception):
            logger.error(
                "pause_answered receiver %r failed for pause %s: %s",
                receiver,
                resumed.claims.jti,
                telemetry.described(result),
            )
    hand_off(resumed)


def hand_off(resumed: ResumedPause) -> HandOff:
    """Give ``resumed`` to the handler on a worker; wait at most ``HANDOFF_TIMEOUT``. Never raises."""
    if conf.RESUME_HANDLER is None:
        return HandOff.NO_HANDLER  # nothing is handed off: no span either
    claims = resumed.claims
    with telemetry.span("turnstate.handoff", jti=claims.jti, thread_id=claims.thread_id) as current:
        handed = _hand_off(resumed)
        telemetry.outcome(current, handed.value.replace(" ", "_"))
        return handed


def _hand_off(resumed: ResumedPause) -> HandOff:
    jti = resumed.claims.jti
    try:
        handler = resume_handler()
        if handler is None:
            return HandOff.NO_HANDLER
        running = workers.submit(lambda: deliver(handler, resumed))
    except Exception as exc:
        logger.error(
            "RESUME_HANDLER could not be started for pause %s; turnstate_redeliver will retry it: %s",
            jti,
            telemetry.described(exc),
        )
        telemetry.record("turnstate.handoff.failures")
        return HandOff.FAILED
    try:
        return HandOff.DELIVERED if running.result(timeout=conf.HANDOFF_TIMEOUT) else HandOff.FAILED
    except TimeoutError:
        logger.warning(
            "RESUME_HANDLER has not returned for pause %s within HANDOFF_TIMEOUT (%ss); it keeps "
            "running, and the pause is recorded as handed off only if it returns",
            jti,
            conf.HANDOFF_TIMEOUT,
        )
        return HandOff.RUNNING
    except Exception as exc:  # deliver() catches everything; this would be a bug of the workers
        logger.error(
            "the hand-off of pause %s failed; turnstate_redeliver will retry it: %s",
            jti,
            telemetry.described(exc),
        )
        return HandOff.FAILED


def deliver(handler: Callable[[ResumedPause], Any], resumed: ResumedPause) -> bool:
    """On a worker: call (and await) the handler, then stamp ``handed_off_at``. True when both did."""
    try:
        call_handler(handler, resumed)
    except BaseException as exc:  # even SystemExit: it would only end this worker; redelivery will try again
        logger.error(
            "RESUME_HANDLER failed for pause %s (thread %s); turnstate_redeliver will retry it: %s",
            resumed.claims.jti,
            resumed.claims.thread_id,
            telemetry.described(exc),
        )
        telemetry.record("turnstate.handoff.failures")
        note_failure(resumed.claims.jti, f"RESUME_HANDLER raised {type(exc).__name__}: {exc}")
        return False
    try:
        Pause.objects.mark_handed_off(resumed.claims.jti, now=timezone.now())
    except Exception as exc:  # the handler has it; at worst it gets it once more
        logger.error(
            "RESUME_HANDLER accepted pause %s but recording handed_off_at failed; the pause stays in "
            "awaiting_handoff() and turnstate_redeliver will hand it over again: %s",
            resumed.claims.jti,
            telemetry.described(exc),
        )
        telemetry.record("turnstate.handoff.failures")
        return False
    return True


def note_failure(jti: str, reason: str) -> None:
    """Keep why the hand-off failed on the pause, for operators. Never raises: the database may be
    what failed."""
    try:
        Pause.objects.note_handoff_failed(jti, reason)
    except Exception as exc:
        logger.error(
            "recording why the hand-off of pause %s failed, failed too: %s", jti, telemetry.described(exc)
        )


def call_handler(handler: Callable[[ResumedPause], Any], resumed: ResumedPause) -> None:
    """Call a plain or ``async def`` handler; whatever awaitable it gives back is awaited too."""
    if inspect.iscoroutinefunction(handler):
        async_to_sync(handler)(resumed)
        return
    result = handler(resumed)
    if inspect.isawaitable(result):
        async_to_sync(_awaited)(result)


async def _awaited(awaitable: Awaitable[Any]) -> Any:
    return await awaitable


def rebuild_resumed(pause: Pause, store: TurnCheckpointStore) -> ResumedPause:
    """An answered pause as the handler first saw it, from the ledger and the store alone; an
    answer whose MAC does not verify is carried with why, for the continuation to refuse."""
    claims = pause.claims
    try:
        stored = store.read_answer_sync(claims) if store.wired else None
    except ChangedAtRestError:  # its row is not the one the answer wrote
        return refused_resumed(pause, answer_changed(pause.jti))
    except PayloadBindingError as unreadable:  # its key is gone
        return refused_resumed(pause, f"pause {pause.jti}: {unreadable}")
    answer = None if stored is None else json.loads(stored)
    return ResumedPause(
        claims=claims,
        answer=answer,
        checkpoint=store.find_sync(claims),
        answered_at=pause.answered_at,
        answer_traceparent=pause.answer_traceparent,
        answer_refused=refused_answer(pause, stored, wired=store.wired),
    )


def refused_resumed(pause: Pause, reason: str) -> ResumedPause:
    """``pause`` with no answer, carrying why its stored answer cannot be used: its continuation
    is claimed and refused (the refused state, with the reason), and nothing runs."""
    return ResumedPause(
        claims=pause.claims,
        answer=None,
        checkpoint=None,
        answered_at=pause.answered_at,
        answer_traceparent=pause.answer_traceparent,
        answer_refused=reason,
    )


def refused_answer(pause: Pause, stored: str | None, *, wired: bool) -> str | None:
    """Why the answer ``stored`` for ``pause`` is not the one given (None: its MAC verifies, or a
    store that is not wired kept none). A wired store always keeps an answer: one missing is refused."""
    if stored is None:
        return answer_changed(pause.jti) if wired else None
    if answer_verifies(pause.answer_mac, identity_of(pause), stored):
        return None
    return answer_changed(pause.jti)
