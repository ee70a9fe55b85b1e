"""The life after the answer: one state machine, and the only code that writes it.

``Pause.status`` says whether a pause can still be answered (``pending``, ``answered``,
``expired``); ``Pause.continuation`` refines ``answered`` (see ``docs/states.md``)::

    pending --answer--> queued --claim--> running --returns--> continued
                          ^  \\              |  \\--raises---> crashed --operator--> queued
                          |   \\--nothing    |   \\--refuses--> refused (never again)
                          |      ran--> failed <--thread busy--/
                          \\--retry, redeliver--/

Every transition is one conditional ``UPDATE … WHERE continuation IN (…)`` through the ORM:
0 rows means another process moved the pause first. ``handed_off_at`` records *when*
``RESUME_HANDLER`` accepted the answer; it is not a state. What operators see is read from
here too: each figure of ``turnstate_status`` is one of the conditions below.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from django.db import models
from django.db.models import Case, F, Q, Value, When

from turnstate_app import telemetry
from turnstate_app.choices import ContinuationState, PauseStatus
from turnstate_app.conf import conf

if TYPE_CHECKING:  # the QuerySet's type argument; models import this module at run time
    from turnstate_app.models import Pause  # noqa: F401

State = ContinuationState

CLAIMABLE = (State.QUEUED, State.FAILED)
"""A continuation a process may claim: nothing of it ran yet."""
WAITING_FOR_OPERATOR = (State.FAILED, State.CRASHED, State.REFUSED)
"""The failed continuations operators list (a failed one may still be retried by itself)."""
SPEAKING = (State.QUEUED, State.RUNNING, State.FAILED, State.CRASHED)
"""Answered pauses whose answer still waits to be used: no other pause may ask their question again."""
DONE = (State.CONTINUED, State.REFUSED, State.CRASHED)
"""A run that went on (or was refused) past these answers: a group may take no new member."""

REASON_MAX_LENGTH = 2000
"""A recorded reason is cut here: an exception's text can be as long as it likes."""

ANY_AGENT: Any = object()
"""No name to check: :meth:`AfterAnswerQuerySet.claim_answered` claims whatever graph or agent
the pause recorded."""

FIRST_RETRY = 30.0
"""Seconds before the first retry of a continuation that failed before running; each next waits 4x."""


# -- the conditions operators read ------------------------------------------------------


def answered_values(now: Any, trace: str | None = None) -> dict[str, Any]:
    """What an answer sets (pending -> answered, its continuation queued); ``now`` adapted by the
    caller's connection when the resume runs it as SQL text. ``trace``: the answer's trace
    context (``traceparent``), which its continuation links to."""
    return {
        "status": PauseStatus.ANSWERED.value,
        "answered_at": now,
        "answer_traceparent": trace,
        "continuation": State.QUEUED.value,
        "continuation_since": now,
    }


def awaiting_handoff_q() -> Q:
    """Answered, and ``RESUME_HANDLER`` never accepted the answer (it raised, timed out, or
    the process died first)."""
    return Q(continuation=State.QUEUED, handed_off_at__isnull=True)


def queued_q() -> Q:
    """Handed off, waiting for a worker (or for the rest of its group's answers)."""
    return Q(continuation=State.QUEUED, handed_off_at__isnull=False)


def handed_off_unclaimed_q(now: datetime, after: float | None = None) -> Q:
    """Handed off more than ``STALLED_AFTER`` (``after``) seconds before ``now`` and never claimed:
    a worker would have claimed it by then, unless the queue lost the task (its worker died
    before the claim, writing nothing). A group still awaiting answers waits here too, which
    :meth:`~turnstate_app.managers.PauseQuerySet.lost_in_queue` tells apart."""
    return Q(continuation=State.QUEUED, handed_off_at__lte=_stall_cutoff(now, after))


def _stall_cutoff(now: datetime, after: float | None) -> datetime:
    return now - timedelta(seconds=conf.STALLED_AFTER if after is None else after)


def running_q(now: datetime, after: float | None = None) -> Q:
    """Claimed less than ``STALLED_AFTER`` (``after``) seconds before ``now``: running."""
    return Q(continuation=State.RUNNING, continuation_since__gt=_stall_cutoff(now, after))


