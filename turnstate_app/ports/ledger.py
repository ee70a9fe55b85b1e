"""The ledger's three hot statements, written once per database from the ``Pause`` model.

A mint inserts a pause, a resume reads it (with its turn state) and consumes it. Through
the ORM each of these costs more Python than the statement costs the database, so on the
model port's own path they are plain SQL, built once per database alias from the model's
``_meta`` (an added column is picked up without touching this module) and run on the
connection Django manages, inside whatever transaction Django holds. Everything else the
ledger does goes through :class:`~turnstate_app.managers.PauseQuerySet`.

The definitions these statements repeat live in :mod:`turnstate_app.managers`:
``consume`` is ``PauseQuerySet.consume`` (pending and within its age becomes answered)
and the effective status is ``effective_status_q``'s.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from functools import cache
from typing import Any

from django.db import connections, models
from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.models import Field
from django.db.models.signals import post_save, pre_save

from turnstate_app.choices import PauseStatus
from turnstate_app.managers import EFFECTIVE_STATUS, effective_status_at
from turnstate_app.ports.execution import Outcome, run_statement, start_statement
from turnstate_app.ports.limits import require_write
from turnstate_app.ports.statements import statements_for


def _pause_model() -> Any:
    from turnstate_app.models import Pause

    return Pause


def _store_model() -> Any:
    from turnstate_app.models import CheckpointMetadata

    return CheckpointMetadata


@dataclass(frozen=True)
class LedgerStatements:
    """The statements in Django's ``%s`` style and the driver's, with the fields they carry."""

    insert: str
    native_insert: str
    insert_fields: tuple[Field[Any, Any], ...]
    insert_plain: tuple[bool, ...]
    returns_pk: bool
    read: str
    native_read: str
    read_fields: tuple[Field[Any, Any], ...]
    read_attnames: tuple[str, ...]
    read_converters: tuple[tuple[int, Any, tuple[Callable[..., Any], ...]], ...]
    consume: str
    native_consume: str
    consume_answering: str
    native_consume_answering: str


@cache
def ledger_statements(alias: str) -> LedgerStatements:
    """Build (once per database alias) the ledger's statements in that database's dialect."""
    pause = _pause_model()
    connection = connections[alias]
    quote = connection.ops.quote_name
    meta = pause._meta
    table = quote(meta.db_table)
    placeholder = "?" if connection.vendor == "sqlite" else "%s"

    def native(sql: str) -> str:
        return sql.replace("%s", placeholder)  # the statements contain no other %

    def column(name: str) -> str:
        field = meta.get_field(name)
        assert isinstance(field, Field) and field.column
        return quote(field.column)

    # INSERT: every column Django would write for a new row (not the auto pk, nothing generated).
    insert_fields = tuple(
        f for f in meta.local_concrete_fields if f is not meta.auto_field and not f.generated
    )
    # A field whose pre_save is the plain attribute read (no auto_now, no override) is read directly.
    insert_plain = tuple(_plain_pre_save(f) for f in insert_fields)
    returns_pk = meta.auto_field is not None and connection.features.can_return_columns_from_insert
    insert = (
        f"INSERT INTO {table} ({', '.join(quote(f.column) for f in insert_fields)}) "
        f"VALUES ({', '.join(['%s'] * len(insert_fields))})"
    )
    if returns_pk:
        insert += f" RETURNING {quote(meta.pk.column)}"

    # READ: the whole row (in model order, as ``Model.from_db`` takes it), the turn state's
    # value and whether the request is recorded: one round trip, each through its unique index.
    read_fields = tuple(meta.concrete_fields)
    rows = _store_model()._meta
    rows_table = quote(rows.db_table)

    def row_column(name: str) -> str:
        field = rows.get_field(name)
        assert isinstance(field, Field) and field.column
        return quote(field.column)

    at = " AND ".join(f"{row_column(name)} = %s" for name in ("thread_id", "checkpoint_id", "key"))
    read = (
        f"SELECT {', '.join(f'{table}.{quote(f.column)}' for f in read_fields)}, "
        f"(SELECT {row_column('value')} FROM {rows_table} WHERE {at}), "
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

    # CONSUME: PauseQuerySet.consume, as one conditional UPDATE.
    consume = (
        f"UPDATE {table} SET {column('status')} = %s, {column('answered_at')} = %s "
        f"WHERE {column('jti')} = %s AND {column('status')} = %s AND {column('expires_at')} > %s"
    )
    # CONSUME AND ANSWER (PostgreSQL): the UPDATE in a data-modifying WITH, the port's own
    # upsert of the answer taking its row only from what the UPDATE returned: the answer is
    # written exactly when this statement won the pause.
    consume_answering = ""
    if connection.vendor == "postgresql":
        upsert = statements_for(alias).write
        values = f"VALUES ({', '.join(['%s'] * upsert.count('%s'))})"
        assert upsert.count(values) == 1, upsert
        consume_answering = f"WITH won AS ({consume} RETURNING 1) " + upsert.replace(
            values, f"SELECT {values.removeprefix('VALUES (').removesuffix(')')} FROM won"
        )
    return LedgerStatements(
        insert=insert,
        native_insert=native(insert),
        insert_fields=insert_fields,
        insert_plain=insert_plain,
        returns_pk=returns_pk,
        read=read,
        native_read=native(read),
        read_fields=read_fields,
        read_attnames=tuple(f.attname for f in read_fields),
        read_converters=converters,
        consume=consume,
        native_consume=native(consume),
        consume_answering=consume_answering,
        native_consume_answering=native(consume_answering),
    )


def _plain_pre_save(field: Any) -> bool:
    """Whether ``field.pre_save(instance, add)`` is just ``getattr(instance, field.attname)``."""
    pre_save = type(field).pre_save
    if pre_save is Field.pre_save:
        return True
    return pre_save is models.DateTimeField.pre_save and not (field.auto_now or field.auto_now_add)


def saving_is_observed() -> bool:
    """Whether anyone listens to the ledger's ``pre_save``/``post_save``: then inserts take the ORM's path."""
    pause = _pause_model()
    return pre_save.has_listeners(pause) or post_save.has_listeners(pause)


def insert_pause(pause: Any, *, using: str) -> Callable[[], None]:
    """INSERT the unsaved ledger row ``pause``, as ``pause.save(force_insert=True)`` would.

    The values are prepared field by field exactly as the ORM prepares them (``pre_save``
    stamps ``created_at``). The returned call, made once the statement's outcome is known
    (after :func:`~turnstate_app.ports.execution.pipelined`), sets the primary key and marks
    the instance saved. Saving signals are Django's: when anyone listens, the ORM saves it.
    """
    if saving_is_observed():
        pause.save(force_insert=True, using=using)
        return lambda: None
    connection = connections[using]
    statements = ledger_statements(using)
    params = tuple(
        prepared(getattr(pause, field.attname) if plain else field.pre_save(pause, True), field, connection)
        for field, plain in zip(statements.insert_fields, statements.insert_plain, strict=True)
    )
    sent = start_statement(connection, statements.insert, statements.native_insert, params)

    def saved() -> None:
        _, row, lastrowid = sent()
        pk = row[0] if statements.returns_pk else lastrowid
        if pk is not None:
            pause.pk = pk
        pause._state.adding = False
        pause._state.db = using

    return saved


_AS_IS: dict[type[Field[Any, Any]], tuple[type, ...]] = {
    models.CharField: (str,),
    models.TextField: (str,),
    models.BooleanField: (bool,),
    models.BigAutoField: (int,),
    models.AutoField: (int,),
    models.BigIntegerField: (int,),
    models.IntegerField: (int,),
}
"""Fields whose ``get_db_prep_save`` returns a value of these exact types unchanged."""


def prepared(value: Any, field: Any, connection: BaseDatabaseWrapper) -> Any:
    """``field.get_db_prep_save(value, connection)``, skipping the calls that would change nothing.

    Only for the exact field classes above (a subclass may prepare differently) and values
    of exactly the types they pass through, an aware datetime for a ``DateTimeField``, and a
    foreign key's int; anything else takes Django's own preparation.
    """
    if value is None and field.null:
        return None
    kind = type(field)
    if kind is models.ForeignKey and type(value) is int:
        return value
    if kind is models.DateTimeField and type(value) is datetime and value.utcoffset() is not None:
        return connection.ops.adapt_datetimefield_value(value)
    if type(value) in _AS_IS.get(kind, ()):
        return value
    return field.get_db_prep_save(value, connection)


@dataclass(frozen=True)
class LedgerRead:
    """A pause's ledger row (None: no row) with its turn state's stored text, as one query found them."""

    pause: Any
    turn_state: str | None
    request_recorded: bool


def read_pause(
    *,
    using: str,
    jti: str,
    thread_id: str,
    checkpoint_id: str,
    turn_state_key: str,
    request_key: str,
    now: datetime,
) -> LedgerRead:
    """The ledger row of ``jti`` (annotated with its effective status at ``now``) and its turn state."""
    connection = connections[using]
    statements = ledger_statements(using)
    params = (thread_id, checkpoint_id, turn_state_key, thread_id, checkpoint_id, request_key, jti)
    _, row = run_statement(connection, statements.read, statements.native_read, params)
    if row is None:
        return LedgerRead(None, None, False)
    width = len(statements.read_fields)
    values = list(row[:width])
    for i, expression, converters in statements.read_converters:
        for convert in converters:
            values[i] = convert(values[i], expression, connection)
    pause = _pause_model().from_db(using, statements.read_attnames, values)
    setattr(pause, EFFECTIVE_STATUS, effective_status_at(pause.status, pause.expires_at, now))
    turn_state = row[width]
    return LedgerRead(pause, None if turn_state is None else str(turn_state), row[width + 1] is not None)


def consume(connection: BaseDatabaseWrapper, *, using: str, jti: str, now: datetime) -> Callable[[], bool]:
    """Send ``PauseQuerySet.consume``'s UPDATE; the returned call says whether this caller won it."""
    statements = ledger_statements(using)
    stamp = connection.ops.adapt_datetimefield_value(now)
    params = (PauseStatus.ANSWERED.value, stamp, jti, PauseStatus.PENDING.value, stamp)
    sent: Callable[[], Outcome] = start_statement(
        connection, statements.consume, statements.native_consume, params
    )
    return lambda: sent()[0] == 1


