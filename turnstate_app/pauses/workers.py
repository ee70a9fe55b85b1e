"""The few threads that run RESUME_HANDLER, so a slow handler never holds the one who answered.

A fixed number of threads, started on first use and shared by every hand-off of the
process: never a thread per call. Each job's database connections are closed when it
ends (the job ran outside any request, so nothing else would close them). The threads
are daemons that the process joins at exit for at most ``HANDOFF_TIMEOUT``: a handler
that never returns cannot keep a process from ending, and its pause simply stays in
``Pause.objects.awaiting_handoff()`` for ``turnstate_redeliver``. Jobs still queued at
exit are dropped the same way.
"""

from __future__ import annotations

import atexit
import os
import queue
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any, TypeVar

from django.db import connections

from turnstate_app.conf import DEFAULTS, conf

WORKERS = 4
"""Hand-offs that may run at once per process; more wait in the queue, in order."""

_T = TypeVar("_T")
_Job = tuple[Future[Any], Callable[[], Any]]


class HandoffWorkers:
    """A small pool of daemon threads with a shutdown whose wait is bounded."""

    def __init__(self, size: int) -> None:
        self.size = size
        self._jobs: queue.SimpleQueue[_Job | None] = queue.SimpleQueue()
        self._threads: list[threading.Thread] = []
        self._lock = threading.Lock()
        self._closed = False

    def submit(self, job: Callable[[], _T]) -> Future[_T]:
        """Run ``job`` on a worker; its outcome (or exception) lands in the returned future."""
        future: Future[_T] = Future()
        with self._lock:
            if self._closed:
                raise RuntimeError("the hand-off workers are shut down (the process is exiting)")
            if len(self._threads) < self.size:
                self._start_thread()
            self._jobs.put((future, job))
        return future

    def _start_thread(self) -> None:
        thread = threading.Thread(
            target=self._work, name=f"turnstate-handoff-{len(self._threads) + 1}", daemon=True
        )
        thread.start()
        self._threads.append(thread)

    def _work(self) -> None:
        while (item := self._jobs.get()) is not None:
            future, job = item
            if not future.set_running_or_notify_cancel():
                continue
            try:
                future.set_result(job())
            except BaseException as exc:  # the caller (if still waiting) sees it
                future.set_exception(exc)
            finally:
                connections.close_all()

    def shutdown(self, *, timeout: float) -> None:
        """Stop taking jobs, drop the queued ones, give running ones ``timeout`` seconds in all."""
        with self._lock:
            self._closed = True
            threads = list(self._threads)
        while True:
            try:
                item = self._jobs.get_nowait()
            except queue.Empty:
                break
            if item is not None:
                item[0].cancel()
        for _ in threads:
            self._jobs.put(None)
        deadline = time.monotonic() + timeout
        for thread in threads:
            thread.join(max(0.0, deadline - time.monotonic()))


_workers = HandoffWorkers(WORKERS)


def submit(job: Callable[[], _T]) -> Future[_T]:
    """Run ``job`` on this process's hand-off workers."""
    return _workers.submit(job)


def _shutdown_at_exit() -> None:
    try:
        timeout = conf.HANDOFF_TIMEOUT
    except Exception:  # settings unusable this late: the documented default
        timeout = float(DEFAULTS["HANDOFF_TIMEOUT"])
    _workers.shutdown(timeout=timeout)


def _forget_in_child() -> None:
    """A forked child has none of its parent's threads: start its own on first use."""
    global _workers
    _workers = HandoffWorkers(WORKERS)


atexit.register(_shutdown_at_exit)
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_in_child)