def stalled_q(now: datetime, after: float | None = None) -> Q:
    """Claimed more than ``STALLED_AFTER`` (``after``) seconds before ``now`` and never finished:
    a worker killed after its claim, or a run still going."""
    return Q(continuation=State.RUNNING, continuation_since__lte=_stall_cutoff(now, after))


def failed_continuation_q() -> Q:
    """Failed, crashed or refused: each shows its reason to operators."""
    return Q(continuation__in=WAITING_FOR_OPERATOR)


FIGURE = "continuation_figure"
"""The annotation :meth:`AfterAnswerQuerySet.with_figure` adds."""


def figures(now: datetime) -> list[tuple[str, Q]]:
    """The ``turnstate_status`` figure that counts an answered pause not yet continued, each with
    its condition; they exclude one another."""
    return [
        ("awaiting_handoff", awaiting_handoff_q()),
        ("queued", queued_q()),
        ("running", running_q(now)),
        ("stalled", stalled_q(now)),
        ("failed_continuations", failed_continuation_q()),
    ]


def redeliverable_q() -> Q:
    """What ``turnstate_redeliver`` hands again by itself: the hand-off never succeeded, or the
    continuation failed before running anything. Never a refused or crashed one."""
    return awaiting_handoff_q() | Q(continuation=State.FAILED)


def same_run_q(pause: Pause) -> Q:
    """``pause`` and the rest of its group: one continuation moves them together."""
    return Q(group=pause.group) if pause.group else Q(pk=pause.pk)


def retry_delay(attempts: int) -> float | None:
    """Seconds before the next try after ``attempts`` failed ones; None once
    ``CONTINUATION_ATTEMPTS`` are spent (then only an operator hands it again)."""
    if attempts >= conf.CONTINUATION_ATTEMPTS:
        return None
    return float(FIRST_RETRY * 4 ** max(0, attempts - 1))


def cut(reason: str) -> str:
    reason = reason or "no reason given"
    return reason if len(reason) <= REASON_MAX_LENGTH else reason[: REASON_MAX_LENGTH - 1] + "…"


# -- the transitions ----------------------------------------------------------------------


