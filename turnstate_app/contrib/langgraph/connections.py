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
from collections.abc import Iterator
from contextlib import contextmanager

from django.db import connections
from django.db.backends.base.base import BaseDatabaseWrapper


@contextmanager
def borrowed(alias: str, *, keep: bool) -> Iterator[BaseDatabaseWrapper]:
    """The thread's connection to ``alias``; closed after use when this call opened it (unless ``keep``)."""
    connection = connections[alias]
    close_after = (
        not keep
        and connection.connection is None
        and threading.current_thread() is not threading.main_thread()
    )
    try:
        yield connection
    finally:
        if close_after and not connection.in_atomic_block:
            connection.close()
