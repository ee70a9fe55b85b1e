"""Re-encrypting stored values under each thread's current key, in bounded batches, while the app runs.

A table is walked by primary key in keyset batches. A batch reads ids, threads, key ids and
values (with one key list for every thread, only the rows not on its first key; clear rows
included), and writes them back re-encrypted, one ``UPDATE`` per row sent together in one
transaction, each conditioned on the row's old key id *and* old value (matched by its MAC where
the table keeps one): a row written meanwhile (by a process still on the old keys, or the new
ones) no longer matches, keeps what that writer wrote, and is left for the next run.
Nothing is lost and nothing is encrypted twice. The state lives in the rows themselves, so a
killed run resumes by being run again.

Each row's MAC (:mod:`turnstate_app.integrity`) is read with it and verified before the row is
decrypted; a rotated row's ``UPDATE`` writes its new MAC beside its new value. A row whose key id
is not among its thread's keys, or whose MAC does not verify (it was changed at rest), is
unreadable: counted and listed, never re-encrypted nor touched, so rotation never turns a forged
row into one that verifies. (A table registered without ``identity`` keeps no MAC.) A survey
(``--dry-run``) checks every row's MAC the same way, writing nothing, unless told to count by key
id alone.
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
from turnstate_app.integrity import row_mac, row_verifies
from turnstate_app.sealed_tables import SealedTable

DEFAULT_BATCH_SIZE = 200
MAX_BATCH_SIZE = 5000
LISTED_UNREADABLE = 20
"""Unreadable rows a survey lists by id (all are counted)."""
KEY_GONE = "key gone"
FAILS_MAC = "fails its MAC"


@dataclass
class TableCounts:
    """What one table holds (a survey) or what a rotation did to it."""

    label: str
    clear: int = 0
    old_key: int = 0
    current: int = 0
    unreadable: int = 0
    failed_mac: int = 0
    rotated: int = 0
    written_meanwhile: int = 0
    batches: int = 0
    unreadable_rows: list[tuple[Any, str, str]] = field(default_factory=list)
    """(pk, thread, why) of the first unreadable rows."""

    def note_unreadable(self, pk: Any, thread: str, why: str = KEY_GONE) -> None:
        self.unreadable += 1
        if why == FAILS_MAC:
            self.failed_mac += 1
        if len(self.unreadable_rows) < LISTED_UNREADABLE:
            self.unreadable_rows.append((pk, thread, why))


@dataclass(frozen=True)
class _Due:
    """A row to re-encrypt, as read: its value and key id, its MAC and identity (as the MAC takes it)."""

    pk: Any
    thread: str
    key_id: str | None
    stored: Any
    mac: str | None
    identity: tuple[Any, ...]


def _keys(cache: dict[str, KeySet | None], thread: str) -> KeySet | None:
    if thread not in cache:
        cache[thread] = keys_for(thread)
    return cache[thread]


def _columns(table: SealedTable, *, values: bool) -> tuple[str, ...]:
    """What a batch reads of each row: pk, thread, key id; with ``values``, the value, its MAC and
    every identity column (each column once)."""
    wanted = ["pk", table.thread, table.key_id]
    if values:
        wanted += [table.value, *([table.mac, *table.identity] if table.identity else [])]
    return tuple(dict.fromkeys(wanted))


def _batches(
    table: SealedTable, batch_size: int, *, stale_only: bool, values: bool
) -> Iterator[list[dict[str, Any]]]:
    """The :func:`_columns` of the table's sealed, non-null values, ``batch_size`` rows at a time,
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
    columns = _columns(table, values=values)
    after = None
    while True:
        page = rows if after is None else rows.filter(pk__gt=after)
        batch = [
            dict(zip(columns, row, strict=True))
            for row in page.order_by("pk").values_list(*columns)[:batch_size]
        ]
        if not batch:
            return
        yield batch
        after = batch[-1]["pk"]


