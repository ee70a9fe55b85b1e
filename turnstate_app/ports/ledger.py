"""The ledger's storage calls: a mint's row, and the steps of a resume.

A mint inserts its ledger row in one statement (:func:`insert_pause`). A resume reads the
pause with its request and turn-state rows (each with its MAC) in one query, then consumes it
and stores the answer in one transaction. Every condition is the ORM's, from
:class:`~turnstate_app.managers.PauseQuerySet`; nothing here restates one as text. On
PostgreSQL, when the answer goes to the model port in the ledger's own database, consuming and
answering are one statement: the port's own upsert of the answer (its MAC included) inside a
data-modifying ``WITH`` around the consuming UPDATE, which is compiled from the queryset that
:meth:`~turnstate_app.managers.PauseQuerySet.consume` runs, so the answer is written exactly
when this caller won the pause.
"""

from __future__ import annotations

from contextlib import nullcontext
from dataclasses import dataclass
from datetime import datetime
from functools import cache
from typing import Any

from django.db import connections, transaction
from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.models import Subquery
from django.db.models.signals import post_save, pre_save

from turnstate_app.after_answer import answered_values
from turnstate_app.conf import conf
from turnstate_app.contracts import PauseClaims
from turnstate_app.keys import answer_key, payload_key, turn_state_key
from turnstate_app.ports.compiled import (
    MARKED_TIME,
    Compiled,
    CompiledRow,
    compiled_select,
    compiled_update,
    marker,
)
from turnstate_app.ports.execution import insert_returning_pk, run_statement
from turnstate_app.ports.limits import require_write
from turnstate_app.ports.model import whole_transaction_writes, writes_as_defined
from turnstate_app.ports.sealing import read_row, stored_row
from turnstate_app.ports.statements import statements_for
from turnstate_app.turnstate import TurnCheckpointStore


def _models() -> tuple[Any, Any]:
    from turnstate_app.models import CheckpointMetadata, Pause

    return Pause, CheckpointMetadata


@cache
def _answer_upsert(alias: str) -> str:
    """The model port's upsert of one row with its VALUES taken from ``won``: written only if the
    consuming UPDATE in the same statement matched."""
    upsert, values = statements_for(alias).write, statements_for(alias).values
    assert upsert.count(values) == 1, upsert
    selected = values.removeprefix("VALUES (").removesuffix(")")
    return upsert.replace(values, f"SELECT {selected} FROM won")


@dataclass(frozen=True)
class _Insert:
    sql: str
    fields: tuple[Any, ...]  # the columns it writes, in order: every concrete field but the auto key
    table: str
    pk_column: str


@cache
def insert_statement(alias: str) -> _Insert:
    """The ledger row's INSERT for ``alias``, built once (cleared by tests that change the features)."""
    pause_model, _ = _models()
    connection = connections[alias]
    quote = connection.ops.quote_name
    meta = pause_model._meta
    fields = tuple(f for f in meta.local_concrete_fields if f is not meta.auto_field and not f.generated)
    sql = (
        f"INSERT INTO {quote(meta.db_table)} ({', '.join(quote(f.column) for f in fields)}) "
        f"VALUES ({', '.join(['%s'] * len(fields))})"
    )
    if meta.auto_field is not None and connection.features.can_return_columns_from_insert:
        sql += f" RETURNING {quote(meta.pk.column)}"
    return _Insert(sql, fields, meta.db_table, meta.pk.column)


def insert_pause(pause: Any, *, using: str) -> Any:
    """Insert the unsaved ledger row ``pause`` as ``pause.save(force_insert=True, using=using)``
    would, and return the row saved (``Model.from_db``'s instance, as a query gives it).

    One statement built once per database from ``_meta``: the ORM compiles its INSERT anew for
    every row, a third of a mint's time on SQLite. Each value is prepared as the ORM prepares
    it (the field's ``pre_save``, then ``get_db_prep_save``), and Django's ``pre_save`` and
    ``post_save`` signals are sent as ``save()`` sends them.
    """
    model = type(pause)
    meta = model._meta
    connection = connections[using]
    statement = insert_statement(using)
    pre_save.send(sender=model, instance=pause, raw=False, using=using, update_fields=None)
    params = [field.get_db_prep_save(field.pre_save(pause, True), connection) for field in statement.fields]
    pk = insert_returning_pk(
        connection, statement.sql, params, table=statement.table, pk_column=statement.pk_column
    )
    values = [pk if f is meta.auto_field else getattr(pause, f.attname) for f in meta.concrete_fields]
    saved = model.from_db(using, None, values)
    post_save.send(sender=model, instance=saved, created=True, update_fields=None, raw=False, using=using)
    return saved


