"""Continuing a paused run exactly once, whoever delivers the answer and however often.

``RESUME_HANDLER`` is called at least once (``turnstate_redeliver`` calls it again), and two
processes may deliver the same answer, or the last two answers of a group, at once. A
continuation that ran twice would run the approved tool twice or fork the thread. So:

1. a group still waiting for an answer, or a pause that recorded another graph or agent
   (``agent``), continues nothing (nothing is claimed: the right one can still continue it);
2. the continuation is claimed once, across processes: the pause (a lone one by its jti, every
   condition of step 1 in the UPDATE itself, nothing read first), or every member of its group,
   moves from ``queued`` (or ``failed``) to ``running`` in one conditional UPDATE
   (:mod:`turnstate_app.after_answer`); every other caller gets ``ran=False``. A plain
   continuation is four statements: this claim, the turn taken and given back, the completion;
3. the run takes its thread's turn (:mod:`turnstate_app.pauses.thread_turns`); a thread that
   stays busy gives the claim back as ``failed`` (nothing ran), to be retried;
4. an answer read back from the store whose MAC does not verify (it was rewritten since it was
   given) is refused like step 5's ``ContinuationRefused``, before ``run``; so is, when
   ``still_shown`` is given, each answered pause whose recorded MAC of what was shown (none
   included) does not verify against what the stored state asks now
   (:mod:`turnstate_app.pauses.binding`, :mod:`turnstate_app.pauses.shown`);
5. ``run`` returns: ``continued``. ``ContinuationRefused``: ``refused``, with the reason; so is a
   ``PayloadBindingError`` (a stored record the run starts from failed its MAC or its binding:
   retrying cannot help, and nothing of it is used). Any other exception: ``crashed``, with the
   reason, and the exception propagates. A process that dies meanwhile leaves ``running``,
   shown as *stalled* after ``STALLED_AFTER`` — delivery is at least once, a continuation at
   most once, and a lost one always visible.
"""

from __future__ import annotations

import inspect
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from asgiref.sync import sync_to_async
from django.db import DatabaseError, router
from django.utils import timezone

from turnstate_app import telemetry
from turnstate_app.after_answer import ANY_AGENT
from turnstate_app.choices import ContinuationState, PauseStatus
from turnstate_app.errors import (
    ContinuationRefused,
    PauseCheckpointNotFoundError,
    PayloadBindingError,
    ThreadBusyError,
)
from turnstate_app.managers import effective_status
from turnstate_app.models import Pause, PauseQuerySet
from turnstate_app.pauses.binding import identity_of, shown_mac, shown_verifies
from turnstate_app.pauses.groups import run_of
from turnstate_app.pauses.handoff import ResumedPause, rebuild_resumed, refused_resumed
from turnstate_app.pauses.mint import MintedPause, mint_pause
from turnstate_app.pauses.shown import question_changed, shown_digest, shown_unrecorded
from turnstate_app.pauses.thread_turns import ThreadTurn, atake_turn, holding, take_turn
from turnstate_app.ports import get_default_store
from turnstate_app.ports.model import reading_primary
from turnstate_app.turnstate import TurnCheckpointStore

REASON_GONE = "pause not in the ledger"
REASON_NOT_ANSWERED = "pause not answered"
REASON_GROUP_INCOMPLETE = "group incomplete"
REASON_GROUP_EXPIRED = "group failed: a member expired unanswered"
REASON_ALREADY_CONTINUED = "already continued"
REASON_CLAIMED_ELSEWHERE = "continuation claimed elsewhere"
REASON_FAILED_BEFORE = "continuation failed before"
REASON_CRASHED_BEFORE = "the run raised before"

COMPLETION_TRIES = (0.1, 0.5, 2.0, 5.0)
"""Seconds between tries of writing that a run returned: the run is never run again for it."""

logger = logging.getLogger(__name__)

UNCHECKED: Any = ANY_AGENT
"""``agent`` not given: the caller does not say which graph or agent it runs, nothing is checked."""


@dataclass(frozen=True)
class ContinueResult:
    """How one attempt to continue a run ended; shared by every integration.

    ``ran``: this call ran the continuation. ``output``: what ``run`` returned. ``minted``:
    the pauses the continuation minted. ``reason``: why it did not run (None when it ran).
    """

    ran: bool
    output: Any = None
    minted: list[MintedPause] = field(default_factory=list)
    reason: str | None = None


