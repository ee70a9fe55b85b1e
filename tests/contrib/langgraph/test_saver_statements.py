"""The saver's statements run on Django's cursor and keep its promises: observers see every statement,
a reopened connection is used afresh, async contexts are refused, timestamps are Django's own,
and the strict serializer refuses a constructor however deep it is nested."""

from __future__ import annotations

import asyncio
import uuid
from datetime import UTC, datetime
from typing import Any

import ormsgpack
import pytest
from django.core.exceptions import SynchronousOnlyOperation
from django.db import DatabaseError, connection
from django.test.utils import CaptureQueriesContext
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import empty_checkpoint
from langgraph.checkpoint.serde.jsonplus import EXT_CONSTRUCTOR_KW_ARGS, EXT_CONSTRUCTOR_POS_ARGS
from langgraph.checkpoint.serde.types import INTERRUPT

from tests.contrib.langgraph.keyed_rows import keyed_update
from turnstate_app.contrib.langgraph import DjangoCheckpointSaver, UnreadableCheckpointError
from turnstate_app.contrib.langgraph.models import ChannelBlob, Checkpoint, CheckpointWrite
from turnstate_app.contrib.langgraph.serde import default_serde

pytestmark = pytest.mark.django_db(transaction=True)

TABLES = ("turnstate_langgraph_checkpoint", "turnstate_langgraph_checkpointwrite")


def put_one(saver: DjangoCheckpointSaver, thread: str | None = None) -> RunnableConfig:
    checkpoint = empty_checkpoint()
    checkpoint["channel_values"] = {"messages": ["hello"]}
    checkpoint["channel_versions"] = {"messages": "1"}
    config: RunnableConfig = {
        "configurable": {"thread_id": thread or f"fast-{uuid.uuid4()}", "checkpoint_ns": ""}
    }
    return saver.put(config, checkpoint, {"source": "loop", "step": 1}, {"messages": "1"})


def ours(statements: list[str]) -> list[str]:
    return [sql for sql in statements if any(table in sql for table in TABLES)]


def calls(saver: DjangoCheckpointSaver) -> None:
    stored = put_one(saver)
    saver.put_writes(stored, [(INTERRUPT, "q"), ("messages", "x")], task_id="task-1")
    assert saver.get_tuple(stored) is not None
    assert len(list(saver.list(stored))) == 1


def test_captured_queries_show_every_statement() -> None:
    saver = DjangoCheckpointSaver()
    with CaptureQueriesContext(connection) as captured:
        calls(saver)
    # put, put_writes, get_tuple, list: one statement each (beside any the connection's set-up sends).
    assert len(ours([q["sql"] for q in captured.captured_queries])) == 4, captured.captured_queries


def test_an_execute_wrapper_sees_every_statement() -> None:
    saver = DjangoCheckpointSaver()
    seen: list[str] = []

    def wrapper(execute: Any, sql: str, params: Any, many: bool, context: Any) -> Any:
        seen.append(sql)
        return execute(sql, params, many, context)

    with connection.execute_wrapper(wrapper):
        calls(saver)
    assert len(ours(seen)) == 4, seen


def test_a_reopened_connection_is_used_afresh() -> None:
    saver = DjangoCheckpointSaver()
    stored = put_one(saver)
    connection.close()
    found = saver.get_tuple(stored)
    assert found is not None and found.checkpoint["channel_values"] == {"messages": ["hello"]}
    connection.close()
    again = put_one(saver, stored["configurable"]["thread_id"])
    assert saver.get_tuple(again) is not None


def test_a_sync_call_under_a_running_event_loop_is_refused() -> None:
    saver = DjangoCheckpointSaver()
    stored = put_one(saver)  # the connection is open

    async def inside_a_loop() -> None:
        saver.get_tuple(stored)

    with pytest.raises(SynchronousOnlyOperation):
        asyncio.run(inside_a_loop())


@pytest.mark.parametrize("use_tz", [True, False], ids=["aware", "naive"])
def test_created_at_is_stored_as_the_orm_stores_it(settings: Any, use_tz: bool) -> None:
    settings.USE_TZ = use_tz
    saver = DjangoCheckpointSaver()
    before = datetime.now(UTC if use_tz else None).replace(microsecond=0)
    stored = put_one(saver)
    after = datetime.now(UTC if use_tz else None)
    row = Checkpoint.objects.get(thread_id=stored["configurable"]["thread_id"])
    assert before <= row.created_at <= after
    if connection.vendor == "sqlite":  # stored as text: byte for byte what the ORM writes for it
        with connection.cursor() as cursor:
            cursor.execute(f"SELECT CAST(created_at AS TEXT) FROM {TABLES[0]} WHERE id = %s", [row.pk])
            (raw,) = cursor.fetchone()
        assert raw == connection.ops.adapt_datetimefield_value(row.created_at)