@dataclass(frozen=True)
class StoredRow:
    """One store row as the ledger's query read it: where it is, the value as stored, its key id and MAC."""

    checkpoint_id: str
    key: str
    stored: str
    key_id: str | None
    mac: str | None

    def text(self, thread_id: str) -> str:
        """The value as written, once its MAC verifies; ``UnreadableValueError`` otherwise."""
        return read_row(thread_id, self.checkpoint_id, self.key, self.stored, self.key_id, self.mac)


@dataclass(frozen=True)
class LedgerRead:
    """A pause's ledger row (None: no row) with its request and turn-state rows, as one query found them.

    Both rows are verified and decrypted only when the turn state is loaded
    (:meth:`turn_state_text`), after the checks that come first, so an answered pause with a
    lost key still says "already answered"."""

    pause: Any
    turn_state_row: StoredRow | None = None
    request_row: StoredRow | None = None

    @property
    def turn_state(self) -> str | None:
        """The turn state's value as stored (None: no row)."""
        return None if self.turn_state_row is None else self.turn_state_row.stored

    @property
    def request_recorded(self) -> bool:
        return self.request_row is not None

    def turn_state_text(self, thread_id: str) -> str | None:
        """The turn state as written (None: no row). ``UnreadableValueError`` when the request's
        or the turn state's MAC does not verify, or a key is gone: a resume never consumes a pause
        whose question or state was changed at rest."""
        if self.request_row is not None:
            self.request_row.text(thread_id)
        return None if self.turn_state_row is None else self.turn_state_row.text(thread_id)


READ_VALUES = ("jti", "thread_id", "checkpoint_id", "turn_state_key", "request_key", "now")
_ROW_COLUMNS = {"stored": "value", "key_id": "encryption_key_id", "mac": "value_mac"}


@cache
def read_statement(alias: str) -> CompiledRow:
    """The ledger row with its effective status, and its turn state's and request's stored value,
    key id and MAC: the ORM's query, compiled once per database."""
    pause_model, rows_model = _models()
    place = rows_model.objects.using(alias).filter(
        thread_id=marker("thread_id"), checkpoint_id=marker("checkpoint_id")
    )
    rows = {
        "turn_state": place.filter(key=marker("turn_state_key")),
        "request": place.filter(key=marker("request_key")),
    }
    query = (
        pause_model.objects.using(alias)
        .filter(jti=marker("jti"))
        .with_effective_status(MARKED_TIME)
        .annotate(
            **{
                f"{row}_{name}": Subquery(found.values(column)[:1])
                for row, found in rows.items()
                for name, column in _ROW_COLUMNS.items()
            }
        )[:1]
    )
    return compiled_select(query, READ_VALUES)


def read_pause(*, using: str, claims: PauseClaims, now: datetime) -> LedgerRead:
    """The ledger row of ``claims.jti`` (with its effective status at ``now``), its turn state's
    and its request's stored rows: one query, each row through its unique index."""
    keys = {"turn_state": turn_state_key(claims), "request": payload_key(claims)}
    pause = read_statement(using).first(
        {
            "jti": claims.jti,
            "thread_id": claims.thread_id,
            "checkpoint_id": claims.checkpoint_id,
            "turn_state_key": keys["turn_state"],
            "request_key": keys["request"],
            "now": now,
        }
    )
    if pause is None:
        return LedgerRead(None)
    found = {row: _stored_row(pause, row, claims.checkpoint_id, key) for row, key in keys.items()}
    return LedgerRead(pause, turn_state_row=found["turn_state"], request_row=found["request"])


