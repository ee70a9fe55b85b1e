"""Which connection a call runs on, and closing the ones LangGraph's threads would leak.

LangGraph runs a sync graph's ``put`` and ``put_writes`` on its own executor threads.
Django gives each thread its own connection and closes them only at the end of a
request, which those threads never see: every turn would leave an idle connection
behind. So a sync call that had to open its thread's connection closes it again when
it returns — unless that thread is the main thread, or is inside an atomic block
(then it did not open it). A thread that already held a connection (a request, a
worker with ``CONN_MAX_AGE``) keeps it: its owner manages it. The async methods run
on Django's thread-sensitive executor, whose one connection is reused as usual.

An in-memory SQLite database (Django's default test database) is the exception: there
each thread's connection opens the one shared-cache database, and a lock one of them
holds fails another at once (``database table is locked``; no busy timeout applies), so a
host's tests failed whenever a branch wrote while another did, and always inside a test's
transaction. There a sync saver call made on another thread runs on the main thread's connection
(the one Django's test runner created the database and opens each test's transaction on),
as Django's live server thread shares it, one call at a time, without savepoints of its own:
its writes land in the test's transaction, as they would had LangGraph not changed threads.
"""

from __future__ import annotations

import threading
from types import TracebackType

from django.db import connections
from django.db.backends.base.base import BaseDatabaseWrapper

_main_thread = threading.main_thread

_main_connections: dict[str, BaseDatabaseWrapper] = {}
"""Per alias of an in-memory database: the main thread's connection, as the saver last saw it there."""
_one_at_a_time = threading.RLock()
_lent = threading.local()


def in_memory(connection: BaseDatabaseWrapper) -> bool:
    """Whether ``connection`` opens an in-memory SQLite database (shared between threads)."""
    return connection.vendor == "sqlite" and bool(getattr(connection, "is_in_memory_db", bool)())


def lent() -> bool:
    """Whether this thread runs on another thread's connection (then: no savepoints of its own)."""
    return bool(getattr(_lent, "active", False))


def _home(alias: str, connection: BaseDatabaseWrapper) -> BaseDatabaseWrapper:
    """The connection saver calls share on ``alias``: the main thread's, once it used the saver."""
    if threading.current_thread() is _main_thread():
        _main_connections[alias] = connection
        return connection
    return _main_connections.get(alias, connection)


class borrowed:  # noqa: N801 - used as a context manager, like contextlib's lowercase ones
    """The thread's connection to ``alias``; closed after use when this call opened it (unless ``keep``).

    On an in-memory database, a sync call: the main thread's connection, one call at a time (see the module).
    A class rather than a generator-based context manager: every saver call enters one.
    """

    __slots__ = ("alias", "close_after", "connection", "own", "shared")

    def __init__(self, alias: str, *, keep: bool) -> None:
        connection = connections[alias]
        self.alias = alias
        self.own = connection
        # Only the sync calls, which LangGraph makes on its executor threads; an async twin runs
        # on Django's thread-sensitive executor, on that thread's own connection and transaction.
        self.shared = not keep and in_memory(connection)
        if self.shared:
            connection = _home(alias, connection)
        self.connection = connection
        self.close_after = (
            not keep
            and not self.shared
            and connection.connection is None
            and threading.current_thread() is not _main_thread()
        )

    def __enter__(self) -> BaseDatabaseWrapper:
        if self.shared:
            _one_at_a_time.acquire()
            if self.connection is not self.own:
                self.connection.inc_thread_sharing()
                connections[self.alias] = self.connection  # the ORM and atomic() of this call, too
                _lent.active = True
        return self.connection

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        if self.shared:
            try:
                if self.connection is not self.own:
                    _lent.active = False
                    connections[self.alias] = self.own
                    self.connection.dec_thread_sharing()
            finally:
                _one_at_a_time.release()
        elif self.close_after and not self.connection.in_atomic_block:
            self.connection.close()
