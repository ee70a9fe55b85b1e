"""A graph run opens at most one connection and leaves none open; the caller's transaction, its thread."""

from __future__ import annotations

import threading
import time
import uuid
from typing import Any

import pytest
from django.db import connection, connections, transaction
from django.db.backends.signals import connection_created
from langgraph.checkpoint.base import empty_checkpoint
from langgraph.types import Command

from tests.contrib.langgraph.graphs import config, linear_graph, trip_graph
from turnstate_app.contrib.langgraph import DjangoCheckpointSaver
from turnstate_app.contrib.langgraph.connections import (
    SaverConnection,
    in_memory,
    release_saver_connections,
    saver_connection,
)
from turnstate_app.contrib.langgraph.models import Checkpoint

pytestmark = pytest.mark.django_db(transaction=True)


def server_connections() -> int | None:
    """Sessions the database server holds on this test database (None: SQLite has no server)."""
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute("SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()")
        elif connection.vendor == "mysql":
            cursor.execute("SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE DB = DATABASE()")
        else:
            return None
        (count,) = cursor.fetchone()
    return int(count)


def settled_server_connections(expected: int | None) -> int | None:
    """The server's count once it has caught up: a backend ends a moment after its client closed."""
    deadline = time.monotonic() + 60  # an upper bound only: it returns as soon as the count is down
    while True:
        count = server_connections()
        if count is None or expected is None or count <= expected or time.monotonic() > deadline:
            return count
        time.sleep(0.05)


class Opened:
    """``connection_created`` on every thread, and the threads the saver's writes ran on, while active."""

    def __init__(self) -> None:
        self.connections: list[tuple[Any, str]] = []
        self.opened_at: list[float] = []
        self.writers: set[str] = set()

    def __call__(self, sender: Any, connection: Any, **_: Any) -> None:
        self.connections.append((connection, threading.current_thread().name))
        self.opened_at.append(time.monotonic())

    def __enter__(self) -> Opened:
        connection_created.connect(self)
        return self

    def __exit__(self, *exc: object) -> None:
        connection_created.disconnect(self)


class WriterRecordingSaver(DjangoCheckpointSaver):
    """Notes the threads LangGraph calls ``put`` and ``put_writes`` on."""

    def __init__(self, seen: set[str]) -> None:
        super().__init__()
        self.seen = seen

    def put(self, *args: Any, **kwargs: Any) -> Any:
        self.seen.add(threading.current_thread().name)
        return super().put(*args, **kwargs)

    def put_writes(self, *args: Any, **kwargs: Any) -> Any:
        self.seen.add(threading.current_thread().name)
        return super().put_writes(*args, **kwargs)


def saver_connection_closed(timeout: float = 60.0) -> bool:
    """Whether the saver connection is closed (waiting for its thread to notice the run ended)."""
    deadline = time.monotonic() + timeout
    home = saver_connection("default")
    while home.connection is not None and home.connection.connection is not None:
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True


@pytest.mark.parametrize("durability", ["sync", "async"])
def test_a_graph_run_opens_no_more_connections_than_its_executor_threads(durability: str) -> None:
    release_saver_connections()
    before = server_connections()
    per_run = []
    for _ in range(5):
        writers: set[str] = set()
        graph = linear_graph(WriterRecordingSaver(writers))
        with Opened() as opened:
            graph.invoke({"items": []}, config(f"linear-{uuid.uuid4()}"), durability=durability)
        on_other_threads = [name for _, name in opened.connections if name != threading.main_thread().name]
        executor_threads = writers - {threading.main_thread().name}
        per_run.append((len(on_other_threads), len(executor_threads)))
    print({"vendor": connection.vendor, "opened, executor threads (per run)": per_run})
    # LangGraph wrote from threads of its own in every run ...
    assert all(threads >= 1 for _, threads in per_run), per_run
    # ... and a run opened at most one connection (the saver connection): never one per write.
    assert all(opened <= min(1, threads) for opened, threads in per_run), per_run
    # A finished run leaves nothing open: with CONN_MAX_AGE = 0 the saver's thread closes (or gives
    # back to Django's pool) its connection once the run's threads are gone; a positive one keeps it.
    assert_closed_unless_kept(before)


def assert_closed_unless_kept(before: int | None) -> None:
    """The saver connection closed once the runs are over (and the server back to ``before``
    sessions), or, with a CONN_MAX_AGE other than 0, still open for the next runs."""
    if connection.settings_dict["CONN_MAX_AGE"] != 0 and not in_memory(connection):
        assert not saver_connection_closed(timeout=0)
        return
    assert saver_connection_closed()
    after = settled_server_connections(before)
    if before is not None:
        assert after is not None and after <= before, (before, after)


def test_twenty_graph_turns_leave_no_extra_connection() -> None:
    release_saver_connections()
    before = server_connections()
    with Opened() as opened:
        for _ in range(10):  # 10 pauses and 10 answers: 20 turns
            thread = f"turn-{uuid.uuid4()}"
            graph = trip_graph(DjangoCheckpointSaver())
            [pending] = graph.invoke({"transcript": []}, config(thread))["__interrupt__"]
            graph.invoke(Command(resume={pending.id: "Monday"}), config(thread))
    assert len(opened.connections) <= 20
    assert_closed_unless_kept(before)
    print({"vendor": connection.vendor, "before": before, "opened": len(opened.connections)})


