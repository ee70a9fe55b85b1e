"""Re-encrypting stored values under each thread's current key, in bounded batches, while the app runs.

A table is walked by primary key in keyset batches. A batch reads ids, threads, key ids and
values (with one key list for every thread, only the rows not on its first key; clear rows
included), and writes them back re-encrypted, one ``UPDATE`` per row sent together in one
transaction, each conditioned on the row's old key id *and* old value: a row written
meanwhile (by a process still on the old keys, or the new ones) no longer matches, keeps what
that writer wrote, and is left for the next run.
Nothing is lost and nothing is encrypted twice. The state lives in the rows themselves, so a
killed run resumes by being run again.

A row whose key id is not among its thread's keys is unreadable: counted and listed, never
touched.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from django.db import connections, router, transaction
from django.db.models import Field, Q

from turnstate_app.conf import conf
from turnstate_app.encryption import KeySet, keys_for, seal, seal_text, unseal, unseal_text
from turnstate_app.errors import UnreadableValueError
from turnstate_app.sealed_tables import SealedTable

DEFAULT_BATCH_SIZE = 200
MAX_BATCH_SIZE = 5000
LISTED_UNREADABLE = 20
"""Unreadable rows a survey lists by id (all are counted)."""


@dataclass
class TableCounts:
    """What one table holds (a survey) or what a rotation did to it."""

    label: str
    clear: int = 0
    old_key: int = 0
    current: int = 0
    unreadable: int = 0
    rotated: int = 0
    written_meanwhile: int = 0
    batches: int = 0
    unreadable_rows: list[tuple[Any, str]] = field(default_factory=list)

    def note_unreadable(self, pk: Any, thread: str) -> None:
        self.unreadable += 1
        if len(self.unreadable_rows) < LISTED_UNREADABLE:
            self.unreadable_rows.append((pk, thread))


def _keys(cache: dict[str, KeySet | None], thread: str) -> KeySet | None:
    if thread not in cache:
        cache[thread] = keys_for(thread)
    return cache[thread]


def _batches(
    table: SealedTable, batch_size: int, *, stale_only: bool, values: bool
) -> Iterator[list[tuple[Any, ...]]]:
    """(pk, thread, key id[, value]) of the table's sealed, non-null values, ``batch_size`` at a time,
    by pk; one query each.

    ``stale_only`` (one key list for every thread): only rows not on the first key, found by SQL.
    """
    alias = router.db_for_write(table.model)
    rows = (
        table.model._default_manager.using(alias)
        .filter(table.scope)
        .exclude(**{f"{table.value}__isnull": True})
    )
    current = keys_for("") if stale_only else None
    if current is not None:
        rows = rows.filter(Q(**{f"{table.key_id}__isnull": True}) | ~Q(**{table.key_id: current.primary_id}))
    after = None
    while True:
        page = rows if after is None else rows.filter(pk__gt=after)
        columns = ("pk", table.thread, table.key_id, *([table.value] if values else []))
        batch = list(page.order_by("pk").values_list(*columns)[:batch_size])
        if not batch:
            return
        yield batch
        after = batch[-1][0]


def survey(table: SealedTable, *, batch_size: int = DEFAULT_BATCH_SIZE) -> TableCounts:
    """Count the table's rows: clear, on an old key, on the current key, unreadable (key gone)."""
    counts = TableCounts(table.label)
    for batch in _batches(table, batch_size, stale_only=False, values=False):
        counts.batches += 1
        cache: dict[str, KeySet | None] = {}  # per batch: memory stays flat whatever the threads
        for pk, thread, key_id in batch:
            keys = _keys(cache, thread)
            if key_id is None:
                counts.clear += 1
            elif keys is not None and key_id == keys.primary_id:
                counts.current += 1
            elif keys is not None and key_id in keys.by_id:
                counts.old_key += 1
            else:
                counts.note_unreadable(pk, thread)
    return counts


def rotate(
    table: SealedTable,
    *,
    batch_size: int = DEFAULT_BATCH_SIZE,
    progress: Callable[[TableCounts], None] | None = None,
) -> TableCounts:
    """Re-encrypt every row of ``table`` not on its thread's current key (clear rows included)."""
    counts = TableCounts(table.label)
    stale_only = conf.ENCRYPTION_KEY_RING is None
    for batch in _batches(table, batch_size, stale_only=stale_only, values=True):
        counts.batches += 1
        cache: dict[str, KeySet | None] = {}  # per batch: memory stays flat whatever the threads
        due = []
        for pk, thread, key_id, stored in batch:
            keys = _keys(cache, thread)
            if keys is None or key_id == keys.primary_id:
                continue  # clear by design (no keys for this thread), or current
            if key_id is not None and key_id not in keys.by_id:
                counts.note_unreadable(pk, thread)
                continue
            due.append((pk, thread, key_id, stored))
        if due:
            _rotate_rows(table, due, counts)
        if progress is not None:
            progress(counts)
    return counts


def _rotate_rows(table: SealedTable, due: list[tuple[Any, ...]], counts: TableCounts) -> None:
    """Re-encrypt these rows (pk, thread, key id, value as read): one ``UPDATE`` per row, sent
    together, each applied only while the row still holds the key id and value read; one
    transaction per batch."""
    alias = router.db_for_write(table.model)
    was_clear: list[tuple[Any, ...]] = []
    was_sealed: list[tuple[Any, ...]] = []
    for pk, thread, key_id, stored in due:
        new: bytes | str
        try:
            if table.binary:
                stored = bytes(stored)
                new, new_id = seal(unseal(stored, key_id, thread_id=thread), thread_id=thread)
            else:
                new, new_id = seal_text(unseal_text(str(stored), key_id, thread_id=thread), thread_id=thread)
        except UnreadableValueError:
            counts.note_unreadable(pk, thread)
            continue
        if key_id is None:
            was_clear.append((new, new_id, pk, stored))
        else:
            was_sealed.append((new, new_id, pk, key_id, stored))
    if not was_clear and not was_sealed:
        return
    clear_sql, sealed_sql = _updates(table, alias)
    updated = 0
    with transaction.atomic(using=alias), connections[alias].cursor() as cursor:
        for sql, rows in ((clear_sql, was_clear), (sealed_sql, was_sealed)):
            if rows:
                cursor.executemany(sql, rows)
                updated += cursor.rowcount
    counts.rotated += updated
    counts.written_meanwhile += len(was_clear) + len(was_sealed) - updated


def _updates(table: SealedTable, alias: str) -> tuple[str, str]:
    """The compare-and-set ``UPDATE`` of one row, for a row read clear and for one read sealed."""
    quote = connections[alias].ops.quote_name
    meta = table.model._meta
    name = quote(meta.db_table)
    assert meta.pk is not None
    value, key_id, pk = (
        quote(str(_field(table, n).column)) for n in (table.value, table.key_id, meta.pk.name)
    )
    head = f"UPDATE {name} SET {value} = %s, {key_id} = %s WHERE {pk} = %s AND "
    return (
        f"{head}{key_id} IS NULL AND {value} = %s",
        f"{head}{key_id} = %s AND {value} = %s",
    )


def _field(table: SealedTable, name: str) -> Field[Any, Any]:
    found = table.model._meta.get_field(name)
    assert isinstance(found, Field)
    return found
