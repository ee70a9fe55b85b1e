"""Which connection a call runs on: the saver connection for LangGraph's executor threads.

LangGraph runs a sync graph's ``put`` and ``put_writes`` on its own executor threads, a new
pool of them for every run. Django gives each thread its own connection and closes it only
at the end of a request, which those threads never see; a connection opened there for each
call and closed after it costs a connection per checkpoint write. So a sync saver call made
on a thread other than the main one that holds no connection of its own (and is not inside
an atomic block, which it then could not be) runs on **the saver connection** of its database
alias: the Django connection of one long-lived thread per alias, in this process, lent to the
call for its length (Django's ``inc_thread_sharing``, as its live server thread shares a
connection), one call at a time. The call itself runs on the thread that made it: no hop to
another thread, whose wake-ups cost milliseconds on a busy machine. The saver's thread looks
after the connection as Django looks after a request thread's between requests: while a
thread it served is alive (a run's executor threads live until the run ends) the connection
stays open; once none is, it calls ``close_if_unusable_or_obsolete()``: with
``CONN_MAX_AGE = 0`` (the default, and always with Django's pool) the connection is closed
(given back to the pool), with a positive ``CONN_MAX_AGE`` it is kept for the next run and
closed when it expires (the thread wakes up for that), with ``None`` it is kept. A run thus
opens at most one connection, and a finished one leaves none open that nobody will close.
A thread that already held a connection (a request, a worker with ``CONN_MAX_AGE``) keeps
using it: its owner manages it. The async methods run on Django's thread-sensitive executor,
whose one connection is reused as usual.

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
import time
from collections.abc import Callable
from types import TracebackType
from typing import ParamSpec, TypeVar

from django.db import connections
from django.db.backends.base.base import BaseDatabaseWrapper

P = ParamSpec("P")
T = TypeVar("T")

_main_thread = threading.main_thread

WATCH = 0.05
"""Seconds between the saver's thread's looks at whether the threads it served are still alive."""

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


class SaverConnection:
    """One alias's saver connection: lent to routed sync calls one at a time, looked after by its thread.

    The connection belongs to a long-lived thread of its own (its Django connection for the
    alias), which lends it to each routed call for the call's length (Django's
    ``inc_thread_sharing``, as its live server thread shares a connection), so the call runs on
    the thread that made it, and looks after it between calls (see the module).
    """

    def __init__(self, alias: str) -> None:
        self.alias = alias
        self.lock = threading.RLock()  # one call at a time; the tidying too
        self.callers: set[threading.Thread] = set()  # the threads it served that may call again
        self.wake = threading.Event()
        self.connection: BaseDatabaseWrapper = connections[alias]  # replaced by the thread's own
        started = threading.Event()
        self.thread = threading.Thread(
            target=self._look_after, args=(started,), name=f"turnstate-saver-{alias}", daemon=True
        )
        self.thread.start()
        started.wait()

    def run(self, call: Callable[[], T], *, serving: bool = True) -> T:
        """``call()`` on this thread, on the saver connection (its ORM and ``atomic()`` too); the
        thread counts among those it serves unless ``serving`` is False."""
        own = connections[self.alias]
        with self.lock:
            if serving:
                self.callers.add(threading.current_thread())
            connection = self.connection
            closed = connection.connection is None
            connection.inc_thread_sharing()
            connections[self.alias] = connection
            try:
                return call()
            finally:
                connections[self.alias] = own
                try:
                    if connection.errors_occurred:
                        connection.close_if_unusable_or_obsolete()
                finally:
                    connection.dec_thread_sharing()
                if closed and connection.connection is not None:  # opened: its thread looks after it
                    self.wake.set()

    def release(self) -> None:
        """Close the connection now (it opens again on the next call)."""
        self.run(self.connection.close, serving=False)

    def _look_after(self, started: threading.Event) -> None:
        self.connection = connections[self.alias]  # this thread's own
        started.set()
        while True:
            self.wake.wait(self._wait())
            self.wake.clear()
            with self.lock:
                self._tidy()

    def _wait(self) -> float | None:
        """How long to wait before looking after the connection again (None: until a call wakes it)."""
        with self.lock:
            connection = self.connection
            if connection.connection is None:
                self.callers.clear()
                return None
            if self.callers:
                return WATCH
            if connection.close_at is None:
                return None
            return max(0.0, connection.close_at - time.monotonic())

    def _tidy(self) -> None:
        """Once no thread it served is alive, as Django does between requests: the connection is
        closed when unusable or past ``CONN_MAX_AGE`` (0: at once), else kept for the next calls."""
        self.callers = {caller for caller in self.callers if caller.is_alive()}
        if not self.callers:
            self.connection.close_if_unusable_or_obsolete()


_saver_connections: dict[str, SaverConnection] = {}
_starting = threading.Lock()


def saver_connection(alias: str) -> SaverConnection:
    """The alias's saver connection, its thread started on first use (again in a forked child)."""
    found = _saver_connections.get(alias)
    if found is not None and found.thread.is_alive():
        return found
    with _starting:
        found = _saver_connections.get(alias)
        if found is None or not found.thread.is_alive():
            found = _saver_connections[alias] = SaverConnection(alias)
        return found


def release_saver_connections() -> None:
    """Close every saver connection now: before a test database is dropped, say."""
    for found in list(_saver_connections.values()):
        if found.thread.is_alive():
            found.release()


def run_sync(alias: str, method: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
    """A sync saver call: on the saver connection when this thread would have to open a connection
    of its own for it and is not the main thread, else on the thread's own."""
    connection = connections[alias]
    if (
        connection.connection is not None
        or connection.in_atomic_block
        or in_memory(connection)
        or threading.current_thread() is _main_thread()
    ):
        return method(*args, **kwargs)
    return saver_connection(alias).run(lambda: method(*args, **kwargs))


class borrowed:  # noqa: N801 - used as a context manager, like contextlib's lowercase ones
    """The thread's connection to ``alias``.

    On an in-memory database, a sync call: the main thread's connection, one call at a time (see the module).
    A class rather than a generator-based context manager: every saver call enters one.
    """

    __slots__ = ("alias", "connection", "own", "shared")

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
