"""What operators must see: interrupts nobody was asked about, and pauses whose interrupt is gone.

- *Unpaused interrupts*: an interrupt pending at a thread's head that no pause speaks
  for. A process that crashed between ``invoke`` and ``pause_interrupts`` leaves one;
  so does a continuation the graph refused (the person can be asked again by calling
  ``pause_interrupts``).
- *Stranded pauses*: a pending pause whose interrupt is no longer pending at its
  thread's head: the thread was erased or pruned, or the interrupt was answered
  elsewhere. Answering it would continue nothing (``continue_graph`` says so).

Both read the saver's rows without the graph: which interrupts wait is decided from the
head's pending writes by LangGraph's own rule (``langgraph.pregel._task_status``): a task
waits on the last question it asked until it records an output. One query finds the
candidate heads; each is then read with the saver's ``get_tuple`` (at most two queries).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from datetime import datetime
from typing import Any

from django.db.models import Exists, OuterRef
from django.utils import timezone

from turnstate_app.contrib.langgraph.errors import UnreadableCheckpointError
from turnstate_app.contrib.langgraph.interrupts import SCOPE_PREFIX
from turnstate_app.contrib.langgraph.ledger import speaking_for
from turnstate_app.contrib.langgraph.models import INTERRUPT_CHANNEL, Checkpoint, CheckpointWrite
from turnstate_app.models import Pause, PauseStatus

NULL_TASK_ID = "00000000-0000-0000-0000-000000000000"
CONTROL_CHANNELS = frozenset((INTERRUPT_CHANNEL, "__resume__", "__error__", "__error_source_node__"))


@dataclass(frozen=True)
class Orphan:
    """One row of the operators' list."""

    kind: str  # "unpaused_interrupt" | "stranded_pause"
    thread_id: str
    checkpoint_id: str
    interrupt_id: str
    jti: str | None
    created_at: datetime
    reason: str

    def as_json(self, now: datetime) -> dict[str, Any]:
        row = asdict(self)
        row["created_at"] = self.created_at.isoformat()
        row["age_seconds"] = max(0, int((now - self.created_at).total_seconds()))
        return row


UNPAUSED = "pending at the thread's head, and no pause asks for it (call pause_interrupts)"
STRANDED = (
    "the pause is pending, its interrupt is not pending at the thread's head "
    "(erased, pruned or answered elsewhere)"
)


def waiting_interrupts(pending_writes: Iterable[tuple[str, str, Any]]) -> dict[str, Any]:
    """Interrupt id -> interrupt, for the tasks that asked and have recorded no output yet."""
    finished: set[str] = set()
    asked: dict[str, list[Any]] = {}
    for task_id, channel, value in pending_writes:
        if task_id == NULL_TASK_ID:
            continue
        if channel == INTERRUPT_CHANNEL:
            asked.setdefault(task_id, []).extend(value if isinstance(value, list | tuple) else [value])
        elif channel not in CONTROL_CHANNELS:
            finished.add(task_id)
    return {i.id: i for task_id, found in asked.items() if task_id not in finished for i in found}


def _saver() -> Any:
    from turnstate_app.contrib.langgraph.saver import DjangoCheckpointSaver

    return DjangoCheckpointSaver()


def waiting_at_head(saver: Any, thread_id: str) -> tuple[str | None, datetime | None, dict[str, Any]]:
    """The head checkpoint of ``thread_id`` (root namespace), when it was made, what waits there."""
    head = saver.get_tuple({"configurable": {"thread_id": thread_id, "checkpoint_ns": ""}})
    if head is None:
        return None, None, {}
    created = datetime.fromisoformat(head.checkpoint["ts"])
    return (
        head.config["configurable"]["checkpoint_id"],
        created,
        waiting_interrupts(head.pending_writes or []),
    )


def unpaused_interrupts(*, saver: Any = None, now: datetime | None = None) -> list[Orphan]:
    """Interrupts pending at a thread's head that no pause speaks for, newest head first."""
    saver = saver or _saver()
    now = now or timezone.now()
    asked = CheckpointWrite.objects.filter(
        thread_id=OuterRef("thread_id"),
        ns_hash=OuterRef("ns_hash"),
        checkpoint_id=OuterRef("checkpoint_id"),
        channel=INTERRUPT_CHANNEL,
    )
    threads = (
        Checkpoint.objects.heads()
        .filter(Exists(asked))
        .order_by("-created_at")
        .values_list("thread_id", flat=True)
    )
    found: list[Orphan] = []
    for thread_id in threads:
        try:
            checkpoint_id, created, waiting = waiting_at_head(saver, thread_id)
        except UnreadableCheckpointError:
            continue  # its pending pauses are listed as stranded; the rows by turnstate_rotate_keys

        if checkpoint_id is None or not waiting:
            continue
        spoken = set(
            Pause.objects.filter(speaking_for(thread_id, list(waiting), now=now)).values_list(
                "interrupt_id", flat=True
            )
        )
        found += [
            Orphan(
                "unpaused_interrupt", thread_id, checkpoint_id, interrupt_id, None, created or now, UNPAUSED
            )
            for interrupt_id in sorted(waiting)
            if interrupt_id not in spoken
        ]
    return found


UNREADABLE = (
    "the pause is pending, and its thread's head checkpoint cannot be read "
    "(corrupt, or its encryption key is not configured)"
)


def stranded_pauses(*, saver: Any = None, now: datetime | None = None) -> list[Orphan]:
    """Pending pauses naming an interrupt that is not pending at their thread's head."""
    saver = saver or _saver()
    now = now or timezone.now()
    pauses = (
        Pause.objects.in_effective_status(PauseStatus.PENDING, now)
        .filter(interrupt_id__isnull=False, scope_hash__startswith=SCOPE_PREFIX)
        .order_by("thread_id", "created_at")
    )
    by_thread: dict[str, list[Pause]] = {}
    for pause in pauses.only("jti", "thread_id", "checkpoint_id", "interrupt_id", "created_at"):
        by_thread.setdefault(pause.thread_id, []).append(pause)
    found: list[Orphan] = []
    for thread_id, members in by_thread.items():
        try:
            _, _, waiting = waiting_at_head(saver, thread_id)
            reason = STRANDED
        except UnreadableCheckpointError:  # e.g. its encryption key was dropped: nothing can continue it
            waiting, reason = {}, UNREADABLE
        found += [
            Orphan(
                "stranded_pause",
                thread_id,
                pause.checkpoint_id,
                str(pause.interrupt_id),
                pause.jti,
                pause.created_at,
                reason,
            )
            for pause in members
            if pause.interrupt_id not in waiting
        ]
    return found


def orphans(*, now: datetime | None = None) -> list[Orphan]:
    """Both lists, unpaused interrupts first."""
    now = now or timezone.now()
    saver = _saver()
    return [*unpaused_interrupts(saver=saver, now=now), *stranded_pauses(saver=saver, now=now)]


def as_rows(found: Sequence[Orphan], now: datetime) -> list[dict[str, Any]]:
    return [orphan.as_json(now) for orphan in found]
