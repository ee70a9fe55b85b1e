"""Handing answered pauses whose hand-off never succeeded to ``RESUME_HANDLER`` again.

One pause whose records cannot be read, or that was deleted since it was listed, must not
keep the others from their hand-off: it is reported and the rest carry on.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import timedelta
from typing import NamedTuple

from django.utils import timezone

from turnstate_app.errors import TurnStateError
from turnstate_app.models import Pause
from turnstate_app.pauses.handoff import HandOff, ResumedPause, hand_off
from turnstate_app.ports import get_default_store
from turnstate_app.turnstate import TurnCheckpointStore


class Unreadable(NamedTuple):
    """A pause left awaiting hand-off because its records cannot be read, and why."""

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

    @property
    def not_handed_over(self) -> int:
        """Pauses still in ``awaiting_handoff()`` after this run, for all this run knows."""
        return self.failed + self.running + len(self.unreadable)


def redeliver(*, older_than: timedelta = timedelta(0), limit: int | None = None) -> Redelivery:
    """Hand every answered, never-handed-off pause (answered before ``older_than`` ago) over again."""
    store = get_default_store()
    cutoff = timezone.now() - older_than
    pending = Pause.objects.awaiting_handoff().filter(answered_at__lte=cutoff).order_by("answered_at", "pk")
    outcomes = dict.fromkeys(HandOff, 0)
    gone = 0
    unreadable: list[Unreadable] = []
    for pause in pending[:limit] if limit else pending.iterator():
        try:
            resumed = rebuilt(pause, store)
        except (TurnStateError, ValueError) as exc:  # an undecodable turn state or answer
            unreadable.append(Unreadable(pause.jti, str(exc)))
            continue
        if resumed is None:
            gone += 1
            continue
        outcomes[hand_off(resumed)] += 1
    return Redelivery(
        delivered=outcomes[HandOff.DELIVERED],
        failed=outcomes[HandOff.FAILED],
        running=outcomes[HandOff.RUNNING],
        gone=gone,
        unreadable=tuple(unreadable),
    )


def rebuilt(pause: Pause, store: TurnCheckpointStore) -> ResumedPause | None:
    """The pause as first handed over; None when it was deleted since it was listed."""
    claims = pause.claims
    stored = store.read_answer_sync(claims) if store.wired else None
    if stored is None and store.wired:
        if not Pause.objects.filter(pk=pause.pk).exists():
            return None
        raise ValueError(f"its answer row (answer:{claims.jti}) is missing")
    try:
        answer = None if stored is None else json.loads(stored)
    except ValueError as exc:
        raise ValueError(f"its answer row (answer:{claims.jti}) is not JSON: {exc}") from exc
    checkpoint = store.find_sync(claims)
    return ResumedPause(claims=claims, answer=answer, checkpoint=checkpoint)
