"""Which connection a call runs on, and closing the ones LangGraph's threads would leak.

LangGraph runs a sync graph's ``put`` and ``put_writes`` on its own executor threads.
Django gives each thread its own connection and closes them only at the end of a
request, which those threads never see: every turn would leave an idle connection
behind. So a sync call that had to open its thread's connection closes it again when
it returns — unless that thread is the main thread, or is inside an atomic block
(then it did not open it). A thread that already held a connection (a request, a
worker with ``CONN_MAX_AGE``) keeps it: its owner manages it. The async methods run
on Django's thread-sensitive executor, whose one connection is reused as usual.
"""

from __future__ import annotations

import threading
from asyncio import _get_running_loop
from types import TracebackType

from django.db import connections
from django.db.backends.base.base import BaseDatabaseWrapper

_main_thread = threading.main_thread


def connection_of(alias: str) -> BaseDatabaseWrapper:
    """``connections[alias]``, found without asgiref's cost where it is known to be a thread-local.

    Django keeps its connections in an asgiref ``Local(thread_critical=True)``, which in a thread
    running no event loop is exactly a ``threading.local`` (its lookup asks asyncio for a
    running loop first and pays an exception for the answer, about a microsecond a call). There
    the connection is read from that thread-local; anywhere else, when it is not there yet, or
    should asgiref keep it otherwise, Django's own lookup answers.
    """
    if _get_running_loop() is None:
        storage = getattr(getattr(connections, "_connections", None), "_storage", None)
        if type(storage) is threading.local:
            found = getattr(storage, alias, None)
            if found is not None:
                return found  # type: ignore[no-any-return]
    return connections[alias]


class borrowed:  # noqa: N801 - used as a context manager, like contextlib's lowercase ones
    """The thread's connection to ``alias``; closed after use when this call opened it (unless ``keep``).

    A class rather than a generator-based context manager: every saver call enters one.
    """

    __slots__ = ("close_after", "connection")

    def __init__(self, alias: str, *, keep: bool) -> None:
        connection = connection_of(alias)
        self.connection = connection
        self.close_after = (
            not keep and connection.connection is None and threading.current_thread() is not _main_thread()
        )

    def __enter__(self) -> BaseDatabaseWrapper:
        return self.connection

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        if self.close_after and not self.connection.in_atomic_block:
            self.connection.close()
