"""Running the saver's statements, on Django's cursor as the core runs its own.

``fetch`` and ``write`` are the core's :mod:`turnstate_app.ports.execution`; what is the
saver's own is how a batch of writes lands together, and, on an in-memory SQLite database
(Django's default test database), waiting out another connection's table lock: there no busy
timeout applies, and a statement meeting one fails at once (``database table is locked``)
although the lock goes when the other connection's statement ends.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable, Sequence
from functools import partial
from typing import Any, TypeVar

from django.db import OperationalError, transaction
from django.db.backends.base.base import BaseDatabaseWrapper

from turnstate_app.contrib.langgraph.connections import in_memory, lent
from turnstate_app.ports.execution import fetch_all, run_statement

__all__ = ["fetch", "run_writes"]

LOCK_WAIT = 10.0
"""Seconds a statement on an in-memory database waits out other connections' table locks."""
T = TypeVar("T")


def _table_locked(error: OperationalError) -> bool:
    code = getattr(error.__cause__, "sqlite_errorcode", None)
    return isinstance(code, int) and code & 0xFF == sqlite3.SQLITE_LOCKED


def _waiting(connection: BaseDatabaseWrapper, call: Callable[[], T]) -> T:
    """``call()``; on an in-memory database, again while another connection's table lock refuses it
    (not inside a transaction: there a lock held till its end would be waited for in vain)."""
    if not in_memory(connection) or connection.in_atomic_block:
        return call()
    deadline = time.monotonic() + LOCK_WAIT
    pause = 0.001
    while True:
        try:
            return call()
        except OperationalError as error:
            if not _table_locked(error) or time.monotonic() > deadline:
                raise
        time.sleep(pause)
        pause = min(pause * 2, 0.05)


def fetch(connection: BaseDatabaseWrapper, sql: str, params: Sequence[Any]) -> list[Any]:
    """Run one query; return all its rows."""
    return _waiting(connection, partial(fetch_all, connection, sql, params))


def run_writes(connection: BaseDatabaseWrapper, batch: Sequence[tuple[str, Sequence[Any]]]) -> None:
    """Statements that land together: one alone in autocommit, else in a transaction (or a
    savepoint of the caller's, so a refused write leaves the caller's transaction usable).

    On a connection lent by another thread (an in-memory test database, :mod:`.connections`)
    each runs alone: a savepoint there could interleave with that thread's own and release them.
    """
    if lent() or (len(batch) == 1 and not connection.in_atomic_block):
        for sql, params in batch:
            _waiting(connection, partial(run_statement, connection, sql, params, first_row=False))
        return
    with transaction.atomic(using=connection.alias):
        for sql, params in batch:
            run_statement(connection, sql, params, first_row=False)