@dataclass
class Continuation:
    """What ``run`` gets: the answer that triggered it, every answer of its group, a way to pause again.

    ``owner`` and ``agent`` are read from the ledger on first use (one statement, from sync code;
    async code mints with :meth:`amint_next`)."""

    resumed: ResumedPause
    members: list[ResumedPause]
    minted: list[MintedPause] = field(default_factory=list)
    store: TurnCheckpointStore | None = field(default=None, repr=False)
    claimed: ClaimedPauses | None = field(default=None, repr=False)

    @property
    def owner(self) -> Any:
        """The continued pause's owner (None: unowned), carried onto every pause minted next."""
        return None if self.claimed is None else self.claimed.row(self.resumed.claims.jti).owner

    @property
    def agent(self) -> str | None:
        """The graph or agent the continued pause recorded (None: none), carried onto every pause
        minted next."""
        return None if self.claimed is None else self.claimed.row(self.resumed.claims.jti).agent

    def mint_next(self, **kwargs: Any) -> MintedPause:
        """``mint_pause`` for the run's next stop, with ``owner``, ``agent``, ``session_id``, ``run_id``
        (and ``thread_id``) of the continued pause unless given; never unowned when it was owned."""
        claims = self.resumed.claims
        if self.owner is not None and "owner" in kwargs and kwargs["owner"] is None:
            raise ValueError(
                f"pause {claims.jti!r} has an owner; a pause its continuation mints must have one too"
            )
        kwargs.setdefault("owner", self.owner)
        kwargs.setdefault("agent", self.agent)
        kwargs.setdefault("session_id", claims.session_id)
        kwargs.setdefault("run_id", claims.run_id)
        kwargs.setdefault("thread_id", claims.thread_id)
        if self.store is not None:
            kwargs.setdefault("store", self.store)
        minted = mint_pause(**kwargs)
        self.minted.append(minted)
        return minted

    async def amint_next(self, **kwargs: Any) -> MintedPause:
        """:meth:`mint_next` for async code."""
        return await sync_to_async(self.mint_next, thread_sensitive=True)(**kwargs)


class ClaimedPauses:
    """The ledger rows of a claimed continuation: its pause alone, or its group's members in mint
    order. A group's are read before its claim (finding the group needs them); a lone pause,
    claimed by its jti alone, is read only when something asks for its row: its owner or name
    for a pause minted next, its recorded question for ``still_shown``, its answer's trace for a
    recording span, its tries for a busy thread. So a plain continuation reads nothing."""

    def __init__(self, jtis: list[str], using: str, rows: list[Pause] | None = None) -> None:
        self.jtis = jtis
        self.using = using
        self._rows = rows

    @property
    def read(self) -> bool:
        """Whether the rows are in memory already."""
        return self._rows is not None

    def rows(self) -> list[Pause]:
        """The rows, read now if they were not (one statement)."""
        if self._rows is None:
            found = {
                pause.jti: pause
                for pause in Pause.objects.using(self.using).select_related("owner").filter(jti__in=self.jtis)
            }
            gone = [jti for jti in self.jtis if jti not in found]
            if gone:
                raise PauseCheckpointNotFoundError(
                    f"pause {', '.join(gone)} left the ledger while its continuation ran"
                )
            self._rows = [found[jti] for jti in self.jtis]
        return self._rows

    def row(self, jti: str) -> Pause:
        return next(pause for pause in self.rows() if pause.jti == jti)

    def ledger(self) -> PauseQuerySet:
        """Their rows in the ledger, for the transitions that end the continuation."""
        return Pause.objects.filter(jti__in=self.jtis)


@dataclass
class Claimed:
    """A continuation this process claimed and may run."""

    continuation: Continuation
    pauses: ClaimedPauses
    store: TurnCheckpointStore
    claimed_at: datetime

    @property
    def lead(self) -> str:
        """The jti of the pause its continuation was claimed on."""
        return self.pauses.jtis[0]


def continue_once(
    resumed: ResumedPause,
    run: Callable[[Continuation], Any],
    *,
    store: TurnCheckpointStore | None = None,
    agent: str | None = UNCHECKED,
    still_shown: Callable[[ResumedPause], Any] | None = None,
) -> ContinueResult:
    """Run ``run`` for ``resumed``'s run at most once across all processes (see the module).

    ``agent``: the name of the graph or agent ``run`` continues with (None: it has none). A
    pause that recorded another is refused before anything is claimed; left out, nothing is
    checked.

    ``still_shown``: called with each answered pause (the group's members), after the claim and
    before ``run``; it returns what the stored state asks now.
    When its digest does not verify against the MAC recorded at mint, or none is recorded,
    nothing runs: ``ran=False``, the reason says the question changed (both MACs' first
    characters), and the pause is listed as a failed continuation. It may raise
    ``ContinuationRefused`` itself. An answer read back from the store (``resumed(jti)``, a
    redelivery, a group's other members) whose MAC fails is refused the same way.
    """
    with continuation_span(resumed) as current:
        result = _continue_once(resumed, run, store, agent, still_shown, current)
        telemetry.outcome(current, "ran" if result.ran else "not_run")
        return result


