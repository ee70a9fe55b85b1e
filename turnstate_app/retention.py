"""Retention: deleting pauses and the rows they left, in bounded batches.

Each batch is its own transaction holding at most ``batch_size`` ids in memory, so a purge
over millions of rows keeps memory flat and never holds a long lock. Every statement names
the rows it touches by an index (the ledger's primary key, the store's unique key), so a
batch costs the same at the start of a big table as at its end.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from django.db import router, transaction
from django.db.models import F, Model, QuerySet
from django.db.models.lookups import In

from turnstate_app import telemetry
from turnstate_app.keys import per_mint_keys
from turnstate_app.models import CheckpointMetadata, Pause, PauseQuerySet
from turnstate_app.signals import pauses_purged, thread_erased

DEFAULT_BATCH_SIZE = 1000
MAX_BATCH_SIZE = 5000
"""A batch's statements carry a few parameters per pause; this keeps them under every
database's limit (SQLite's is the lowest)."""


@dataclass(frozen=True)
class PurgeBatch:
    """What one batch deleted (or, in a dry run, would delete)."""

    number: int
    pauses: int
    rows: int


@dataclass(frozen=True)
class PurgeResult:
    pauses: int
    rows: int
    batches: int
    dry_run: bool


Progress = Callable[[PurgeBatch], None]
Batch = list[tuple[Any, str, str, str, str]]  # pk, jti, thread, checkpoint, request_key
Place = tuple[str, str, str]  # thread_id, checkpoint_id, key


def write_db(queryset: QuerySet[Any]) -> str:
    """Where deleting ``queryset`` goes, decided as ``QuerySet.delete`` decides it."""
    # ``QuerySet.db`` names the database a query would run on now; a locking query is a write.
    return queryset.select_for_update().db


def require_batch_size(batch_size: int) -> None:
    if not 1 <= batch_size <= MAX_BATCH_SIZE:
        raise ValueError(f"batch_size must be between 1 and {MAX_BATCH_SIZE}, not {batch_size}")


class Tally:
    """Adds up the batches and reports each one as it lands."""

    def __init__(self, progress: Progress | None) -> None:
        self.progress = progress
        self.pauses = self.rows = self.batches = 0

    def add(self, pauses: int, rows: int) -> None:
        self.batches += 1
        self.pauses += pauses
        self.rows += rows
        if self.progress is not None:
            self.progress(PurgeBatch(number=self.batches, pauses=pauses, rows=rows))

    def result(self, dry_run: bool) -> PurgeResult:
        return PurgeResult(pauses=self.pauses, rows=self.rows, batches=self.batches, dry_run=dry_run)


def purge_pauses(
    pauses: PauseQuerySet,
    *,
    batch_size: int = DEFAULT_BATCH_SIZE,
    dry_run: bool = False,
    progress: Progress | None = None,
) -> PurgeResult:
    """Delete ``pauses`` with their turn state, answer and request rows, batch by batch.

    A request row is kept while a pause outside the purge still points at it: a retried
    tool call gives two pauses one request row. "Still points at it" is decided after the
    batch's rows are locked, so a pause minted meanwhile on the same request key either
    committed before (and is seen, and its request row kept) or waits for this batch to
    commit (and then writes its request row anew). The batch's ledger rows are locked as
    they are read, so an answer committing meanwhile is deleted with its pause, never left
    behind without it. ``dry_run`` counts exactly what a real
    run would delete, and deletes nothing. A batch is three reads and two deletes.
    """
    require_batch_size(batch_size)
    using = write_db(pauses)
    scope = pauses.using(using).order_by("pk")
    tally = Tally(progress)
    last: Any = None
    while True:
        with transaction.atomic(using=using):
            page = scope if last is None else scope.filter(pk__gt=last)
            if not dry_run:
                # The ledger rows first: an answer in flight on one of them commits (with its
                # answer row) before this read returns, or waits until the batch is gone.
                page = page.select_for_update()
            batch: Batch = list(
                page.values_list("pk", "jti", "thread_id", "checkpoint_id", "request_key")[:batch_size]
            )
            if not batch:
                break
            last = batch[-1][0]
            candidates = rows_of(using, batch, lock=not dry_run)
            kept = still_shared(scope, batch, dry_run=dry_run)  # read after the lock: sees every mint
            rows = [pk for pk, place in candidates if place not in kept]
            if dry_run:
                tally.add(len(batch), len(rows))
                continue
            with telemetry.span("turnstate.retention.batch") as current:
                deleted_rows, _ = (
                    CheckpointMetadata.objects.using(using).filter(InArray(F("pk"), rows)).delete()
                )
                ids = [pk for pk, *_ in batch]
                deleted_pauses, _ = Pause.objects.using(using).filter(InArray(F("pk"), ids)).delete()
                telemetry.outcome(current, "deleted", rows=deleted_rows, pauses=deleted_pauses)
            threads = sorted({thread for _, _, thread, *_ in batch})
            pauses_purged.send(sender=Pause, thread_ids=threads, using=using)
            tally.add(deleted_pauses, deleted_rows)
    return tally.result(dry_run)


def still_shared(scope: QuerySet[Pause], batch: Batch, *, dry_run: bool) -> set[Place]:
    """The batch's request rows that a pause outside the purge points at."""
    requests = {(thread, checkpoint, key) for _, _, thread, checkpoint, key in batch}
    ids = {pk for pk, *_ in batch}
    sharers = [
        (pk, (thread, checkpoint, key))
        for pk, thread, checkpoint, key in narrowed(
            Pause.objects.using(scope.db),
            requests,
            "request_key",
            ("pk", "thread_id", "checkpoint_id", "request_key"),
        )
        if pk not in ids
    ]
    if dry_run:
        # A real run would have deleted the earlier batches' pauses already.
        earlier = [pk for pk, _ in sharers if pk < min(ids)]
        if earlier:
            gone = set(scope.filter(pk__in=earlier).values_list("pk", flat=True))
            sharers = [(pk, place) for pk, place in sharers if pk not in gone]
    return {place for _, place in sharers}


