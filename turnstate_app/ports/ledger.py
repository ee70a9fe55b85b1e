"""The ledger's storage calls: a mint's row, and the steps of a resume.

A mint inserts its ledger row in one statement (:func:`insert_pause`). A resume reads the
pause with its turn state in one query, then consumes it and stores the answer in one
transaction. These statements are hot and small, so they are SQL text built once per
database alias from the models' ``_meta`` (an added column is picked up without touching
this module) and run on Django's cursor. Their conditions are not
written here: "pending" and the effective status are :func:`~turnstate_app.managers.pending_sql`
and :func:`~turnstate_app.managers.effective_status_sql`, kept beside the ``Q`` of
:class:`~turnstate_app.managers.PauseQuerySet` they restate (a test holds them equal row
for row). On PostgreSQL, when the answer goes to the model port in the ledger's own
database, consuming and answering are one statement: the port's own upsert of the answer
inside a data-modifying ``WITH`` around the consuming UPDATE, so the answer is written
exactly when this caller won the pause.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import nullcontext
from dataclasses import dataclass
from datetime import datetime
from functools import cache
from typing import Any

from django.db import connections, transaction
from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.models import Field
from django.db.models.signals import post_save, pre_save

from turnstate_app.after_answer import answered_values
from turnstate_app.conf import conf
from turnstate_app.contracts import PauseClaims
from turnstate_app.keys import answer_key, payload_key, turn_state_key
from turnstate_app.managers import EFFECTIVE_STATUS, effective_status_sql, pending_sql
from turnstate_app.ports.execution import insert_returning_pk, run_statement
from turnstate_app.ports.limits import require_write
from turnstate_app.ports.model import whole_transaction_writes, writes_as_defined
from turnstate_app.ports.sealing import read_value, stored_value
from turnstate_app.ports.statements import statements_for
from turnstate_app.turnstate import TurnCheckpointStore


def _models() -> tuple[Any, Any]:
    from turnstate_app.models import CheckpointMetadata, Pause

    return Pause, CheckpointMetadata


def _quoting(connection: BaseDatabaseWrapper, model: Any) -> Callable[[str], str]:
    """A field's column, quoted by ``connection``."""
    meta = model._meta

    def column(name: str) -> str:
        field = meta.get_field(name)
        assert isinstance(field, Field) and field.column
        return connection.ops.quote_name(field.column)

    return column


@dataclass(frozen=True)
class _Statements:
    read_prefix: str  # the row's columns; the effective status follows
    read_suffix: str  # the turn state's value, whether the request is recorded, the row
    read_fields: tuple[Any, ...]
    read_converters: tuple[tuple[int, Any, tuple[Callable[..., Any], ...]], ...]
    consume_prefix: str  # UPDATE … SET … WHERE jti = %s AND; the pending condition follows
    answer_upsert: str  # the port's upsert with its VALUES as a SELECT … FROM won


@cache
def _statements(alias: str) -> _Statements:
    pause_model, rows_model = _models()
    connection = connections[alias]
    quote = connection.ops.quote_name
    meta = pause_model._meta
    table = quote(meta.db_table)
    column = _quoting(connection, pause_model)
    row_column = _quoting(connection, rows_model)
    rows_table = quote(rows_model._meta.db_table)

    read_fields = tuple(meta.concrete_fields)
    at = " AND ".join(f"{row_column(name)} = %s" for name in ("thread_id", "checkpoint_id", "key"))
    read_prefix = f"SELECT {', '.join(f'{table}.{quote(f.column)}' for f in read_fields)}, "
    read_suffix = (
        f", (SELECT {row_column('value')} FROM {rows_table} WHERE {at}), "
        f"(SELECT {row_column('encryption_key_id')} FROM {rows_table} WHERE {at}), "
        f"(SELECT 1 FROM {rows_table} WHERE {at}) "
        f"FROM {table} WHERE {table}.{column('jti')} = %s"
    )
    # Only the columns that have converters (the rest are taken as the driver gives them).
    converters = tuple(
        (i, expression, found)
        for i, f in enumerate(read_fields)
        for expression in [f.get_col(meta.db_table)]
        for found in [tuple(connection.ops.get_db_converters(expression) + f.get_db_converters(connection))]
        if found
    )
    assignments = ", ".join(f"{column(name)} = %s" for name in answered_values(None))
    consume_prefix = f"UPDATE {table} SET {assignments} WHERE {column('jti')} = %s AND "
    upsert, values = statements_for(alias).write, statements_for(alias).values
    assert upsert.count(values) == 1, upsert
    selected = values.removeprefix("VALUES (").removesuffix(")")
    answer_upsert = upsert.replace(values, f"SELECT {selected} FROM won")
    return _Statements(read_prefix, read_suffix, read_fields, converters, consume_prefix, answer_upsert)


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
class LedgerRead:
    """A pause's ledger row (None: no row) with its turn state's stored text, as one query found them.

    The turn state is decrypted only when it is loaded (:meth:`turn_state_text`), after the checks
    that come first, so an answered pause with a lost key still says "already answered"."""

    pause: Any
    turn_state: str | None
    turn_state_key_id: str | None
    request_recorded: bool

    def turn_state_text(self, thread_id: str) -> str | None:
        """The turn state as written; ``UnreadableValueError`` when its key is gone."""
        if self.turn_state is None:
            return None
        return read_value(thread_id, self.turn_state, self.turn_state_key_id)