def answers_in_one_statement(connection: BaseDatabaseWrapper) -> bool:
    """Whether :func:`consume_answering` exists here: PostgreSQL's data-modifying ``WITH``."""
    return connection.vendor == "postgresql"


def consume_answering(
    connection: BaseDatabaseWrapper,
    *,
    using: str,
    jti: str,
    now: datetime,
    thread_id: str,
    checkpoint_id: str,
    key: str,
    value: str,
    task_id: str | None,
    max_bytes: int,
) -> bool:
    """``consume`` and the port's upsert of the answer as one statement: True when this caller won.

    The model port's own path only (the store's rows in the ledger's database): one round
    trip and, outside a transaction, one commit. The answer row is checked as the port checks
    every write, and written only if the UPDATE matched, so a loser writes nothing.
    """
    vendor = connection.vendor
    require_write(thread_id, checkpoint_id, key, value, task_id, vendor=vendor, max_bytes=max_bytes)
    statements = ledger_statements(using)
    stamp = connection.ops.adapt_datetimefield_value(now)
    params = (
        PauseStatus.ANSWERED.value,
        stamp,
        jti,
        PauseStatus.PENDING.value,
        stamp,
        thread_id,
        checkpoint_id,
        key,
        value,
        task_id,
        stamp,
        stamp,
    )
    rowcount, _ = run_statement(
        connection, statements.consume_answering, statements.native_consume_answering, params
    )
    return rowcount == 1