def survey(table: SealedTable, *, batch_size: int = DEFAULT_BATCH_SIZE, macs: bool = True) -> TableCounts:
    """Count the table's rows: clear, on an old key, on the current key, unreadable (key gone,
    or failing its MAC).

    With ``macs`` (and a table that keeps MACs), each batch reads the values too and checks every
    row's MAC as :func:`rotate` checks the rows it re-encrypts (same order: a row whose key is gone
    is counted as such first), so the survey finds the rows a rotation or a read would refuse;
    memory stays bounded by ``batch_size`` rows. Without, it reads ids and key ids only."""
    counts = TableCounts(table.label)
    checked = macs and bool(table.identity)
    for batch in _batches(table, batch_size, stale_only=False, values=checked):
        counts.batches += 1
        cache: dict[str, KeySet | None] = {}  # per batch: memory stays flat whatever the threads
        for row in batch:
            pk, thread, key_id = row["pk"], row[table.thread], row[table.key_id]
            keys = _keys(cache, thread)
            if key_id is not None and (keys is None or key_id not in keys.by_id):
                counts.note_unreadable(pk, thread)
            elif checked and not _verifies(table, _due(table, row)):
                counts.note_unreadable(pk, thread, FAILS_MAC)
            elif key_id is None:
                counts.clear += 1
            elif keys is not None and key_id == keys.primary_id:
                counts.current += 1
            else:
                counts.old_key += 1
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
        for row in batch:
            pk, thread, key_id = row["pk"], row[table.thread], row[table.key_id]
            keys = _keys(cache, thread)
            if keys is None or key_id == keys.primary_id:
                continue  # clear by design (no keys for this thread), or current
            if key_id is not None and key_id not in keys.by_id:
                counts.note_unreadable(pk, thread)
                continue
            due.append(_due(table, row))
        if due:
            _rotate_rows(table, due, counts)
        if progress is not None:
            progress(counts)
    return counts


def _due(table: SealedTable, row: dict[str, Any]) -> _Due:
    """A row of a batch read with its values, as its MAC is checked and its value re-encrypted."""
    stored = bytes(row[table.value]) if table.binary else str(row[table.value])
    identity = tuple(row[name] for name in table.identity)
    return _Due(row["pk"], row[table.thread], row[table.key_id], stored, row.get(table.mac), identity)


def _verifies(table: SealedTable, row: _Due) -> bool:
    """Whether the row's MAC verifies (a table that keeps none: always)."""
    if not table.identity:
        return True
    return row_verifies(table.table, row.identity, row.key_id, row.stored, row.mac)


def _resealed(table: SealedTable, row: _Due) -> tuple[Any, ...]:
    """The row's new value, key id (and MAC, when the table keeps one)."""
    new: bytes | str
    if table.binary:
        new, new_id = seal(unseal(row.stored, row.key_id, thread_id=row.thread), thread_id=row.thread)
    else:
        new, new_id = seal_text(
            unseal_text(row.stored, row.key_id, thread_id=row.thread), thread_id=row.thread
        )
    if not table.identity:
        return (new, new_id)
    return (new, new_id, row_mac(table.table, row.identity, new_id, new))


def _rotate_rows(table: SealedTable, due: list[_Due], counts: TableCounts) -> None:
    """Re-encrypt these rows: one ``UPDATE`` per row, sent together, each applied only while the
    row still holds the key id and value read (see :func:`_updates`); one transaction per batch.
    A row whose MAC does not verify is left as it is."""
    alias = router.db_for_write(table.model)
    was_clear: list[tuple[Any, ...]] = []
    was_sealed: list[tuple[Any, ...]] = []
    for row in due:
        if not _verifies(table, row):
            counts.note_unreadable(row.pk, row.thread, FAILS_MAC)
            continue
        try:
            new = _resealed(table, row)
        except UnreadableValueError:
            counts.note_unreadable(row.pk, row.thread)
            continue
        as_read = row.mac if table.identity else row.stored
        if row.key_id is None:
            was_clear.append((*new, row.pk, as_read))
        else:
            was_sealed.append((*new, row.pk, row.key_id, as_read))
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
    """The compare-and-set ``UPDATE`` of one row, for a row read clear and for one read sealed.

    Where the table keeps MACs, the row's value as read is matched by its MAC, which every write
    stores with the value in the same statement and which names the value, the key id and the row
    (another value under the same MAC would be a SHA-256 collision): the same condition as the
    value itself, for 64 characters instead of the whole token."""
    quote = connections[alias].ops.quote_name
    meta = table.model._meta
    name = quote(meta.db_table)
    assert meta.pk is not None
    value, key_id, pk = (
        quote(str(_field(table, n).column)) for n in (table.value, table.key_id, meta.pk.name)
    )
    mac = quote(str(_field(table, table.mac).column)) if table.identity else None
    new_mac = f", {mac} = %s" if mac else ""
    as_read = mac or value
    head = f"UPDATE {name} SET {value} = %s, {key_id} = %s{new_mac} WHERE {pk} = %s AND "
    return (
        f"{head}{key_id} IS NULL AND {as_read} = %s",
        f"{head}{key_id} = %s AND {as_read} = %s",
    )


def _field(table: SealedTable, name: str) -> Field[Any, Any]:
    found = table.model._meta.get_field(name)
    assert isinstance(found, Field)
    return found
