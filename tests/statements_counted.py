"""Every statement the app sends while counted, on every connection of every thread.

An ``execute_wrapper`` is put on each connection already open and, through
``connection_created``, on each one any thread opens meanwhile (LangGraph writes from executor
threads on a connection of their own). Transaction control (``BEGIN``, ``COMMIT``, ``ROLLBACK``)
is left out: each backend sends it its own way (psycopg inside the driver, SQLite's ``BEGIN``
on Django's cursor) and it carries no data. Savepoints go through Django's cursor on every
backend and are counted. Statements whose parameters carry ``excluded`` (a test agent's own
tool recording its runs) are left out too: they are the tool's, not the app's.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from django.db import connections
from django.db.backends.signals import connection_created

TRANSACTION_CONTROL = ("BEGIN", "COMMIT", "ROLLBACK")


@dataclass
class Seen:
    """One statement: where it ran and what it was."""

    thread: str
    sql: str

    @property
    def verb(self) -> str:
        return self.sql.lstrip().split(None, 1)[0].upper()

    def touches(self, table: str) -> bool:
        return f'"{table}"' in self.sql or f"`{table}`" in self.sql or f" {table} " in self.sql


@dataclass(eq=False)
class Counted:
    """The statements seen while counting, in order."""

    excluded: str | None = None
    seen: list[Seen] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)
    active: bool = False

    def __call__(self, execute: Callable[..., Any], sql: str, params: Any, many: bool, context: Any) -> Any:
        if self.active and self.counts(sql, params):
            with self.lock:
                self.seen.append(Seen(threading.current_thread().name, sql))
        return execute(sql, params, many, context)

    def counts(self, sql: str, params: Any) -> bool:
        """Not transaction control, and not a statement of the excluded tool."""
        if sql.lstrip().split(None, 1)[0].upper() in TRANSACTION_CONTROL:
            return False
        return self.excluded is None or self.excluded not in list(params or ())

    def attach(self, connection: Any, **_: Any) -> None:
        if self not in connection.execute_wrappers:
            connection.execute_wrappers.append(self)

    def attach_open(self) -> None:
        """Count on the connections this thread has open already (an async test's sync thread)."""
        for opened in connections.all(initialized_only=True):
            self.attach(opened)

    def detach_open(self) -> None:
        for opened in connections.all(initialized_only=True):
            if self in opened.execute_wrappers:
                opened.execute_wrappers.remove(self)

    def __len__(self) -> int:
        return len(self.seen)

    def verbs(self) -> list[str]:
        return [statement.verb for statement in self.seen]

    def of(self, table: str, verb: str | None = None) -> list[Seen]:
        """The statements that name ``table`` (with ``verb``, when given)."""
        return [s for s in self.seen if s.touches(table) and (verb is None or s.verb == verb)]

    def savepoints(self) -> list[Seen]:
        return [s for s in self.seen if s.verb in ("SAVEPOINT", "RELEASE")]

    def listing(self) -> str:
        """What was seen, one line each, for an assertion's message."""
        return "\n".join(f"[{s.thread}] {s.sql[:160]}" for s in self.seen)


@contextmanager
def counting(*, excluded: str | None = None) -> Iterator[Counted]:
    """Count the statements the block sends, on every connection and thread."""
    counted = Counted(excluded=excluded)
    connection_created.connect(counted.attach)
    counted.attach_open()
    counted.active = True
    try:
        yield counted
    finally:
        counted.active = False
        connection_created.disconnect(counted.attach)
        counted.detach_open()
