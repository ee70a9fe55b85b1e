"""Where the lifecycle stands, in the figures an operator is paged on.

``turnstate_status`` prints them and ``GET status/`` returns them. Each figure is one query over
an index of the ledger, so its cost follows what waits, never how much history the tables hold;
every count stops at ``limit`` (reported in ``capped``), so not even a backlog of a million
answered pauses makes a probe slow. The conditions are the ledger's own QuerySet methods.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from django.db.models import QuerySet
from django.utils import timezone

from turnstate_app.choices import PauseStatus
from turnstate_app.models import Pause

DEFAULT_COUNT_LIMIT = 10_000
"""Where a count stops: past it the figure reads "at least this many"."""

COUNTS = (
    "pending",
    "awaiting_handoff",
    "queued",
    "running",
    "stalled",
    "unresumable",
    "failed_groups",
    "failed_continuations",
)
"""The figures that are counts, in the order they are printed."""


@dataclass(frozen=True)
class LifecycleStatus:
    """The figures at ``at``; a count named in ``capped`` is at least its value (``limit``)."""

    at: datetime
    pending: int
    oldest_pending_age_seconds: int | None
    awaiting_handoff: int
    queued: int
    running: int
    stalled: int
    unresumable: int
    failed_groups: int
    failed_continuations: int
    limit: int
    capped: tuple[str, ...] = field(default=())

    def as_dict(self) -> dict[str, Any]:
        """The JSON document of ``turnstate_status --json`` and ``GET status/``."""
        return {
            "pending": self.pending,
            "oldest_pending_age_seconds": self.oldest_pending_age_seconds,
            "awaiting_handoff": self.awaiting_handoff,
            "queued": self.queued,
            "running": self.running,
            "stalled": self.stalled,
            "unresumable": self.unresumable,
            "failed_groups": self.failed_groups,
            "failed_continuations": self.failed_continuations,
            "count_limit": self.limit,
            "capped": list(self.capped),
            "at": self.at.isoformat(),
        }


def bounded_count(rows: QuerySet[Any], limit: int) -> int:
    """How many rows, counting no further than ``limit`` (one query: a LIMIT inside a COUNT)."""
    return rows[:limit].count()


def lifecycle_status(
    *, using: str | None = None, now: datetime | None = None, limit: int = DEFAULT_COUNT_LIMIT
) -> LifecycleStatus:
    """The figures, one query each (nine in all, whatever the tables hold).

    Every answered pause not yet continued is in exactly one of ``awaiting_handoff``,
    ``queued``, ``running``, ``stalled`` and ``failed_continuations`` (failed, crashed or
    refused): the states of :mod:`turnstate_app.after_answer`."""
    now = timezone.now() if now is None else now
    ledger = Pause.objects.using(using) if using else Pause.objects.all()
    pending = ledger.in_effective_status(PauseStatus.PENDING, now)
    oldest = pending.order_by("created_at").values_list("created_at", flat=True).first()
    counts = {
        "pending": bounded_count(pending, limit),
        "awaiting_handoff": bounded_count(ledger.awaiting_handoff(), limit),
        "queued": bounded_count(ledger.queued(), limit),
        "running": bounded_count(ledger.running(now), limit),
        "stalled": bounded_count(ledger.stalled(now), limit),
        "unresumable": bounded_count(ledger.stranded(now), limit),
        "failed_groups": bounded_count(ledger.failed_groups(now), limit),
        "failed_continuations": bounded_count(ledger.continuation_failed(), limit),
    }
    return LifecycleStatus(
        at=now,
        oldest_pending_age_seconds=None if oldest is None else max(0, int((now - oldest).total_seconds())),
        limit=limit,
        capped=tuple(name for name in COUNTS if counts[name] >= limit),
        **counts,
    )