def _continue_once(
    resumed: ResumedPause,
    run: Callable[[Continuation], Any],
    store: TurnCheckpointStore | None,
    agent: str | None,
    still_shown: Callable[[ResumedPause], Any] | None,
    current: Any = None,
) -> ContinueResult:
    claimed = claim(resumed, store, agent)
    if isinstance(claimed, ContinueResult):
        return claimed
    try:
        try:
            turn = take_turn(claimed.store, resumed.claims.thread_id)
        except ThreadBusyError as busy:
            give_back(claimed, busy)
            raise
        try:
            try:
                with holding(turn):
                    require_answers(claimed)
                    if still_shown is not None:
                        for pause, member in to_confirm(claimed):
                            require_shown(pause, still_shown(member))
                    output = run(claimed.continuation)
            except ContinuationRefused as refused:
                return refuse(claimed, refused)
            except PayloadBindingError as unreadable:
                return refuse(claimed, ContinuationRefused(str(unreadable)))
            except Exception as exc:
                crash(claimed, exc)
                raise
            return complete(claimed, output)
        finally:
            turn.release()
    finally:
        observe(claimed, recording(current))


async def acontinue_once(
    resumed: ResumedPause,
    run: Callable[[Continuation], Any | Awaitable[Any]],
    *,
    store: TurnCheckpointStore | None = None,
    agent: str | None = UNCHECKED,
    still_shown: Callable[[ResumedPause], Any | Awaitable[Any]] | None = None,
) -> ContinueResult:
    """:func:`continue_once` for async code; ``run`` and ``still_shown`` may be plain functions or
    ``async def``."""
    with continuation_span(resumed) as current:
        result = await _acontinue_once(resumed, run, store, agent, still_shown, current)
        telemetry.outcome(current, "ran" if result.ran else "not_run")
        return result


async def _acontinue_once(
    resumed: ResumedPause,
    run: Callable[[Continuation], Any | Awaitable[Any]],
    store: TurnCheckpointStore | None,
    agent: str | None,
    still_shown: Callable[[ResumedPause], Any | Awaitable[Any]] | None,
    current: Any = None,
) -> ContinueResult:
    claimed = await sync_to_async(claim, thread_sensitive=True)(resumed, store, agent)
    if isinstance(claimed, ContinueResult):
        return claimed
    try:
        try:
            turn: ThreadTurn = await atake_turn(claimed.store, resumed.claims.thread_id)
        except ThreadBusyError as busy:
            await sync_to_async(give_back, thread_sensitive=True)(claimed, busy)
            raise
        try:
            try:
                with holding(turn):
                    require_answers(claimed)
                    if still_shown is not None:
                        confirm = await sync_to_async(to_confirm, thread_sensitive=True)(claimed)
                        for pause, member in confirm:
                            shown = still_shown(member)
                            require_shown(pause, await shown if inspect.isawaitable(shown) else shown)
                    output = run(claimed.continuation)
                    if inspect.isawaitable(output):
                        output = await output
            except ContinuationRefused as refused:
                return await sync_to_async(refuse, thread_sensitive=True)(claimed, refused)
            except PayloadBindingError as unreadable:
                unusable = ContinuationRefused(str(unreadable))
                return await sync_to_async(refuse, thread_sensitive=True)(claimed, unusable)
            except Exception as exc:
                await sync_to_async(crash, thread_sensitive=True)(claimed, exc)
                raise
            return await sync_to_async(complete, thread_sensitive=True)(claimed, output)
        finally:
            await sync_to_async(turn.release, thread_sensitive=True)()
    finally:
        await sync_to_async(observe, thread_sensitive=True)(claimed, recording(current))


def continuation_span(resumed: ResumedPause) -> Any:
    """The ``turnstate.continue`` span of one attempt (linked, once claimed, to the answer's trace)."""
    claims = resumed.claims
    return telemetry.span(
        "turnstate.continue", jti=claims.jti, thread_id=claims.thread_id, run_id=claims.run_id
    )


