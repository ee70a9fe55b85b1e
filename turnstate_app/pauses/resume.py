"""Answering a pause: every check first, then one conditional UPDATE decides the one winner.

Nothing is consumed until the token's signature, the ledger row, its status and age,
the person's right to answer and the stored records have all been checked. Then, in
one transaction, ``UPDATE … WHERE jti = … AND status = 'pending'`` lets exactly one
caller in any number of processes win, and that caller stores the answer.

When the store is the model port in the ledger's own database, the ledger row and the
turn state are read in one query (:func:`turnstate_app.ports.ledger.read_pause`); any other
port is read through the port. The UPDATE and the answer's write are one storage call
(:func:`turnstate_app.ports.ledger.consume_and_answer`); that UPDATE also sets the answer's MAC
(:mod:`turnstate_app.pauses.binding`), so an answer rewritten in the store later is refused.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol

from asgiref.sync import sync_to_async
from django.core.exceptions import PermissionDenied
from django.db import OperationalError, router, transaction
from django.utils import timezone

from turnstate_app import telemetry
from turnstate_app.conf import conf
from turnstate_app.contracts import PauseClaims
from turnstate_app.errors import (
    AnswerValidationError,
    CheckpointFieldError,
    CheckpointLostError,
    PauseAlreadyAnsweredError,
    PauseCheckpointNotFoundError,
    PauseExpiredError,
    PayloadBindingError,
    TokenSignatureError,
)
from turnstate_app.managers import effective_status
from turnstate_app.models import Pause, PauseStatus
from turnstate_app.pauses.answers import validate_answer
from turnstate_app.pauses.binding import answer_mac, identity_of
from turnstate_app.pauses.handoff import ResumedPause, after_answer
from turnstate_app.pauses.mint import shared_alias, to_json
from turnstate_app.pauses.tokens import read_token
from turnstate_app.ports import get_default_store
from turnstate_app.ports import ledger as ledger_rows
from turnstate_app.ports.conflicts import is_serialization_failure
from turnstate_app.ports.limits import require_value
from turnstate_app.ports.model import reading_primary
from turnstate_app.turnstate import (
    TurnCheckpoint,
    TurnCheckpointStore,
    checkpoint_from_record,
    refuse_missing,
)


def resume_pause(
    token: str, answer: Any, *, user: Any = None, store: TurnCheckpointStore | None = None
) -> ResumedPause:
    """Consume ``token`` with ``answer``, exactly once across all processes.

    Raises, before anything is consumed: ``PayloadBindingError`` (bad signature, or a
    stored record that is unreadable or another turn's), ``PauseCheckpointNotFoundError``
    (no ledger row, or nothing stored), ``PauseAlreadyAnsweredError``, ``PauseExpiredError``,
    ``django.core.exceptions.PermissionDenied`` (``user`` is not the owner nor staff).
    Every decision reads the primary database, so a lagging replica never reports a
    recorded pause as lost.
    """
    with telemetry.span("turnstate.resume") as current:
        try:
            resumed, asked_at = _resume(token, answer, user, store)
        except Exception as refused:
            reason = refusal_reason(refused)
            telemetry.outcome(current, reason)
            if reason != "error":
                telemetry.record("turnstate.pauses.refused", reason=reason)
            if reason == "expired":
                telemetry.record("turnstate.pauses.expired")
            raise
        claims = resumed.claims
        telemetry.outcome(
            current, "answered", jti=claims.jti, thread_id=claims.thread_id, run_id=claims.run_id
        )
        telemetry.record("turnstate.pauses.answered")
        telemetry.record(
            "turnstate.pause.answer_delay", max(0.0, (timezone.now() - asked_at).total_seconds())
        )
        return resumed


def refusal_reason(error: BaseException) -> str:
    """The ``reason`` of ``turnstate.pauses.refused`` (and the resume span's outcome) for ``error``."""
    reasons: list[tuple[type[BaseException], str]] = [
        (TokenSignatureError, "invalid_token"),
        (PayloadBindingError, "record_mismatch"),
        (PauseCheckpointNotFoundError, "not_found"),
        (PauseAlreadyAnsweredError, "already_answered"),
        (PauseExpiredError, "expired"),
        (PermissionDenied, "not_owner"),
        (AnswerValidationError, "refused_by_schema"),
        (CheckpointFieldError, "invalid_answer"),
    ]
    return next((reason for kind, reason in reasons if isinstance(error, kind)), "error")


def _resume(
    token: str, answer: Any, user: Any, store: TurnCheckpointStore | None
) -> tuple[ResumedPause, datetime]:
    """:func:`resume_pause`'s work; also when the pause was minted (for the answer delay)."""
    store = store if store is not None else get_default_store()
    answer_value = to_json("answer", answer)
    require_value(answer_value, max_bytes=conf.MAX_VALUE_BYTES)
    claims = read_token(token)
    using = router.db_for_write(Pause)
    fast = shared_alias(store) == using  # the model port in the ledger's database: its own path
    now = timezone.now()
    # The checks, in the documented order, before anything is consumed.
    with reading_primary():
        pause, turn = read_pause(store, using, claims, now, fast=fast)
        refuse_unless_pending(pause, now, using)
        if user is not None:
            require_may_answer(pause, user)
        checkpoint = stored_turn(turn, claims)
    validate_answer(pause.answer_schema, answer)
    # The one winner.
    try:
        trace = telemetry.traceparent()
        mac = answer_mac(identity_of(claims), answer_value)
        if not ledger_rows.consume_and_answer(store, using, claims, answer_value, now, trace, mac):
            raise _LostTheRaceError
    except (_LostTheRaceError, OperationalError) as exc:
        if isinstance(exc, OperationalError) and not is_serialization_failure(exc):
            raise
        # Another answer won (under REPEATABLE READ or SERIALIZABLE the database says so
        # with a serialization failure): say what the ledger holds now.
        refuse_unless_pending(ledger_row(using, claims.jti, now), now, using)
        raise PauseAlreadyAnsweredError(f"pause {claims.jti!r} was answered concurrently") from None
    resumed = ResumedPause(
        claims=claims, answer=answer, checkpoint=checkpoint, answered_at=now, answer_traceparent=trace
    )
    transaction.on_commit(lambda: after_answer(resumed), using=using)
    return resumed, pause.created_at


class _LostTheRaceError(Exception):
    """The conditional UPDATE matched no row: another caller consumed, expired or removed it."""


class TurnSource(Protocol):
    """Where :func:`stored_turn` loads the turn from: the store, or what the ledger query read."""

    def load_sync(self, claims: PauseClaims) -> TurnCheckpoint: ...


@dataclass(frozen=True)
class ReadTurn:
    """The turn-state row as the ledger query found it, loaded exactly as the store loads one."""

    found: ledger_rows.LedgerRead

    def load_sync(self, claims: PauseClaims) -> TurnCheckpoint:
        raw = self.found.turn_state_text(claims.thread_id)
        if raw is None:
            refuse_missing(claims, request_recorded=self.found.request_recorded)
        return checkpoint_from_record(claims, raw)


def read_pause(
    store: TurnCheckpointStore, using: str, claims: PauseClaims, now: datetime, *, fast: bool
) -> tuple[Pause, TurnSource]:
    """The ledger row and where its turn state is; on the model port's own path both in one query."""
    if not fast:
        return ledger_row(using, claims.jti, now), store
    found = ledger_rows.read_pause(using=using, claims=claims, now=now)
    if found.pause is None:
        raise _not_in_ledger(claims.jti)
    return found.pause, ReadTurn(found)


def ledger_row(using: str, jti: str, now: datetime) -> Pause:
    """The ledger row with its effective status at ``now``; ``PauseCheckpointNotFoundError`` if gone."""
    pause = Pause.objects.using(using).with_effective_status(now).filter(jti=jti).first()
    if pause is None:
        raise _not_in_ledger(jti)
    return pause


def _not_in_ledger(jti: str) -> PauseCheckpointNotFoundError:
    return PauseCheckpointNotFoundError(
        f"no pause {jti!r} is in the ledger: it was never minted here, or was purged"
    )


async def aresume_pause(
    token: str, answer: Any, *, user: Any = None, store: TurnCheckpointStore | None = None
) -> ResumedPause:
    """:func:`resume_pause` for async code: one thread hop over the whole, so one transaction holds it."""
    return await sync_to_async(resume_pause, thread_sensitive=True)(token, answer, user=user, store=store)


def refuse_unless_pending(pause: Pause, now: datetime, using: str) -> None:
    """Answered wins over age; a pending pause past its age becomes expired (only pending ones).

    ``pause`` carries its effective status (:func:`ledger_row`). When marking it expired
    changes nothing, an answer committed meanwhile (whose lock the UPDATE waited on) wins.
    """
    if pause.status == PauseStatus.ANSWERED:
        raise PauseAlreadyAnsweredError(f"pause {pause.jti!r} has already been answered")
    if effective_status(pause) == PauseStatus.EXPIRED:
        pauses = Pause.objects.using(using)  # built only here: an answerable pause never needs it
        if pause.status == PauseStatus.PENDING and not pauses.expire(now=now, jti=pause.jti):
            again = pauses.filter(jti=pause.jti).values_list("status", flat=True).first()
            if again == PauseStatus.ANSWERED:
                raise PauseAlreadyAnsweredError(f"pause {pause.jti!r} has already been answered")
        raise PauseExpiredError(f"pause {pause.jti!r} expired at {pause.expires_at.isoformat()}")


def require_may_answer(pause: Pause, user: Any) -> None:
    """An owned pause: its owner or staff. An unowned one: anyone holding the token."""
    if pause.owner_id is None:
        return
    if getattr(user, "is_authenticated", False) and (user.pk == pause.owner_id or user.is_staff):
        return
    raise PermissionDenied("only the pause's owner or staff may answer it")


def stored_turn(turn: TurnSource, claims: Any) -> TurnCheckpoint | None:
    """The turn to continue; None when only the request is stored (answerable, not continuable)."""
    try:
        return turn.load_sync(claims)
    except CheckpointLostError:
        return None
