"""Which rows a checkpoint costs: its own, one per large value that changed, none for an empty channel.

A channel with a version but no value (a node's trigger once consumed) used to get a value
row at every version, so each step of a graph was a transaction of two writes and each read
looked those rows up. The body now names the channels whose values are rows of their own;
bodies written before that still read as they were written.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import empty_checkpoint

from tests.contrib.langgraph.graphs import config, linear_graph
from tests.contrib.langgraph.keyed_rows import keyed_update, rekey
from tests.contrib.langgraph.statements_seen import SeenStatements, watching
from turnstate_app.contrib.langgraph import DjangoCheckpointSaver
from turnstate_app.contrib.langgraph.models import ChannelBlob, Checkpoint
from turnstate_app.contrib.langgraph.rows import ELSEWHERE, EMPTY
from turnstate_app.encryption import seal

pytestmark = pytest.mark.django_db(transaction=True)

TABLES = (
    "turnstate_langgraph_checkpoint",
    "turnstate_langgraph_channelblob",
    "turnstate_langgraph_checkpointwrite",
)


def ours(captured: CaptureQueriesContext) -> list[str]:
    return [q["sql"] for q in captured.captured_queries if any(table in q["sql"] for table in TABLES)]


@pytest.fixture
def recorded() -> Iterator[SeenStatements]:
    with watching() as seen:
        yield seen


def test_a_graph_of_small_values_stores_no_value_rows_and_each_step_is_one_statement(
    recorded: SeenStatements,
) -> None:
    saver = DjangoCheckpointSaver()
    thread = f"rows-{uuid.uuid4()}"
    result = linear_graph(saver, nodes=4).invoke({"items": []}, config(thread))
    assert len(result["items"]) == 4
    assert not ChannelBlob.objects.filter(thread_id=thread).exists()
    checkpoints = Checkpoint.objects.filter(thread_id=thread).count()
    ours_sql = [sql for sql in recorded.sql if any(table in sql for table in TABLES)]
    puts = [sql for sql in ours_sql if "checkpointwrite" not in sql.split("(")[0]]
    puts = [sql for sql in puts if sql.lstrip().upper().startswith(("INSERT", "WITH"))]
    assert checkpoints >= 5 and len(puts) == checkpoints, ours_sql  # one statement per put
    assert not any("channelblob" in sql for sql in puts)
    assert not any(sql.upper().startswith(("SAVEPOINT", "BEGIN")) for sql in recorded.sql)


def test_the_newest_checkpoint_of_a_finished_run_is_read_in_one_query() -> None:
    saver = DjangoCheckpointSaver()
    thread = f"rows-{uuid.uuid4()}"
    linear_graph(saver, nodes=3).invoke({"items": []}, config(thread))
    with CaptureQueriesContext(connection) as captured:
        found = saver.get_tuple(config(thread))
    assert found is not None and len(found.checkpoint["channel_values"]["items"]) == 3
    assert any(k.startswith("branch:to:") for k in found.checkpoint["channel_versions"])  # empty ones
    assert ELSEWHERE not in found.checkpoint
    assert len(ours(captured)) == 1, ours(captured)


BIG = "b" * 70_000  # past every inline limit (rows.inline_max): a value row of its own


def put_first(saver: DjangoCheckpointSaver, thread: str) -> RunnableConfig:
    """A checkpoint with a large value, a small one and an empty channel ("gone"), all at version 1."""
    cfg: RunnableConfig = {"configurable": {"thread_id": thread, "checkpoint_ns": ""}}
    checkpoint = empty_checkpoint()
    checkpoint["channel_values"] = {"big": BIG, "small": "s"}
    checkpoint["channel_versions"] = {"big": "1", "small": "1", "gone": "1"}
    return saver.put(cfg, checkpoint, {}, {"big": "1", "small": "1", "gone": "1"})


def test_a_large_value_is_a_row_of_its_own_found_again_while_unchanged() -> None:
    saver = DjangoCheckpointSaver()
    thread = f"rows-{uuid.uuid4()}"
    stored = put_first(saver, thread)
    second = empty_checkpoint()
    second["channel_values"] = {"big": BIG, "small": "t"}
    second["channel_versions"] = {"big": "1", "small": "2", "gone": "1"}
    stored = saver.put(stored, second, {}, {"small": "2"})
    value_rows = ChannelBlob.objects.filter(thread_id=thread).values_list("channel", "version")
    assert list(value_rows) == [("big", "1")]
    found = saver.get_tuple(stored)
    assert found is not None
    assert found.checkpoint["channel_values"] == {"big": BIG, "small": "t"}


MIDDLE = "m" * 20_000  # past PostgreSQL's inline limit, within SQLite's


def test_a_middle_sized_value_is_inline_on_sqlite_and_a_row_of_its_own_elsewhere() -> None:
    """On SQLite a checkpoint with a value row is a transaction of two writes, so values of a few
    dozen KB (a chat's messages) stay inside the checkpoint's row there: a step is one statement."""
    saver = DjangoCheckpointSaver()
    thread = f"rows-{uuid.uuid4()}"
    cfg: RunnableConfig = {"configurable": {"thread_id": thread, "checkpoint_ns": ""}}
    checkpoint = empty_checkpoint()
    checkpoint["channel_values"] = {"messages": MIDDLE}
    checkpoint["channel_versions"] = {"messages": "1"}
    with CaptureQueriesContext(connection) as captured:
        stored = saver.put(cfg, checkpoint, {}, {"messages": "1"})
    value_rows = list(ChannelBlob.objects.filter(thread_id=thread).values_list("channel", flat=True))
    if connection.vendor == "sqlite":
        assert value_rows == []
        assert len(captured.captured_queries) == 1, captured.captured_queries  # no BEGIN, no COMMIT
    else:
        assert value_rows == ["messages"]
    found = saver.get_tuple(stored)
    assert found is not None and found.checkpoint["channel_values"] == {"messages": MIDDLE}


def old_style_body(saver: DjangoCheckpointSaver, thread: str, body: dict[str, Any]) -> None:
    """Rewrite the thread's checkpoint body as rows written before ``ELSEWHERE`` existed."""
    body = {key: value for key, value in body.items() if key != ELSEWHERE}
    type_, data = saver.serde.dumps_typed(body)
    blob, key_id = seal(data, thread_id=thread)
    keyed_update(Checkpoint, {"thread_id": thread}, type=type_, checkpoint=blob, encryption_key_id=key_id)


def test_a_body_written_before_elsewhere_reads_its_value_rows_and_empty_rows() -> None:
    saver = DjangoCheckpointSaver()
    thread = f"rows-{uuid.uuid4()}"
    stored = put_first(saver, thread)
    row = Checkpoint.objects.get(thread_id=thread)
    body = saver.serde.loads_typed((row.type, bytes(row.checkpoint)))
    assert body[ELSEWHERE] == ["big"]
    old_style_body(saver, thread, body)
    ChannelBlob.objects.create(thread_id=thread, ns_hash=row.ns_hash, channel="gone", version="1", type=EMPTY)
    rekey(ChannelBlob, thread_id=thread, channel="gone")
    with CaptureQueriesContext(connection) as captured:
        found = saver.get_tuple(stored)
    assert found is not None
    assert found.checkpoint["channel_values"] == {"big": BIG, "small": "s"}
    assert len(ours(captured)) == 2  # the checkpoint, then its value rows (the empty one among them)