def claim(
    resumed: ResumedPause, store: TurnCheckpointStore | None, agent: str | None = UNCHECKED
) -> Claimed | ContinueResult:
    """Steps 1 and 2: the right graph or agent, the group complete, every answer read, then the
    one claim; or why not.

    A lone answered pause is claimed by its jti at once, every condition in the claim's own
    UPDATE, with nothing read first. Only a claim that changed nothing reads the ledger: to find
    the pause's group (whose lead is then claimed for every member at once), or to tell why."""
    store = store if store is not None else get_default_store()
    now = timezone.now()
    jti = resumed.claims.jti
    # The primary, as resume_pause reads it: a lagging replica would show the last answer of a
    # group as pending to both who gave the last two, and the run would never continue.
    using = router.db_for_write(Pause)
    pauses = Pause.objects.using(using)
    if pauses.claim_answered(jti, now=now, agent=agent):
        claimed = ClaimedPauses([jti], using)
        continuation = Continuation(resumed=resumed, members=[resumed], store=store, claimed=claimed)
        return Claimed(continuation=continuation, pauses=claimed, store=store, claimed_at=now)
    pause, members = run_of(jti, now, pauses)
    if pause is None:
        return ContinueResult(ran=False, reason=REASON_GONE)
    if agent is not UNCHECKED and pause.agent is not None and agent != pause.agent:
        return ContinueResult(ran=False, reason=wrong_agent(pause, agent))
    statuses = {effective_status(member) for member in members}
    if PauseStatus.PENDING in statuses:
        return ContinueResult(
            ran=False, reason=REASON_NOT_ANSWERED if pause.group is None else REASON_GROUP_INCOMPLETE
        )
    if PauseStatus.EXPIRED in statuses:  # a lone pause that expired was never answered
        return ContinueResult(ran=False, reason=REASON_GROUP_EXPIRED if pause.group else REASON_NOT_ANSWERED)
    lead = members[0]
    settled = settled_reason(lead)
    if settled is not None:
        return ContinueResult(ran=False, reason=settled)
    with reading_primary():
        answers = [resumed if member.jti == jti else member_answer(member, store) for member in members]
    if not pauses.filter(pk__in=[member.pk for member in members]).claim_run(now=now):
        lead.refresh_from_db(fields=["continuation", "continuation_reason"])
        return ContinueResult(ran=False, reason=settled_reason(lead) or REASON_CLAIMED_ELSEWHERE)
    for member in members:  # as the claim left them
        member.continuation_attempts += 1
    claimed = ClaimedPauses([member.jti for member in members], using, rows=members)
    continuation = Continuation(resumed=resumed, members=answers, store=store, claimed=claimed)
    return Claimed(continuation=continuation, pauses=claimed, store=store, claimed_at=now)


def member_answer(member: Pause, store: TurnCheckpointStore) -> ResumedPause:
    """A group member's answer as stored; one whose rows fail their MAC is carried with why, so
    the whole run is claimed and refused (step 4) rather than left queued by an exception."""
    try:
        return rebuild_resumed(member, store)
    except PayloadBindingError as unreadable:
        return refused_resumed(member, f"pause {member.jti}: {unreadable}")


def recording(current: Any) -> bool:
    """Whether the continuation's span records (a tracer is configured)."""
    return current is not None and bool(current.is_recording())


def observe(claimed: Claimed, records: bool) -> None:
    """Link the continuation's span to the trace the answer was given in and record how long the
    answer waited: from the answer as this process got it (the resume, or its rebuild from the
    ledger), else from the continued pause's row, read for it only when the span records. Never
    raises: the run's outcome is what the caller sees."""
    resumed = claimed.continuation.resumed
    answered_at, trace = resumed.answered_at, resumed.answer_traceparent
    if answered_at is None and (claimed.pauses.read or records):
        try:
            pause = claimed.pauses.row(resumed.claims.jti)
        except Exception as exc:
            logger.error(
                "pause %s: reading its answer's trace failed: %s", claimed.lead, telemetry.described(exc)
            )
            return
        answered_at, trace = pause.answered_at, pause.answer_traceparent
    telemetry.link_current(trace)
    if answered_at is not None:
        waited = (claimed.claimed_at - answered_at).total_seconds()
        telemetry.record("turnstate.continuation.delay", max(0.0, waited))


