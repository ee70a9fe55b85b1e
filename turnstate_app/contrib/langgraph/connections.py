"""Which connection a call runs on: the saver's own thread for LangGraph's executor threads.

LangGraph runs a sync graph's ``put`` and ``put_writes`` on its own executor threads, a new
pool of them for every run. Django gives each thread its own connection and closes it only
at the end of a request, which those threads never see; a connection opened there for each
call and closed after it costs a connection per checkpoint write. So a sync saver call made
on a thread other than the main one that holds no connection of its own (and is not inside
an atomic block, which it then could not be) runs on **the saver's thread** for its database
alias: one long-lived thread per alias, in this process, with its own Django connection,
which it manages as Django manages a request thread's between requests. While a thread that
called it is alive (the run's executor threads live until the run ends), it keeps its
connection open; once none is, it calls ``close_if_unusable_or_obsolete()``: with
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

import queue
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from types import TracebackType
from typing import Any, ParamSpec, TypeVar

from django.db import connections
from django.db.backends.base.base import BaseDatabaseWrapper

P = ParamSpec("P")
T = TypeVar("T")

_main_thread = threading.main_thread

WATCH = 0.05
"""Seconds between the saver thread's looks at whether the threads that called it are still alive."""

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


class SaverThread:
    """The long-lived thread one alias's routed sync calls run on, one at a time (see the module)."""

    def __init__(self, alias: str) -> None:
        self.alias = alias
        self.calls: queue.SimpleQueue[tuple[Future[Any], Callable[[], Any], threading.Thread]] = (
            queue.SimpleQueue()
        )
        # The threads whose calls it ran and that may call again: only this thread reads or changes it.
        self.callers: set[threading.Thread] = set()
        self.connection: BaseDatabaseWrapper | None = None  # its Django connection, once it started
        self.thread = threading.Thread(target=self._serve, name=f"turnstate-saver-{alias}", daemon=True)
        self.thread.start()

    def run(self, call: Callable[[], T]) -> T:
        """``call()`` on this thread; its result or its exception, in the calling thread."""
        future: Future[T] = Future()
        self.calls.put((future, call, threading.current_thread()))
        return future.result()

    def release(self) -> None:
        """Close the connection now (it opens again on the next call); returns once it is closed."""
        self.run(lambda: connections[self.alias].close())

    def _serve(self) -> None:
        connection = self.connection = connections[self.alias]  # this thread's own
        while True:
            try:
                future, call, caller = self.calls.get(timeout=self._wait(connection))
            except queue.Empty:
                self._tidy(connection)
                continue
            if caller is not self.thread:
                self.callers.add(caller)
            if not future.set_running_or_notify_cancel():
                continue
            try:
                result = call()
            except BaseException as error:  # handed to the caller, as an executor would
                future.set_exception(error)
            else:
                future.set_result(result)
            if connection.errors_occurred:
                connection.close_if_unusable_or_obsolete()

    def _wait(self, connection: BaseDatabaseWrapper) -> float | None:
        """How long to wait for the next call before looking after the connection (None: no limit)."""
        if connection.connection is None:
            self.callers.clear()
            return None
        if self.callers:
            return WATCH
        if connection.close_at is None:
            return None
        return max(0.0, connection.close_at - time.monotonic())

    def _tidy(self, connection: BaseDatabaseWrapper) -> None:
        """Once no thread that called is alive, as Django does between requests: the connection is
        closed when unusable or past ``CONN_MAX_AGE`` (0: at once), else kept for the next calls."""
        self.callers = {caller for caller in self.callers if caller.is_alive()}
        if not self.callers:
            connection.close_if_unusable_or_obsolete()


_saver_threads: dict[str, SaverThread] = {}
_starting = threading.Lock()


def saver_thread(alias: str) -> SaverThread:
    """The alias's saver thread, started on first use (again in a forked child, where it is gone)."""
    found = _saver_threads.get(alias)
    if found is not None and found.thread.is_alive():
        return found
    with _starting:
        found = _saver_threads.get(alias)
        if found is None or not found.thread.is_alive():
            found = _saver_threads[alias] = SaverThread(alias)
        return found


def release_saver_connections() -> None:
    """Close every saver thread's connection now: before a test database is dropped, say."""
    for found in list(_saver_threads.values()):
        if found.thread.is_alive():
            found.release()


def run_sync(alias: str, method: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
    """A sync saver call: on the saver thread when this thread would have to open a connection of
    its own for it and is neither the main thread nor the saver thread, else right here."""
    connection = connections[alias]
    if (
        connection.connection is not None
        or connection.in_atomic_block
        or in_memory(connection)
        or threading.current_thread() is _main_thread()
    ):
        return method(*args, **kwargs)
    home = saver_thread(alias)
    if threading.current_thread() is home.thread:
        return method(*args, **kwargs)
    return home.run(lambda: method(*args, **kwargs))


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
