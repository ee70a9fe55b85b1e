"""Answering a pause: every check first, then one conditional UPDATE decides the one winner.

Nothing is consumed until the token's signature, the ledger row, its status and age,
the person's right to answer and the stored records have all been checked. Then, in
one transaction, ``UPDATE … WHERE jti = … AND status = 'pending'`` lets exactly one
caller in any number of processes win, and that caller stores the answer.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from asgiref.sync import sync_to_async
from django.core.exceptions import PermissionDenied
from django.db import router, transaction
from django.utils import timezone

from turnstate_app.conf import conf
from turnstate_app.errors import (
    CheckpointLostError,
    PauseAlreadyAnsweredError,
    PauseCheckpointNotFoundError,
    PauseExpiredError,
)
from turnstate_app.managers import effective_status
from turnstate_app.models import Pause, PauseQuerySet, PauseStatus
from turnstate_app.pauses.handoff import ResumedPause, after_answer
from turnstate_app.pauses.mint import to_json
from turnstate_app.pauses.tokens import read_token
from turnstate_app.ports import get_default_store
from turnstate_app.ports.limits import require_value
from turnstate_app.turnstate import TurnCheckpoint, TurnCheckpointStore


def resume_pause(
    token: str, answer: Any, *, user: Any = None, store: TurnCheckpointStore | None = None
) -> ResumedPause:
    """Consume ``token`` with ``answer``, exactly once across all processes.

    Raises, before anything is consumed: ``PayloadBindingError`` (bad signature, or a
    stored record that is unreadable or another turn's), ``PauseCheckpointNotFoundError``
    (no ledger row, or nothing stored), ``PauseAlreadyAnsweredError``, ``PauseExpiredError``,
    ``django.core.exceptions.PermissionDenied`` (``user`` is not the owner nor staff).
    """
    store = store if store is not None else get_default_store()
    answer_value = to_json("answer", answer)
    require_value(answer_value, max_bytes=conf.MAX_VALUE_BYTES)
    claims = read_token(token)
    using = router.db_for_write(Pause)
    pauses = Pause.objects.using(using)
    now = timezone.now()
    try:
        pause = pauses.with_effective_status(now).get(jti=claims.jti)
    except Pause.DoesNotExist:
        raise PauseCheckpointNotFoundError(
            f"no pause {claims.jti!r} is in the ledger: it was never minted here, or was purged"
        ) from None
    refuse_unless_pending(pause, now, pauses)
    if user is not None:
        require_may_answer(pause, user)
    checkpoint = stored_turn(store, claims)

    with transaction.atomic(using=using):
        if not pauses.consume(claims.jti, now=now):
            refuse_unless_pending(pauses.with_effective_status(now).get(jti=claims.jti), now, pauses)
            raise PauseAlreadyAnsweredError(f"pause {claims.jti!r} was answered concurrently")
        store.write_answer_sync(claims, answer_value)
    resumed = ResumedPause(claims=claims, answer=answer, checkpoint=checkpoint)
    transaction.on_commit(lambda: after_answer(resumed), using=using)
    return resumed


async def aresume_pause(
    token: str, answer: Any, *, user: Any = None, store: TurnCheckpointStore | None = None
) -> ResumedPause:
    """:func:`resume_pause` for async code: one thread hop over the whole, so one transaction holds it."""
    return await sync_to_async(resume_pause, thread_sensitive=True)(token, answer, user=user, store=store)


def refuse_unless_pending(pause: Pause, now: datetime, pauses: PauseQuerySet) -> None:
    """Answered wins over age; a pending pause past its age becomes expired (only pending ones).

    ``pause`` carries ``effective_status`` (:meth:`PauseQuerySet.with_effective_status`).
    """
    if pause.status == PauseStatus.ANSWERED:
        raise PauseAlreadyAnsweredError(f"pause {pause.jti!r} has already been answered")
    if effective_status(pause) == PauseStatus.EXPIRED:
        pauses.expire(now=now, jti=pause.jti)
        raise PauseExpiredError(f"pause {pause.jti!r} expired at {pause.expires_at.isoformat()}")


def require_may_answer(pause: Pause, user: Any) -> None:
    """An owned pause: its owner or staff. An unowned one: anyone holding the token."""
    if pause.owner_id is None:
        return
    if getattr(user, "is_authenticated", False) and (user.pk == pause.owner_id or user.is_staff):
        return
    raise PermissionDenied("only the pause's owner or staff may answer it")


def stored_turn(store: TurnCheckpointStore, claims: Any) -> TurnCheckpoint | None:
    """The turn to continue; None when only the request is stored (answerable, not continuable)."""
    try:
        return store.load_sync(claims)
    except CheckpointLostError:
        return None