def require_answers(claimed: Claimed) -> None:
    """``ContinuationRefused`` when an answer read back from the store failed its MAC (an answer
    given in this process carries none to check): the answer was rewritten since it was given."""
    for member in claimed.continuation.members:
        if member.answer_refused is not None:
            raise ContinuationRefused(member.answer_refused)


def to_confirm(claimed: Claimed) -> list[tuple[Pause, ResumedPause]]:
    """The answered pauses whose question ``still_shown`` must confirm, each with its answer: every
    one, a pause with no recorded MAC of what was shown included (it is refused)."""
    return list(zip(claimed.pauses.rows(), claimed.continuation.members, strict=True))


def require_shown(pause: Pause, shown: Any) -> None:
    """``ContinuationRefused`` unless the digest of ``shown`` verifies against the MAC ``pause``
    recorded at mint (under ``SECRET_KEY`` or a fallback); a pause with none is refused."""
    try:
        current = shown_digest(shown)
    except (TypeError, ValueError) as exc:
        raise ContinuationRefused(
            f"pause {pause.jti}: what the stored state asks now is not JSON ({exc}); nothing was run"
        ) from None
    identity = identity_of(pause)
    if shown_verifies(pause.shown_digest, identity, current):
        return
    if not pause.shown_digest:
        raise ContinuationRefused(shown_unrecorded(pause.jti))
    raise ContinuationRefused(question_changed(pause.jti, pause.shown_digest, shown_mac(identity, current)))


def wrong_agent(pause: Pause, agent: str | None) -> str:
    """Both names, and that nothing was spent."""
    found = "one with no name" if agent is None else repr(agent)
    return (
        f"pause {pause.jti} was minted by {pause.agent!r}, and this continuation runs {found}: "
        f"nothing was claimed, {pause.agent!r} can still continue it"
    )


def settled_reason(lead: Pause) -> str | None:
    """Why ``lead``'s continuation cannot be claimed now; None when it can."""
    state = lead.continuation
    if state == ContinuationState.CONTINUED:
        return REASON_ALREADY_CONTINUED
    if state == ContinuationState.REFUSED:
        return f"{REASON_FAILED_BEFORE}: {lead.continuation_reason}"
    if state == ContinuationState.CRASHED:
        return (
            f"{REASON_CRASHED_BEFORE}: {lead.continuation_reason}; an operator hands it again "
            "(turnstate_redeliver --jti=<jti>) once the cause is fixed"
        )
    if state == ContinuationState.RUNNING:
        return REASON_CLAIMED_ELSEWHERE
    return None


def complete(claimed: Claimed, output: Any) -> ContinueResult:
    """running -> continued. The run returned: a failed write is tried again, the run never is."""
    for delay in (*COMPLETION_TRIES, None):
        try:
            ledger(claimed).mark_continued(now=timezone.now())
            break
        except DatabaseError as exc:
            if delay is None:
                logger.error(
                    "pause %s: the run returned, and recording that failed %d times; it shows as "
                    "stalled after STALLED_AFTER: %s",
                    claimed.lead,
                    len(COMPLETION_TRIES) + 1,
                    telemetry.described(exc),
                )
                raise
            logger.warning("pause %s: recording that the run returned failed; trying again", claimed.lead)
            time.sleep(delay)
    return ContinueResult(ran=True, output=output, minted=list(claimed.continuation.minted))


def refuse(claimed: Claimed, refused: ContinuationRefused) -> ContinueResult:
    """running -> refused: never handed again."""
    ledger(claimed).mark_refused(refused.reason, now=timezone.now())
    return ContinueResult(ran=False, reason=refused.reason, minted=list(claimed.continuation.minted))


def crash(claimed: Claimed, exc: Exception) -> None:
    """running -> crashed, so the failure is listed now rather than as stalled much later. Never raises:
    the run's own exception is the one the caller sees."""
    try:
        ledger(claimed).mark_crashed(f"{type(exc).__name__}: {exc}", now=timezone.now())
    except Exception as failed:
        logger.error(
            "pause %s: recording that the run raised failed: %s", claimed.lead, telemetry.described(failed)
        )


def give_back(claimed: Claimed, busy: ThreadBusyError) -> None:
    """running -> failed: nothing ran (the thread stayed busy), so a retry can run it."""
    attempts = claimed.pauses.rows()[0].continuation_attempts  # this try included
    ledger(claimed).mark_failed(str(busy), now=timezone.now(), attempts=attempts)


def ledger(claimed: Claimed) -> PauseQuerySet:
    """The continued pauses' ledger rows: the group's members, or the pause alone."""
    return claimed.pauses.ledger()
