"""Expiry for operators: pending pauses past their age become ``expired``, in bounded batches.

Each batch reads at most ``batch_size`` ids in keyset order by ``(expires_at, pk)``, the order
of the ledger's expiry index (so a batch reads the overdue pauses and nothing else, however many
rows the ledger holds), then changes them in ONE conditional UPDATE that re-checks "still
pending and past its age": an answer committed between the read and the UPDATE wins, and the
batch counts it as kept.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.db import router
from django.utils import timezone

from turnstate_app import telemetry
from turnstate_app.models import Pause
from turnstate_app.retention import DEFAULT_BATCH_SIZE


@dataclass(frozen=True)
class ExpiryBatch:
    """One batch: how many overdue pauses it read, and how many of them it marked expired."""

    number: int
    found: int
    expired: int

    @property
    def kept(self) -> int:
        """Read as overdue, then answered (or expired by an answer attempt) before the UPDATE."""
        return self.found - self.expired


@dataclass(frozen=True)
class ExpiryResult:
    expired: int
    kept: int
    batches: int
    dry_run: bool


def expire_overdue(
    *,
    batch_size: int = DEFAULT_BATCH_SIZE,
    dry_run: bool = False,
    progress: Callable[[ExpiryBatch], None] | None = None,
    now: datetime | None = None,
) -> ExpiryResult:
    """Mark every pending pause past ``expires_at`` (at ``now``) expired; a dry run only counts."""
    now = timezone.now() if now is None else now
    pauses = Pause.objects.using(router.db_for_write(Pause))  # the primary: replicas lag
    expired = kept = batches = 0
    after: tuple[datetime, Any] | None = None
    while True:
        rows = pauses.overdue_batch(now, after, batch_size)
        if not rows:
            break
        after = rows[-1]
        ids = [pk for _, pk in rows]
        changed = len(ids) if dry_run else pauses.filter(pk__in=ids).expire(now=now)
        if not dry_run and changed:
            telemetry.record("turnstate.pauses.expired", changed)
        batches += 1
        batch = ExpiryBatch(number=batches, found=len(ids), expired=changed)
        expired += batch.expired
        kept += batch.kept
        if progress is not None:
            progress(batch)
    return ExpiryResult(expired=expired, kept=kept, batches=batches, dry_run=dry_run)