def rows_of(using: str, batch: Batch, *, lock: bool) -> list[tuple[Any, Place]]:
    """The batch's store rows (turn state, answer, request) with their places, locked when ``lock``.

    The lock is what makes the "shared" decision safe: a concurrent mint's request write
    on one of these rows waits for this transaction, or this read waits for the mint's.
    """
    wanted: set[Place] = set()
    for _, jti, thread, checkpoint, request_key in batch:
        wanted.update((thread, checkpoint, key) for key in per_mint_keys(jti))
        wanted.add((thread, checkpoint, request_key))
    rows = CheckpointMetadata.objects.using(using)
    if lock:
        rows = rows.select_for_update()
    fields = ("pk", "thread_id", "checkpoint_id", "key")
    return [
        (pk, (thread, checkpoint, key))
        for pk, thread, checkpoint, key in narrowed(rows, wanted, "key", fields)
    ]


def narrowed(
    manager: Any, places: set[Place], key_field: str, fields: tuple[str, ...]
) -> list[tuple[Any, ...]]:
    """The rows at exactly these (thread, checkpoint, key) places.

    Asked as ``thread_id IN (...) AND key IN (...)``, then matched exactly here: one index
    range per thread, planned in a millisecond. The equivalent OR of one clause per place is
    exact in SQL but costs PostgreSQL seconds to plan at a thousand places.
    """
    rows = manager.filter(
        InArray(F("thread_id"), sorted({t for t, _, _ in places})),
        InArray(F(key_field), sorted({k for _, _, k in places})),
    ).values_list(*fields)
    return [row for row in rows if tuple(row[1:4]) in places]


def stored_among(model: type[Model], field: str, values: list[str]) -> list[str]:
    """The ``values`` that ``model``'s table holds in ``field``, sorted: one query, on its write alias.

    An integration's purge receiver asks this of its own table first: most of a batch's threads
    were never that integration's, and then nothing else is asked.
    """
    rows = model._default_manager.using(router.db_for_write(model)).filter(InArray(F(field), values))
    return sorted(rows.order_by().values_list(field, flat=True).distinct())


class InArray(In):
    """``IN (...)``; on PostgreSQL ``= ANY(%s)`` with one array parameter.

    A batch names thousands of ids: as one parameter the statement stays short, and the
    driver does not re-parse a statement of thousands of placeholders on every batch.
    """

    def get_prep_lookup(self) -> Any:
        return list(self.rhs)  # ids and keys as read from the database: nothing to prepare

    def as_postgresql(self, compiler: Any, connection: Any) -> tuple[str, tuple[Any, ...]]:
        lhs, lhs_params = self.process_lhs(compiler, connection)
        return f"{lhs} = ANY(%s)", (*lhs_params, list(self.rhs))


def delete_in_batches(
    queryset: QuerySet[Any],
    *,
    batch_size: int,
    dry_run: bool,
    on_batch: Callable[[int], None],
) -> None:
    """Delete ``queryset`` by primary key, ``batch_size`` rows per transaction."""
    model: type[Model] = queryset.model
    using = write_db(queryset)
    scope = queryset.using(using).order_by("pk")
    if dry_run:
        total = scope.count()
        for start in range(0, total, batch_size):
            on_batch(min(batch_size, total - start))
        return
    while True:
        with transaction.atomic(using=using):
            ids = list(scope.values_list("pk", flat=True)[:batch_size])
            if not ids:
                return
            deleted, _ = model._default_manager.using(using).filter(InArray(F("pk"), ids)).delete()
            on_batch(deleted)


def erase_thread(
    thread_id: str,
    *,
    batch_size: int = DEFAULT_BATCH_SIZE,
    dry_run: bool = False,
    progress: Progress | None = None,
) -> PurgeResult:
    """Everything of one thread, whatever its state: its pauses first (their tokens die at
    once), then every row it stored (requests, turn states, answers, rows of older builds)."""
    require_batch_size(batch_size)
    tally = Tally(progress)
    delete_in_batches(
        Pause.objects.for_thread(thread_id),
        batch_size=batch_size,
        dry_run=dry_run,
        on_batch=lambda n: tally.add(n, 0),
    )
    delete_in_batches(
        CheckpointMetadata.objects.for_thread(thread_id),
        batch_size=batch_size,
        dry_run=dry_run,
        on_batch=lambda n: tally.add(0, n),
    )
    if not dry_run:
        thread_erased.send(
            sender=Pause, thread_id=thread_id, using=write_db(Pause.objects.for_thread(thread_id))
        )
    return tally.result(dry_run)


def erase_owned_pauses(sender: type[Model], instance: Model, using: str, **kwargs: Any) -> None:
    """``pre_delete`` of the user model: a deleted person's pauses go, and so do their rows.

    ``Pause.owner`` cascades too, but a cascade knows nothing of the store's rows.
    """
    purge_pauses(Pause.objects.using(using).filter(owner_id=instance.pk), batch_size=MAX_BATCH_SIZE)
