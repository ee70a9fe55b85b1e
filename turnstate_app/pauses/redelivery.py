"""Handing answered pauses to ``RESUME_HANDLER`` again: those whose hand-off never succeeded,
and those whose continuation failed before running anything (:mod:`turnstate_app.after_answer`).

A refused continuation is never handed again (the person must be asked anew); a crashed one
only when an operator names it (``jti``): what it ran before it raised is the operator's call.
One pause whose records cannot be read, or that was deleted since it was listed, must not keep
the others from their hand-off: it is reported and the rest carry on.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import timedelta
from typing import NamedTuple

from django.utils import timezone

from turnstate_app.after_answer import State, redeliverable_q, same_run_q
from turnstate_app.errors import ChangedAtRestError, PayloadBindingError, TurnStateError
from turnstate_app.models import Pause, PauseQuerySet
from turnstate_app.pauses.binding import answer_changed
from turnstate_app.pauses.handoff import HandOff, ResumedPause, hand_off, refused_answer, refused_resumed
from turnstate_app.ports import get_default_store
from turnstate_app.turnstate import TurnCheckpointStore


class Unreadable(NamedTuple):
    """A pause left where it was because its records cannot be read, and why."""

    jti: str
    reason: str


@dataclass(frozen=True)
class Redelivery:
    delivered: int
    failed: int
    running: int = 0
    """Handlers still running after ``HANDOFF_TIMEOUT``: stamped when (if) they return."""
    gone: int = 0
    """Pauses deleted (purged, erased) between the listing and their hand-off."""
    unreadable: tuple[Unreadable, ...] = ()
    listed: tuple[str, ...] = ()
    """The jtis chosen (all that a dry run does)."""

    @property
    def not_handed_over(self) -> int:
        """Pauses still not handed over after this run, for all this run knows."""
        return self.failed + self.running + len(self.unreadable)


def candidates(*, older_than: timedelta = timedelta(0), jti: str | None = None) -> PauseQuerySet:
    """What a redelivery hands again: by itself, answered more than ``older_than`` ago, hand-off
    never succeeded, failed before running, or lost by the queue; ``jti`` names one pause,
    crashed ones included."""
    now = timezone.now()
    handable = Pause.objects.filter(redeliverable_q()) | Pause.objects.lost_in_queue(now)
    if jti is not None:
        return (handable | Pause.objects.filter(continuation=State.CRASHED)).filter(jti=jti)
    return handable.filter(answered_at__lte=now - older_than).order_by("answered_at", "pk")


def redeliver(
    *,
    older_than: timedelta = timedelta(0),
    limit: int | None = None,
    jti: str | None = None,
    dry_run: bool = False,
) -> Redelivery:
    """Hand the :func:`candidates` over again (``dry_run``: only list them)."""
    chosen = candidates(older_than=older_than, jti=jti)
    if dry_run:
        listed = chosen.values_list("jti", flat=True)
        return Redelivery(delivered=0, failed=0, listed=tuple(listed[:limit] if limit else listed))
    store = get_default_store()
    outcomes = dict.fromkeys(HandOff, 0)
    gone = 0
    unreadable: list[Unreadable] = []
    listed_jtis: list[str] = []
    for pause in chosen[:limit] if limit else chosen.iterator():
        listed_jtis.append(pause.jti)
        try:
            resumed = rebuilt(pause, store)
        except (TurnStateError, ValueError) as exc:  # an undecodable turn state or answer
            unreadable.append(Unreadable(pause.jti, str(exc)))
            continue
        if resumed is None:
            gone += 1
            continue
        if pause.continuation != State.QUEUED:  # failed or crashed: queued again first
            Pause.objects.filter(same_run_q(pause)).requeue(now=timezone.now())
        elif pause.handed_off_at is not None and not lost_handoff_forgotten(pause):
            continue  # a worker claimed it since it was listed: it is not lost
        outcomes[hand_off(resumed)] += 1
    return Redelivery(
        delivered=outcomes[HandOff.DELIVERED],
        failed=outcomes[HandOff.FAILED],
        running=outcomes[HandOff.RUNNING],
        gone=gone,
        unreadable=tuple(unreadable),
        listed=tuple(listed_jtis),
    )


def lost_handoff_forgotten(pause: Pause) -> bool:
    """A pause the queue lost goes back to awaiting its hand-off, stamped anew once handed:
    False when a worker claimed it after all."""
    return Pause.objects.filter(pk=pause.pk).forget_lost_handoff(now=timezone.now()) == 1


def rebuilt(pause: Pause, store: TurnCheckpointStore) -> ResumedPause | None:
    """The pause as first handed over; None when it was deleted since it was listed. An answer
    whose MAC does not verify is handed over with why, and its continuation refuses it."""
    claims = pause.claims
    try:
        stored = store.read_answer_sync(claims) if store.wired else None
    except ChangedAtRestError:  # its row is not the one the answer wrote
        return refused_resumed(pause, answer_changed(pause.jti))
    except PayloadBindingError as unreadable:  # its key is gone
        return refused_resumed(pause, f"pause {pause.jti}: {unreadable}")
    if stored is None and store.wired:
        if not Pause.objects.filter(pk=pause.pk).exists():
            return None
        raise ValueError(f"its answer row (answer:{claims.jti}) is missing")
    try:
        answer = None if stored is None else json.loads(stored)
    except ValueError as exc:
        raise ValueError(f"its answer row (answer:{claims.jti}) is not JSON: {exc}") from exc
    checkpoint = store.find_sync(claims)
    return ResumedPause(
        claims=claims,
        answer=answer,
        checkpoint=checkpoint,
        answered_at=pause.answered_at,
        answer_traceparent=pause.answer_traceparent,
        answer_refused=refused_answer(pause, stored, wired=store.wired),
    )