class AfterAnswerQuerySet(models.QuerySet["Pause"]):
    """The transitions of an answered pause's continuation, each one conditional UPDATE."""

    def awaiting_handoff(self) -> AfterAnswerQuerySet:
        return self.filter(awaiting_handoff_q())

    def queued(self) -> AfterAnswerQuerySet:
        return self.filter(queued_q())

    def running(self, now: datetime) -> AfterAnswerQuerySet:
        return self.filter(running_q(now))

    def stalled(self, now: datetime, *, after: float | None = None) -> AfterAnswerQuerySet:
        """Claimed more than ``STALLED_AFTER`` (``after``) seconds before ``now``, unfinished: for
        ``turnstate_redeliver --stalled`` and the admin's "continuation" filter."""
        return self.filter(stalled_q(now, after))

    def continuation_failed(self) -> AfterAnswerQuerySet:
        """Failed, crashed or refused continuations: listed for operators with their reason."""
        return self.filter(failed_continuation_q())

    def redeliverable(self) -> AfterAnswerQuerySet:
        return self.filter(redeliverable_q())

    def with_figure(self, now: datetime) -> AfterAnswerQuerySet:
        """Annotate ``continuation_figure``: the ``turnstate_status`` figure that counts the pause
        at ``now`` (None: none does, e.g. pending or continued). No extra query."""
        whens = [When(condition, then=Value(name)) for name, condition in figures(now)]
        return self.annotate(**{FIGURE: Case(*whens, default=Value(None), output_field=models.CharField())})

    # -- transitions --------------------------------------------------------------------

    def mark_handed_off(self, jti: str, *, now: datetime) -> bool:
        """Record that RESUME_HANDLER accepted the answer; the first stamp stays."""
        return self.filter(jti=jti, handed_off_at__isnull=True).update(handed_off_at=now) == 1

    def forget_lost_handoff(self, *, now: datetime) -> int:
        """queued, handed off but never claimed -> awaiting its hand-off again: the queue lost the
        task, so ``turnstate_redeliver`` hands it anew (and stamps it when that succeeds)."""
        return self.filter(handed_off_unclaimed_q(now)).update(handed_off_at=None)

    def note_handoff_failed(self, jti: str, reason: str) -> int:
        """Why ``RESUME_HANDLER`` did not accept the answer, on a pause still awaiting its
        hand-off (the state stays ``queued``), so operators see it beside the figure."""
        return self.filter(awaiting_handoff_q(), jti=jti).update(continuation_reason=cut(reason))

    def claim(self, pk: Any, *, now: datetime) -> bool:
        """queued | failed -> running, for the pause ``pk``: True for the one process whose UPDATE
        did it, across all processes."""
        return self.filter(pk=pk).claim_run(now=now) == 1

    def claim_run(self, *, now: datetime) -> int:
        """queued | failed -> running for these pauses (one pause, or every member of a group) in
        one UPDATE: the continuation's claim. Of any number of processes claiming the same rows,
        one changes them and every other changes none (a row they wait on is checked again once
        it is released); how many rows moved (0: claimed elsewhere)."""
        return self.filter(continuation__in=CLAIMABLE).update(
            continuation=State.RUNNING,
            continuation_since=now,
            continuation_attempts=F("continuation_attempts") + 1,
            continuation_reason=None,
            continuation_retry_at=None,
        )

    def claim_answered(self, jti: str, *, now: datetime, agent: Any = ANY_AGENT) -> bool:
        """:meth:`claim_run` of the answered pause ``jti`` when it belongs to no group and was
        minted by ``agent`` (or recorded no name), with nothing read first; False when any of
        that does not hold (the caller reads the pause to tell why, or finds its group)."""
        rows = self.filter(jti=jti, group__isnull=True, status=PauseStatus.ANSWERED)
        if agent is not ANY_AGENT:
            rows = rows.filter(Q(agent__isnull=True) | Q(agent=agent))
        return rows.claim_run(now=now) == 1

    def mark_continued(self, *, now: datetime) -> int:
        """running -> continued: the run returned."""
        return self.filter(continuation=State.RUNNING).update(
            continuation=State.CONTINUED, continuation_since=now
        )

    def mark_crashed(self, reason: str, *, now: datetime) -> int:
        """running -> crashed: the run raised after it started. Not retried by itself: what it
        did before it raised may not be done twice."""
        return self.filter(continuation=State.RUNNING).update(
            continuation=State.CRASHED, continuation_since=now, continuation_reason=cut(reason)
        )

    def mark_refused(self, reason: str, *, now: datetime) -> int:
        """queued | failed | running -> refused: the continuation will never run from these
        answers (the person must be asked anew)."""
        return self.filter(continuation__in=(*CLAIMABLE, State.RUNNING)).update(
            continuation=State.REFUSED,
            continuation_since=now,
            continuation_reason=cut(reason),
            continuation_retry_at=None,
        )

    def mark_failed(self, reason: str, *, now: datetime, attempts: int) -> datetime | None:
        """queued | failed | running -> failed: nothing of the run ran. ``attempts``: the tries
        so far, this one included. When the next try is (None: attempts spent)."""
        delay = retry_delay(attempts)
        retry_at = None if delay is None else now + timedelta(seconds=delay)
        self.filter(continuation__in=(*CLAIMABLE, State.RUNNING)).update(
            continuation=State.FAILED,
            continuation_since=now,
            continuation_reason=cut(reason),
            continuation_attempts=attempts,
            continuation_retry_at=retry_at,
        )
        return retry_at

    def release_stalled(self, now: datetime, *, after: float | None = None) -> list[str]:
        """running (stalled at ``now``) -> queued, hand-off cleared, so ``turnstate_redeliver``
        hands them again; their jtis. Only when an operator asks: a run that is merely slow
        would run a second time."""
        stalled = self.filter(stalled_q(now, after))
        moved = [  # one UPDATE each, still conditional: one that returned meanwhile stays continued
            jti
            for pk, jti in list(stalled.values_list("pk", "jti"))
            if stalled.filter(pk=pk).update(
                continuation=State.QUEUED, continuation_since=now, handed_off_at=None
            )
        ]
        if moved:
            telemetry.record("turnstate.continuations.stalled", len(moved))
        return moved

    def requeue(self, *, now: datetime) -> int:
        """failed | crashed -> queued, hand-off cleared: an operator hands these again
        (``turnstate_redeliver --jti``). A refused one stays refused."""
        return self.filter(continuation__in=(State.FAILED, State.CRASHED)).update(
            continuation=State.QUEUED,
            continuation_since=now,
            continuation_retry_at=None,
            handed_off_at=None,
        )
