"""Re-encrypting stored values under each thread's current key, in bounded batches, while the app runs.

A table is walked by primary key in keyset batches. A batch reads ids, threads and key ids
only; it then reads the values of the rows not on their thread's current key (clear rows
included), and writes them back re-encrypted in one ``UPDATE`` whose condition is each row's
old key id *and* old value: a row written meanwhile (by a process still on the old keys, or
the new ones) no longer matches, keeps what that writer wrote, and is left for the next run.
Nothing is lost and nothing is encrypted twice. The state lives in the rows themselves, so a
killed run resumes by being run again.

A row whose key id is not among its thread's keys is unreadable: counted and listed, never
touched.
"""

from __future__ import annotations

import functools
import operator
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from django.db import router
from django.db.models import Case, Field, Q, Value, When

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
    table: SealedTable, batch_size: int, *, stale_only: bool
) -> Iterator[list[tuple[Any, str, Any]]]:
    """(pk, thread, key id) of the table's sealed, non-null values, ``batch_size`` at a time, by pk.

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
        batch = list(page.order_by("pk").values_list("pk", table.thread, table.key_id)[:batch_size])
        if not batch:
            return
        yield batch
        after = batch[-1][0]


def survey(table: SealedTable, *, batch_size: int = DEFAULT_BATCH_SIZE) -> TableCounts:
    """Count the table's rows: clear, on an old key, on the current key, unreadable (key gone)."""
    counts = TableCounts(table.label)
    cache: dict[str, KeySet | None] = {}
    for batch in _batches(table, batch_size, stale_only=False):
        counts.batches += 1
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
    cache: dict[str, KeySet | None] = {}
    stale_only = conf.ENCRYPTION_KEY_RING is None
    for batch in _batches(table, batch_size, stale_only=stale_only):
        counts.batches += 1
        due: dict[Any, str] = {}
        for pk, thread, key_id in batch:
            keys = _keys(cache, thread)
            if keys is None or key_id == keys.primary_id:
                continue  # clear by design (no keys for this thread), or current
            if key_id is not None and key_id not in keys.by_id:
                counts.note_unreadable(pk, thread)
                continue
            due[pk] = thread
        if due:
            _rotate_rows(table, due, counts)
        if progress is not None:
            progress(counts)
    return counts


def _rotate_rows(table: SealedTable, due: dict[Any, str], counts: TableCounts) -> None:
    """Re-encrypt these rows (pk -> thread) in one ``UPDATE``, each only if unchanged since read."""
    manager = table.model._default_manager.using(router.db_for_write(table.model))
    found = manager.filter(pk__in=list(due)).values_list("pk", table.value, table.key_id)
    matches, values, key_ids = [], [], []
    output = _field(table, table.value)
    for pk, stored, key_id in found:
        thread = due[pk]
        if stored is None:
            continue
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
        old_key = Q(**{f"{table.key_id}__isnull": True}) if key_id is None else Q(**{table.key_id: key_id})
        matches.append(Q(pk=pk) & old_key & Q(**{table.value: stored}))
        values.append(When(pk=pk, then=Value(new, output_field=output)))
        key_ids.append(When(pk=pk, then=Value(new_id)))
    if not matches:
        return
    updated = manager.filter(functools.reduce(operator.or_, matches)).update(
        **{
            table.value: Case(*values, output_field=output),
            table.key_id: Case(*key_ids, output_field=_field(table, table.key_id)),
        }
    )
    counts.rotated += updated
    counts.written_meanwhile += len(matches) - updated


def _field(table: SealedTable, name: str) -> Field[Any, Any]:
    found = table.model._meta.get_field(name)
    assert isinstance(found, Field)
    return found
