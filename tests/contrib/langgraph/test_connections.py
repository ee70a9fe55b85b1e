"""LangGraph's executor threads leave no connection behind; the caller's transaction covers its own thread."""

from __future__ import annotations

import threading
import time
import uuid
from typing import Any

import pytest
from django.db import connection, transaction
from django.db.backends.signals import connection_created
from langgraph.checkpoint.base import empty_checkpoint
from langgraph.types import Command

from tests.contrib.langgraph.graphs import config, trip_graph
from turnstate_app.contrib.langgraph import DjangoCheckpointSaver
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
    deadline = time.monotonic() + 5
    while True:
        count = server_connections()
        if count is None or expected is None or count <= expected or time.monotonic() > deadline:
            return count
        time.sleep(0.05)


def test_twenty_graph_turns_leave_no_extra_connection() -> None:
    opened: list[tuple[Any, str]] = []

    def record(sender: Any, connection: Any, **_: Any) -> None:
        opened.append((connection, threading.current_thread().name))

    before = server_connections()
    connection_created.connect(record)
    try:
        for _ in range(10):  # 10 pauses and 10 answers: 20 turns
            thread = f"turn-{uuid.uuid4()}"
            graph = trip_graph(DjangoCheckpointSaver())
            [pending] = graph.invoke({"transcript": []}, config(thread))["__interrupt__"]
            graph.invoke(Command(resume={pending.id: "Monday"}), config(thread))
    finally:
        connection_created.disconnect(record)

    on_other_threads = [(c, name) for c, name in opened if name != threading.main_thread().name]
    # LangGraph did write from its own threads, each of which opened a connection ...
    assert len(on_other_threads) >= 20
    # ... and every one of them is closed again.
    assert [name for c, name in on_other_threads if c.connection is not None] == []
    after = settled_server_connections(before)
    if before is not None:
        assert after is not None and after <= before, (before, after)
    print(
        {"vendor": connection.vendor, "server_sessions_before": before, "after": after, "opened": len(opened)}
    )


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