def tidied(home: SaverConnection, timeout: float = 60.0) -> bool:
    """Whether the saver's thread has looked after its connection since the threads it served ended.

    It forgets a thread it served only when it finds it gone, and closes (or keeps) the connection
    in the same step, under its lock. It looks while those threads live once a call opened the
    connection (the first after it was closed), and otherwise when the connection expires.
    """
    deadline = time.monotonic() + timeout
    while True:
        with home.lock:
            if not home.callers:
                return True
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)


def test_conn_max_age_keeps_the_saver_connection_for_the_next_run_until_it_expires() -> None:
    """The saver's thread keeps its connection for the next runs while it is younger than
    ``CONN_MAX_AGE`` and closes it once older; with Django's pool it gives it back after each run.

    No step depends on how long a run takes on a loaded machine: the runs that reuse the
    connection do so under a ``CONN_MAX_AGE`` of an hour, and the connection that expires is
    waited for (an upper bound only), however late its thread gets to it.
    """
    release_saver_connections()
    before = server_connections()
    pooled = bool(connection.settings_dict["OPTIONS"].get("pool"))
    settings_dict = connections.settings["default"]
    saved = settings_dict["CONN_MAX_AGE"]
    if not pooled:  # Django's pool refuses a CONN_MAX_AGE
        settings_dict["CONN_MAX_AGE"] = 3600
    home = saver_connection("default")
    try:
        with Opened() as opened:
            for run in range(3):
                linear_graph(DjangoCheckpointSaver()).invoke({"items": []}, config(f"aged-{uuid.uuid4()}"))
                if run == 0 or pooled:  # a run that opened the connection: its thread looked after the run
                    assert tidied(home), "the saver's thread never saw the run's threads end"
                # kept for the next run (at CONN_MAX_AGE = 0 it would be closed now); pooled: given back
                assert saver_connection_closed(timeout=0) is (pooled or in_memory(connection))
        if in_memory(connection):  # every call ran on the main thread's connection
            assert opened.connections == []
            return
        if pooled:
            assert len(opened.connections) == 3, opened.connections
            return
        assert len(opened.connections) == 1, opened.connections  # three runs, one connection
        # Once older than CONN_MAX_AGE, the saver's thread closes it, with no call to wake it: it
        # wakes up when the connection expires (or, if the run outlasted it, closes it after the run).
        release_saver_connections()
        settings_dict["CONN_MAX_AGE"] = 1
        with Opened() as opened:
            linear_graph(DjangoCheckpointSaver()).invoke({"items": []}, config(f"aged-{uuid.uuid4()}"))
        assert len(opened.connections) == 1, opened.connections
        assert saver_connection_closed(timeout=60.0)
    finally:
        settings_dict["CONN_MAX_AGE"] = saved
    after = settled_server_connections(before)
    if before is not None:
        assert after is not None and after <= before, (before, after)


def test_a_thread_that_already_had_a_connection_keeps_it() -> None:
    kept: list[bool] = []

    def work() -> None:
        from django.db import connections

        own = connections["default"]
        own.ensure_connection()
        DjangoCheckpointSaver().get_tuple(config("nobody"))
        kept.append(own.connection is not None)
        own.close()

    worker = threading.Thread(target=work)
    worker.start()
    worker.join()
    assert kept == [True]


def test_the_callers_transaction_covers_calls_made_on_its_own_thread() -> None:
    saver = DjangoCheckpointSaver()
    thread = f"atomic-{uuid.uuid4()}"
    with pytest.raises(RuntimeError), transaction.atomic():
        saver.put({"configurable": {"thread_id": thread, "checkpoint_ns": ""}}, empty_checkpoint(), {}, {})
        assert Checkpoint.objects.filter(thread_id=thread).count() == 1
        raise RuntimeError("roll back")
    assert Checkpoint.objects.filter(thread_id=thread).count() == 0


class ThreadRecordingSaver(DjangoCheckpointSaver):
    """Notes the thread each read and write ran on."""

    def __init__(self) -> None:
        super().__init__()
        self.calls: list[tuple[str, bool]] = []

    def _note(self, name: str) -> None:
        self.calls.append((name, threading.current_thread() is threading.main_thread()))

    def get_tuple(self, config: Any) -> Any:
        self._note("get_tuple")
        return super().get_tuple(config)

    def put(self, *args: Any, **kwargs: Any) -> Any:
        self._note("put")
        return super().put(*args, **kwargs)


def test_a_sync_graph_reads_on_the_callers_thread_and_writes_on_langgraphs() -> None:
    saver = ThreadRecordingSaver()
    trip_graph(saver).invoke({"transcript": []}, config(f"threads-{uuid.uuid4()}"))
    assert ("get_tuple", True) in saver.calls
    assert {on_main for name, on_main in saver.calls if name == "put"} == {False}


def test_an_async_graph_under_async_to_sync_writes_inside_the_callers_transaction() -> None:
    from asgiref.sync import async_to_sync

    thread = f"atomic-async-{uuid.uuid4()}"
    with pytest.raises(RuntimeError), transaction.atomic():
        async_to_sync(trip_graph(DjangoCheckpointSaver()).ainvoke)({"transcript": []}, config(thread))
        assert Checkpoint.objects.filter(thread_id=thread).count() > 1
        raise RuntimeError("roll back")
    assert Checkpoint.objects.filter(thread_id=thread).count() == 0
