"""Running the saver's statements: Django's whole cursor path when anyone observes, the driver's otherwise.

As the core's port does (``turnstate_app.ports.execution``): when queries are logged
(``DEBUG``, ``CaptureQueriesContext``, the debug toolbar) or an execute wrapper is
installed, statements go through ``connection.cursor()`` so every observer sees them.
Otherwise they run on a cached driver cursor of the same connection, still inside
Django's connection management, thread checks and error translation; on PostgreSQL
server-side bound and prepared (``TURNSTATE["PREPARED_STATEMENTS"]``).
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from functools import lru_cache
from typing import Any
from weakref import WeakKeyDictionary

from django.db import transaction
from django.db.backends.base.base import BaseDatabaseWrapper

from turnstate_app.conf import conf

_cursors: WeakKeyDictionary[BaseDatabaseWrapper, tuple[Any, Any]] = WeakKeyDictionary()


@lru_cache(maxsize=1024)
def _qmark(sql: str) -> str:
    return sql.replace("%s", "?")  # the saver's statements contain no other %


def execute(connection: BaseDatabaseWrapper, sql: str, params: Sequence[Any]) -> Any:
    """Run one statement; return the cursor it ran on (read its rows before the next call)."""
    if connection.queries_logged or connection.execute_wrappers:
        cursor = connection.cursor()
        cursor.execute(sql, params)
        return cursor
    connection.close_if_health_check_failed()
    connection.ensure_connection()
    connection.validate_thread_sharing()
    connection.validate_no_broken_transaction()
    with connection.wrap_database_errors:
        cursor, vendor = _driver_cursor(connection)
        if vendor == "sqlite":
            cursor.execute(_qmark(sql), params)
        elif vendor == "postgresql" and conf.PREPARED_STATEMENTS:
            cursor.execute(sql, params, prepare=True)
        else:
            cursor.execute(sql, params)
    return _Translated(connection, cursor)


class _Translated:
    """The driver cursor, its fetches under Django's error translation."""

    def __init__(self, connection: BaseDatabaseWrapper, cursor: Any) -> None:
        self.connection = connection
        self.cursor = cursor

    @property
    def rowcount(self) -> int:
        return int(self.cursor.rowcount)

    def fetchone(self) -> Any:
        with self.connection.wrap_database_errors:
            return self.cursor.fetchone()

    def fetchall(self) -> list[Any]:
        with self.connection.wrap_database_errors:
            return list(self.cursor.fetchall())


def _driver_cursor(connection: BaseDatabaseWrapper) -> tuple[Any, str]:
    driver = connection.connection
    cached = _cursors.get(connection)
    if cached is not None and cached[0] is driver:
        return cached[1], connection.vendor
    if connection.vendor == "postgresql":
        import psycopg

        if conf.PREPARED_STATEMENTS and driver.prepare_threshold is None:
            # Django turns preparation off (None) unless OPTIONS set it; a threshold no ORM
            # query reaches keeps it off for them while ``prepare=True`` works here.
            driver.prepare_threshold = sys.maxsize
        cursor = psycopg.Cursor(driver)
    else:
        cursor = driver.cursor()
    _cursors[connection] = (driver, cursor)
    return cursor, connection.vendor


def run_writes(connection: BaseDatabaseWrapper, batch: Sequence[tuple[str, Sequence[Any]]]) -> None:
    """Statements that land together: one alone in autocommit, else in a transaction (or a
    savepoint of the caller's, so a refused write leaves the caller's transaction usable)."""
    if len(batch) == 1 and not connection.in_atomic_block:
        execute(connection, *batch[0])
        return
    with transaction.atomic(using=connection.alias):
        for sql, params in batch:
            execute(connection, sql, params)
