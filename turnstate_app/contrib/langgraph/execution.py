"""Running the saver's statements: Django's whole cursor path when anyone observes, the driver's otherwise.

As the core's port does (``turnstate_app.ports.execution``): when queries are logged
(``DEBUG``, ``CaptureQueriesContext``, the debug toolbar) or an execute wrapper is
installed, statements go through ``connection.cursor()`` so every observer sees them.
Otherwise they run on a cached driver cursor of the same connection, still inside
Django's connection management, thread checks and error translation; on PostgreSQL
server-side bound and prepared (``TURNSTATE["PREPARED_STATEMENTS"]``).

The unobserved path is the one a graph takes on every step, so it is kept short: the
driver cursor and the statement in the driver's own placeholder style are looked up
once per connection and statement, and a read comes back as a plain list of rows.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from django.db import transaction
from django.db.backends.base.base import BaseDatabaseWrapper

from turnstate_app.ports.execution import ready_cursor, sends_whole_transactions, sqlite_transaction

_SQLITE, _PREPARED, _PLAIN = 0, 1, 2
_qmarks: dict[str, str] = {}


def _qmark(sql: str) -> str:
    native = _qmarks.get(sql)
    if native is None:
        if len(_qmarks) >= 4096:  # a bound, though the saver spells far fewer statements
            _qmarks.clear()
        native = _qmarks[sql] = sql.replace("%s", "?")  # the saver's statements contain no other %
    return native


def _observed(connection: BaseDatabaseWrapper) -> bool:
    return bool(connection.execute_wrappers or connection.queries_logged)


def _driver(connection: BaseDatabaseWrapper) -> tuple[Any, int]:
    """The connection's driver cursor after Django's guards (the port's, shared), and how to run on it."""
    cursor, prepare = ready_cursor(connection)
    if prepare:
        return cursor, _PREPARED
    return cursor, _SQLITE if connection.vendor == "sqlite" else _PLAIN


def _run(cursor: Any, mode: int, sql: str, params: Sequence[Any]) -> None:
    if mode == _SQLITE:
        cursor.execute(_qmark(sql), params)
    elif mode == _PREPARED:
        cursor.execute(sql, params, prepare=True)
    else:
        cursor.execute(sql, params)


def _translate(connection: BaseDatabaseWrapper, exc: Exception) -> None:
    """Raise Django's counterpart of a driver error, as ``with connection.wrap_database_errors``
    would (returns for any other exception); spelt as a handler so a statement that succeeds
    pays nothing for it."""
    connection.wrap_database_errors.__exit__(type(exc), exc, exc.__traceback__)


def fetch(connection: BaseDatabaseWrapper, sql: str, params: Sequence[Any]) -> list[Any]:
    """Run one query; return its rows."""
    if _observed(connection):
        with connection.cursor() as cursor:
            cursor.execute(sql, params)
            return list(cursor.fetchall())
    cursor, mode = _driver(connection)
    try:
        _run(cursor, mode, sql, params)
        rows: list[Any] = cursor.fetchall()  # a list from both sqlite3 and psycopg
    except Exception as exc:
        _translate(connection, exc)
        raise
    return rows


def write(connection: BaseDatabaseWrapper, sql: str, params: Sequence[Any]) -> None:
    """Run one data-modifying statement."""
    if _observed(connection):
        with connection.cursor() as cursor:
            cursor.execute(sql, params)
        return
    cursor, mode = _driver(connection)
    try:
        _run(cursor, mode, sql, params)
    except Exception as exc:
        _translate(connection, exc)
        raise


def run_writes(connection: BaseDatabaseWrapper, batch: Sequence[tuple[str, Sequence[Any]]]) -> None:
    """Statements that land together: one alone in autocommit, else in a transaction (or a
    savepoint of the caller's, so a refused write leaves the caller's transaction usable).

    On SQLite outside any transaction the core's :func:`sqlite_transaction` opens it on the
    driver, as ``atomic()`` would but without its bookkeeping, which costs more than the
    statements of a small put.
    """
    if len(batch) == 1 and not connection.in_atomic_block:
        write(connection, *batch[0])
        return
    if connection.vendor == "sqlite" and sends_whole_transactions(connection):
        with sqlite_transaction(connection):
            for sql, params in batch:
                write(connection, sql, params)
        return
    with transaction.atomic(using=connection.alias):
        for sql, params in batch:
            write(connection, sql, params)
