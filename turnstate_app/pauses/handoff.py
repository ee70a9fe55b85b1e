"""Handing an answered pause to ``RESUME_HANDLER``: after commit, at least once.

The ledger records when a hand-off succeeded, so a crash or a failing handler after the
answer committed strands nothing: ``turnstate_redeliver`` hands such pauses over again.
Handlers must therefore be idempotent.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from django.utils import timezone
from django.utils.module_loading import import_string

from turnstate_app.conf import conf
from turnstate_app.contracts import PauseClaims
from turnstate_app.models import Pause
from turnstate_app.pauses.signals import pause_answered
from turnstate_app.ports import get_default_store
from turnstate_app.turnstate import TurnCheckpoint, TurnCheckpointStore

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class ResumedPause:
    """An answered pause: who it was, what the person said, and the turn to continue (if any)."""

    claims: PauseClaims
    answer: Any
    checkpoint: TurnCheckpoint | None

    @property
    def resumable(self) -> bool:
        """Whether this resume got a turn state to continue from."""
        return self.checkpoint is not None


def resume_handler() -> Callable[[ResumedPause], Any] | None:
    path = conf.RESUME_HANDLER
    return None if path is None else import_string(path)


def after_answer(resumed: ResumedPause) -> None:
    """Run once the answer is committed: the signal, then the hand-off. Never raises."""
    for receiver, result in pause_answered.send_robust(sender=Pause, resumed=resumed):
        if isinstance(result, Exception):
            logger.error(
                "pause_answered receiver %r failed for pause %s",
                receiver,
                resumed.claims.jti,
                exc_info=result,
            )
    hand_off(resumed)


def hand_off(resumed: ResumedPause) -> bool:
    """Call the handler; on success stamp ``handed_off_at``. A failure is logged, not raised."""
    try:
        handler = resume_handler()
        if handler is None:
            return False
        handler(resumed)
    except Exception:  # the answer stays answered; redelivery will try again
        logger.exception(
            "RESUME_HANDLER failed for pause %s (thread %s); turnstate_redeliver will retry it",
            resumed.claims.jti,
            resumed.claims.thread_id,
        )
        return False
    Pause.objects.mark_handed_off(resumed.claims.jti, now=timezone.now())
    return True


def rebuild_resumed(pause: Pause, store: TurnCheckpointStore) -> ResumedPause:
    """An answered pause as the handler first saw it, from the ledger and the store alone."""
    claims = pause.claims
    stored = store.read_answer_sync(claims) if store.wired else None
    answer = None if stored is None else json.loads(stored)
    return ResumedPause(claims=claims, answer=answer, checkpoint=store.find_sync(claims))


@dataclass(frozen=True)
class Redelivery:
    delivered: int
    failed: int


def redeliver(*, older_than: timedelta = timedelta(0), limit: int | None = None) -> Redelivery:
    """Hand every answered, never-handed-off pause (answered before ``older_than`` ago) over again."""
    store = get_default_store()
    cutoff = timezone.now() - older_than
    pending = Pause.objects.awaiting_handoff().filter(answered_at__lte=cutoff).order_by("answered_at")
    delivered = failed = 0
    for pause in pending[:limit] if limit else pending.iterator():
        if hand_off(rebuild_resumed(pause, store)):
            delivered += 1
        else:
            failed += 1
    return Redelivery(delivered=delivered, failed=failed)
