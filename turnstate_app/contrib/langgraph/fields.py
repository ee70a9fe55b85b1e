"""``RowId``: the saver's primary keys, a 64-bit auto-increment without SQLite's AUTOINCREMENT.

Django declares every ``AutoField`` on SQLite as ``integer PRIMARY KEY AUTOINCREMENT``,
which makes each insert read and update the ``sqlite_sequence`` table: a tenth to a fifth
of a small ``put``'s statement (measured when this field was introduced). A plain ``integer
PRIMARY KEY`` is the rowid itself, and SQLite hands out ``max(rowid) + 1``. The price is
that the id of the newest row may be given again once that row is deleted; nothing in
the saver orders or finds rows by id (writes sort by task and index, checkpoints by
their own ids), and its deletions by id run in one transaction with the read that chose
them. On PostgreSQL, MariaDB and MySQL the column is exactly ``BigAutoField``'s.
"""

from __future__ import annotations

from typing import Any

from django.db import models


class RowId(models.BigAutoField):  # type: ignore[type-arg]
    """``BigAutoField`` whose SQLite column is the plain rowid (no ``AUTOINCREMENT``)."""

    def db_type_suffix(self, connection: Any) -> str | None:
        if connection.vendor == "sqlite":
            return None
        return super().db_type_suffix(connection)