def read_pause(*, using: str, claims: PauseClaims, now: datetime) -> LedgerRead:
    """The ledger row of ``claims.jti`` (with its effective status at ``now``), its turn state's
    stored text and whether its request is recorded: one query, each row through its unique index."""
    connection = connections[using]
    statements = _statements(using)
    status, status_params = effective_status_sql(
        _quoting(connection, _models()[0]), connection.ops.adapt_datetimefield_value(now)
    )
    place = (claims.thread_id, claims.checkpoint_id)
    params = (
        *status_params,
        *place,
        turn_state_key(claims),
        *place,
        turn_state_key(claims),
        *place,
        payload_key(claims),
        claims.jti,
    )
    sql = statements.read_prefix + status + statements.read_suffix
    _, row = run_statement(connection, sql, params)
    if row is None:
        return LedgerRead(None, None, None, False)
    width = len(statements.read_fields)
    values = list(row[:width])
    for i, expression, converters in statements.read_converters:
        for convert in converters:
            values[i] = convert(values[i], expression, connection)
    pause = _models()[0].from_db(using, [f.attname for f in statements.read_fields], values)
    setattr(pause, EFFECTIVE_STATUS, row[width])
    turn_state = row[width + 1]
    return LedgerRead(
        pause, None if turn_state is None else str(turn_state), row[width + 2], row[width + 3] is not None
    )


def consume_and_answer(
    store: TurnCheckpointStore,
    using: str,
    claims: PauseClaims,
    answer_value: str,
    now: datetime,
    trace: str | None = None,
) -> bool:
    """Consume the pause and store the answer, together: True for the one caller that won.

    Nothing lands unless both do. On PostgreSQL with the model port in the ledger's database
    both are one statement (outside a caller's transaction: one round trip, one commit);
    elsewhere the UPDATE and then, only if it won, the answer's write, in one transaction.
    """
    connection = connections[using]
    same_database = _answers_in_ledger_db(store, using)
    if connection.vendor == "postgresql" and same_database:
        with transaction.atomic(using=using) if connection.in_atomic_block else nullcontext():
            return _consume_answering(connection, using, claims, answer_value, now, trace)
    with transaction.atomic(using=using):
        if not _consume(connection, using, claims.jti, now, trace):
            return False
        # In this very transaction, rolled back whole if the write fails: no savepoint of the port's.
        with whole_transaction_writes() if same_database else nullcontext():
            store.write_answer_sync(claims, answer_value)
    return True


def _answers_in_ledger_db(store: TurnCheckpointStore, using: str) -> bool:
    """The answer is the model port's own upsert (not an override) into the ledger's database."""
    commands: Any = store.commands
    return writes_as_defined(commands) and commands.write_alias() == using


def consume_statement(
    connection: BaseDatabaseWrapper, using: str, jti: str, now: datetime, trace: str | None = None
) -> tuple[str, tuple[Any, ...]]:
    """``PauseQuerySet.consume``'s UPDATE as SQL text and its parameters."""
    stamp = connection.ops.adapt_datetimefield_value(now)
    pending, pending_params = pending_sql(_quoting(connection, _models()[0]), stamp)
    sql = _statements(using).consume_prefix + pending
    return sql, (*answered_values(stamp, trace).values(), jti, *pending_params)


def _consume(connection: BaseDatabaseWrapper, using: str, jti: str, now: datetime, trace: str | None) -> bool:
    sql, params = consume_statement(connection, using, jti, now, trace)
    return run_statement(connection, sql, params, first_row=False)[0] == 1


def _consume_answering(
    connection: BaseDatabaseWrapper,
    using: str,
    claims: PauseClaims,
    answer_value: str,
    now: datetime,
    trace: str | None,
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
    consume, consume_params = consume_statement(connection, using, claims.jti, now, trace)
    stamp = connection.ops.adapt_datetimefield_value(now)
    stored, key_id = stored_value(claims.thread_id, key, answer_value)
    row = (claims.thread_id, claims.checkpoint_id, key, stored, key_id, claims.run_id, stamp, stamp)
    sql = f"WITH won AS ({consume} RETURNING 1) {_statements(using).answer_upsert}"
    rowcount, _ = run_statement(connection, sql, (*consume_params, *row), first_row=False)
    return rowcount == 1