def nested_gadget() -> bytes:
    """An allowed constructor (LangGraph's ``Interrupt``) whose value is a refused one."""
    inner = ormsgpack.Ext(EXT_CONSTRUCTOR_POS_ARGS, ormsgpack.packb(["builtins", "print", ["PWNED"]]))
    return ormsgpack.packb(
        ormsgpack.Ext(
            EXT_CONSTRUCTOR_KW_ARGS,
            ormsgpack.packb(["langgraph.types", "Interrupt", {"value": inner, "id": "i-1"}]),
        )
    )


@pytest.mark.parametrize("derived", [False, True], ids=["default", "with_msgpack_allowlist"])
def test_a_constructor_nested_in_an_allowed_one_is_refused(
    derived: bool, capsys: pytest.CaptureFixture[str]
) -> None:
    serde = default_serde()
    if derived:
        serde = serde.with_msgpack_allowlist([("tests.contrib.langgraph.graphs", "Itinerary")])  # type: ignore[assignment]
    saver = DjangoCheckpointSaver(serde=serde)
    stored = put_one(saver)
    saver.put_writes(stored, [(INTERRUPT, "q")], task_id="task-1")
    keyed_update(CheckpointWrite, {"thread_id": stored["configurable"]["thread_id"]}, blob=nested_gadget())
    with pytest.raises(UnreadableCheckpointError, match=r"refused to construct builtins\.print"):
        saver.get_tuple(stored)
    assert "PWNED" not in capsys.readouterr().out
    # The same serializer still reads a row it allows, and an error leaves nothing behind for it.
    fresh = put_one(saver)
    found = saver.get_tuple(fresh)
    assert found is not None and found.checkpoint["channel_values"] == {"messages": ["hello"]}


REFUSE = {
    "sqlite": [
        f"CREATE TRIGGER refuse_checkpoint BEFORE INSERT ON {TABLES[0]} "
        "BEGIN SELECT RAISE(ABORT, 'refused'); END"
    ],
    "postgresql": [
        "CREATE FUNCTION refuse_checkpoint() RETURNS trigger AS $$ BEGIN RAISE EXCEPTION 'refused'; END $$ "
        "LANGUAGE plpgsql",
        f"CREATE TRIGGER refuse_checkpoint BEFORE INSERT ON {TABLES[0]} FOR EACH ROW "
        "EXECUTE FUNCTION refuse_checkpoint()",
    ],
    "mysql": [
        f"CREATE TRIGGER refuse_checkpoint BEFORE INSERT ON {TABLES[0]} FOR EACH ROW "
        "SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'refused'"
    ],
}
ALLOW = {
    "sqlite": ["DROP TRIGGER refuse_checkpoint"],
    "postgresql": [f"DROP TRIGGER refuse_checkpoint ON {TABLES[0]}", "DROP FUNCTION refuse_checkpoint()"],
    "mysql": ["DROP TRIGGER refuse_checkpoint"],
}


@pytest.mark.parametrize("size", [10, 10_000], ids=["one-statement", "value-row-then-checkpoint"])
def test_a_put_whose_checkpoint_row_is_refused_leaves_no_value_row_and_a_usable_connection(size: int) -> None:
    """The driver's error comes back as Django's ``DatabaseError``, whichever way the put ran."""
    saver = DjangoCheckpointSaver()
    thread = f"fast-{uuid.uuid4()}"
    checkpoint = empty_checkpoint()
    # 10 KB: a value row of its own, then the checkpoint
    checkpoint["channel_values"] = {"messages": "x" * size}
    checkpoint["channel_versions"] = {"messages": "1"}
    config: RunnableConfig = {"configurable": {"thread_id": thread, "checkpoint_ns": ""}}
    with connection.cursor() as cursor:
        for sql in REFUSE[connection.vendor]:
            cursor.execute(sql)
    try:
        with pytest.raises(DatabaseError, match="refused"):
            saver.put(config, checkpoint, {}, {"messages": "1"})
        assert not connection.in_atomic_block and connection.get_autocommit()
        assert not ChannelBlob.objects.filter(thread_id=thread).exists()
    finally:
        with connection.cursor() as cursor:
            for sql in ALLOW[connection.vendor]:
                cursor.execute(sql)
    stored = saver.put(config, checkpoint, {}, {"messages": "1"})
    found = saver.get_tuple(stored)
    assert found is not None and found.checkpoint["channel_values"] == {"messages": "x" * size}
