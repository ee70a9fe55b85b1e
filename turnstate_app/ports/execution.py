"""Running one of the app's own SQL statements: through Django's cursor, always.

The statements the ORM cannot spell in one go (an upsert, an insert-if-absent, the
LangGraph saver's multi-row writes) are still Django's: they run on
``connection.cursor()``, so Django's connection management, thread checks, error
translation and every tool that watches Django's SQL (``execute_wrapper``, query
logging, Sentry, OpenTelemetry's instrumentations) see each one, whatever ``DEBUG`` is.
This module is the one place outside the ORM where the app executes SQL.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from django.db.backends.base.base import BaseDatabaseWrapper


def run_statement(
    connection: BaseDatabaseWrapper,
    sql: str,
    params: Sequence[Any],
    *,
    first_row: bool = True,
) -> tuple[int, Any]:
    """Execute one statement; return its rowcount and its first row (None when it returns none).

    ``first_row=False`` (a write) fetches nothing: the row is always None.
    """
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        row = cursor.fetchone() if first_row and cursor.description else None
        return int(cursor.rowcount), row


def insert_returning_pk(
    connection: BaseDatabaseWrapper, sql: str, params: Sequence[Any], *, table: str, pk_column: str
) -> Any:
    """Execute one INSERT of one row; return the primary key the database gave it.

    ``sql`` ends in ``RETURNING <pk>`` where the database can say so
    (``features.can_return_columns_from_insert``); elsewhere the key is Django's
    ``ops.last_insert_id``, read on the same cursor, as the ORM reads it.
    """
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        if cursor.description:
            return cursor.fetchone()[0]
        return connection.ops.last_insert_id(cursor, table, pk_column)


def fetch_all(connection: BaseDatabaseWrapper, sql: str, params: Sequence[Any]) -> list[Any]:
    """Run one query; return all its rows."""
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return list(cursor.fetchall())
