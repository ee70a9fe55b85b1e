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
from types import TracebackType

from django.db import connections
from django.db.backends.base.base import BaseDatabaseWrapper

_main_thread = threading.main_thread


class borrowed:  # noqa: N801 - used as a context manager, like contextlib's lowercase ones
    """The thread's connection to ``alias``; closed after use when this call opened it (unless ``keep``).

    A class rather than a generator-based context manager: every saver call enters one.
    """

    __slots__ = ("close_after", "connection")

    def __init__(self, alias: str, *, keep: bool) -> None:
        connection = connections[alias]
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
