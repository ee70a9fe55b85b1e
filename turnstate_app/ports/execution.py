"""Running one port statement: fully observable when anyone observes, at the driver floor otherwise.

When queries are logged (``DEBUG``, ``CaptureQueriesContext``, the debug toolbar) or an
execute wrapper is installed (tracing, SQL comments), the statement goes through
``connection.cursor()``: Django's whole path, so every observer sees it. When nobody is
observing, it runs on a cached driver cursor (on PostgreSQL a server-side-binding one
whose statements are prepared), still inside Django's connection management, thread
checks and error translation — what the ORM's wrapper would add costs more than the
statement itself on a fast database.
"""

from __future__ import annotations

import sys
from typing import Any
from weakref import WeakKeyDictionary

from django.db.backends.base.base import BaseDatabaseWrapper

from turnstate_app.conf import conf

_driver_cursors: WeakKeyDictionary[BaseDatabaseWrapper, tuple[Any, Any]] = WeakKeyDictionary()


def run_statement(
    connection: BaseDatabaseWrapper, portable_sql: str, native_sql: str, params: tuple[Any, ...]
) -> tuple[int, Any]:
    """Execute one statement; return its rowcount and its first row (None when it has none)."""
    if connection.queries_logged or connection.execute_wrappers:
        with connection.cursor() as cursor:
            cursor.execute(portable_sql, params)
            return int(cursor.rowcount), _first_row(cursor)
    connection.close_if_health_check_failed()
    connection.ensure_connection()
    connection.validate_thread_sharing()
    connection.validate_no_broken_transaction()
    with connection.wrap_database_errors:
        cursor, prepare = _driver_cursor(connection)
        if prepare:
            cursor.execute(native_sql, params, prepare=True)
        else:
            cursor.execute(native_sql, params)
        return int(cursor.rowcount), _first_row(cursor)


def _first_row(cursor: Any) -> Any:
    return cursor.fetchone() if cursor.description else None


def _driver_cursor(connection: BaseDatabaseWrapper) -> tuple[Any, bool]:
    """The connection's cached driver cursor, rebuilt when the driver connection changes."""
    driver = connection.connection
    cached = _driver_cursors.get(connection)
    prepare = connection.vendor == "postgresql" and conf.PREPARED_STATEMENTS
    if cached is not None and cached[0] is driver:
        return cached[1], prepare
    if connection.vendor == "postgresql":
        import psycopg

        if prepare and driver.prepare_threshold is None:
            # Django turns preparation off (None) unless OPTIONS set it; a threshold no
            # ORM query reaches keeps it off for them while ``prepare=True`` works here.
            driver.prepare_threshold = sys.maxsize
        cursor = psycopg.Cursor(driver)
    else:
        cursor = driver.cursor()
    _driver_cursors[connection] = (driver, cursor)
    return cursor, prepare
