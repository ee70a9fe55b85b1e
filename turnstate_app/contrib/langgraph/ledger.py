"""Which of a thread's interrupts the pause ledger already speaks for.

An interrupt has a pause that still speaks for it while that pause is pending (and not
past its age), or answered with its answer not yet used up: a continuation that
returned (``continued``) or was refused (``refused``) no longer does. Such
an interrupt is never minted again, which is what keeps a partial answer to parallel
interrupts from asking the person the other question twice. Read on the primary: a
lagging replica would hide a pause minted a moment ago.

A pending pause whose checkpoints the saver deletes is recorded as unresumable on its
ledger row (:func:`strand_pauses`), so the core's unresumable list shows it.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.db import router
from django.db.models import Q
from django.utils import timezone

from turnstate_app.after_answer import SPEAKING
from turnstate_app.contrib.langgraph.interrupts import SCOPE_PREFIX
from turnstate_app.managers import effective_status_q
from turnstate_app.models import Pause, PauseStatus

STRAND_CHUNK = 100  # threads or places per UPDATE: far under every database's parameter limit


def speaking_for(thread_id: str, interrupt_ids: Collection[str], *, now: datetime | None = None) -> Q:
    """The pauses of ``thread_id`` that speak for any of ``interrupt_ids`` (see the module)."""
    now = now or timezone.now()
    pending = effective_status_q(PauseStatus.PENDING, now)
    answered = Q(status=PauseStatus.ANSWERED, continuation__in=SPEAKING)
    return Q(thread_id=thread_id, interrupt_id__in=list(interrupt_ids)) & (pending | answered)


def already_paused(thread_id: str, interrupt_ids: Collection[str]) -> set[str]:
    """The ids among ``interrupt_ids`` that a pause of ``thread_id`` speaks for."""
    if not interrupt_ids:
        return set()
    pauses = Pause.objects.using(router.db_for_write(Pause))
    found = pauses.filter(speaking_for(thread_id, interrupt_ids)).values_list("interrupt_id", flat=True)
    return {interrupt_id for interrupt_id in found if interrupt_id is not None}


@dataclass(frozen=True)
class Sibling:
    """A pause that speaks for an interrupt of a thread, as its ledger row holds it: enough to bind
    it again to the writes its run starts from (:mod:`.start`)."""

    pk: Any
    jti: str
    thread_id: str
    checkpoint_id: str
    interrupt_id: str
    recorded: str | None


def speaking_pauses(thread_id: str, interrupt_ids: Collection[str]) -> list[Sibling]:
    """The pauses of ``thread_id`` that speak for any of ``interrupt_ids``, in one query (the one
    :func:`already_paused` makes, with the columns a new binding needs)."""
    if not interrupt_ids:
        return []
    pauses = Pause.objects.using(router.db_for_write(Pause))
    found = pauses.filter(speaking_for(thread_id, interrupt_ids)).values_list(
        "pk", "jti", "thread_id", "checkpoint_id", "interrupt_id", "shown_digest"
    )
    return [
        Sibling(pk, jti, thread, checkpoint, interrupt_id, recorded)
        for pk, jti, thread, checkpoint, interrupt_id, recorded in found
        if interrupt_id is not None
    ]


def bind_again(rebinding: Iterable[tuple[Sibling, str]]) -> int:
    """Store each pause's new MAC of what it binds, only where the row still holds the MAC it was
    verified by (a conditional UPDATE: a row changed meanwhile keeps what it holds). How many."""
    pauses = Pause.objects.using(router.db_for_write(Pause))
    return sum(
        pauses.filter(pk=sibling.pk, shown_digest=sibling.recorded).update(shown_digest=mac)
        for sibling, mac in rebinding
    )


DELETED = (
    "checkpoints deleted (DjangoCheckpointSaver.{operation}): the question can be answered, "
    "the run cannot be continued from this store"
)
"""The reason a pending pause of a deleted thread is listed as unresumable."""


def strand_pauses(deleted: Iterable[str | tuple[str, str]], operation: str) -> int:
    """Record on the pending LangGraph pauses that ``deleted`` names why they cannot continue.

    ``deleted`` is thread ids (every checkpoint of each went) or ``(thread_id, checkpoint_id)``
    pairs (those checkpoints went). The UPDATE is the ledger's own
    (:meth:`~turnstate_app.managers.PauseQuerySet.mark_unresumable`); only the pauses this
    integration minted (its scope prefix) are judged. How many were marked.
    """
    pauses = Pause.objects.using(router.db_for_write(Pause)).filter(scope_hash__startswith=SCOPE_PREFIX)
    reason = DELETED.format(operation=operation)
    marked = 0
    items = list(dict.fromkeys(deleted))
    for start in range(0, len(items), STRAND_CHUNK):
        part = items[start : start + STRAND_CHUNK]
        condition = Q()
        for item in part:
            if isinstance(item, str):
                condition |= Q(thread_id=item)
            else:
                condition |= Q(thread_id=item[0], checkpoint_id=item[1])
        marked += pauses.filter(condition).mark_unresumable(reason)
    return marked