def _stored_row(pause: Any, row: str, checkpoint_id: str, key: str) -> StoredRow | None:
    stored = getattr(pause, f"{row}_stored")
    if stored is None:
        return None
    key_id, mac = getattr(pause, f"{row}_key_id"), getattr(pause, f"{row}_mac")
    return StoredRow(checkpoint_id, key, str(stored), key_id, mac)


def consume_and_answer(
    store: TurnCheckpointStore,
    using: str,
    claims: PauseClaims,
    answer_value: str,
    now: datetime,
    trace: str | None = None,
    answer_mac: str | None = None,
) -> bool:
    """Consume the pause and store the answer, together: True for the one caller that won.

    ``answer_mac``: the answer's MAC, set on the ledger row by the consuming UPDATE itself (no
    statement of its own). Nothing lands unless both do. On PostgreSQL with the model port in the
    ledger's database both are one statement (outside a caller's transaction: one round trip, one commit);
    elsewhere the UPDATE and then, only if it won, the answer's write, in one transaction.
    """
    connection = connections[using]
    same_database = _answers_in_ledger_db(store, using)
    if connection.vendor == "postgresql" and same_database:
        with transaction.atomic(using=using) if connection.in_atomic_block else nullcontext():
            return _consume_answering(connection, using, claims, answer_value, now, trace, answer_mac)
    with transaction.atomic(using=using):
        if not _consume(using, claims.jti, now, trace, answer_mac):
            return False
        # In this very transaction, rolled back whole if the write fails: no savepoint of the port's.
        with whole_transaction_writes() if same_database else nullcontext():
            store.write_answer_sync(claims, answer_value)
    return True


def _answers_in_ledger_db(store: TurnCheckpointStore, using: str) -> bool:
    """The answer is the model port's own upsert (not an override) into the ledger's database."""
    commands: Any = store.commands
    return writes_as_defined(commands) and commands.write_alias() == using


CONSUME_VALUES = ("jti", "now", "trace", "answer_mac")


@cache
def consuming_statement(alias: str) -> Compiled:
    """:meth:`~turnstate_app.managers.PauseQuerySet.consume`'s UPDATE, compiled once per database,
    also setting the answer's MAC."""
    consumable = _models()[0].objects.using(alias).consumable(marker("jti"), now=MARKED_TIME)
    values = {**answered_values(MARKED_TIME, marker("trace")), "answer_mac": marker("answer_mac")}
    return compiled_update(consumable, values, CONSUME_VALUES)


def _consume(using: str, jti: str, now: datetime, trace: str | None, answer_mac: str | None) -> bool:
    statement = consuming_statement(using)
    params = statement.bind({"jti": jti, "now": now, "trace": trace, "answer_mac": answer_mac})
    return run_statement(connections[using], statement.sql, params, first_row=False)[0] == 1


def _consume_answering(
    connection: BaseDatabaseWrapper,
    using: str,
    claims: PauseClaims,
    answer_value: str,
    now: datetime,
    trace: str | None,
    answer_mac: str | None,
) -> bool:
    """``WITH won AS (<the consuming UPDATE> RETURNING 1) <the port's upsert> SELECT … FROM won``.

    The answer row is checked as the port checks every write, and written only if the UPDATE
    matched, so a loser writes nothing."""
    key = answer_key(claims)
    require_write(
        claims.thread_id,
        claims.checkpoint_id,
        key,
        answer_value,
        claims.run_id,
        vendor=connection.vendor,
        max_bytes=conf.MAX_VALUE_BYTES,
    )
    consume = consuming_statement(using)
    consume_params = consume.bind({"jti": claims.jti, "now": now, "trace": trace, "answer_mac": answer_mac})
    stamp = connection.ops.adapt_datetimefield_value(now)
    stored, key_id, mac = stored_row(claims.thread_id, claims.checkpoint_id, key, answer_value)
    row = (claims.thread_id, claims.checkpoint_id, key, stored, key_id, mac, claims.run_id, stamp, stamp)
    sql = f"WITH won AS ({consume.sql} RETURNING 1) {_answer_upsert(using)}"
    rowcount, _ = run_statement(connection, sql, (*consume_params, *row), first_row=False)
    return rowcount == 1
