"""The saver's id columns: SQLite's plain rowid (no AUTOINCREMENT), elsewhere a 64-bit auto-increment.

Migration 0003 rebuilds the three tables on SQLite keeping every row, and back again. Since a
plain rowid may give the id of the newest deleted row to the next insert, the saver's answers
must not depend on ids: pending writes and checkpoints come back in their own order.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import ChannelVersions, empty_checkpoint

from turnstate_app.contrib.langgraph import DjangoCheckpointSaver
from turnstate_app.contrib.langgraph.models import ChannelBlob, Checkpoint, CheckpointWrite

pytestmark = pytest.mark.django_db(transaction=True)

APP = "turnstate_langgraph"
BEFORE = (APP, "0002_exact_ids")
AFTER = (APP, "0003_sqlite_rowid")
LATEST = (APP, "0005_value_mac")
LATER_COLUMNS = {"encryption_key_id", "value_mac"}  # added by later migrations than AFTER
MODELS = (Checkpoint, ChannelBlob, CheckpointWrite)
BIG = "v" * 70_000  # a value kept in the value table on every database, so all three tables get rows


def table_sql(table: str) -> str:
    with connection.cursor() as cursor:
        cursor.execute("SELECT sql FROM sqlite_master WHERE type = 'table' AND name = %s", [table])
        (sql,) = cursor.fetchone()
    return str(sql)


def id_column(table: str) -> tuple[str, str]:
    """The id column's type and how it is generated, from ``information_schema``."""
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute(
                "SELECT data_type, is_identity FROM information_schema.columns "
                "WHERE table_catalog = current_database() AND table_name = %s AND column_name = 'id'",
                [table],
            )
        else:
            cursor.execute(
                "SELECT data_type, extra FROM information_schema.columns "
                "WHERE table_schema = DATABASE() AND table_name = %s AND column_name = 'id'",
                [table],
            )
        (data_type, generated) = cursor.fetchone()
    return str(data_type).lower(), str(generated).lower()


def put(saver: DjangoCheckpointSaver, thread: str, step: int, parent: str | None = None) -> RunnableConfig:
    checkpoint = empty_checkpoint()
    version = f"{step + 1:032}.{0:016}"
    checkpoint["channel_values"] = {"small": step, "big": BIG + str(step)}
    checkpoint["channel_versions"] = {"small": version, "big": version}
    conf: dict[str, Any] = {"thread_id": thread, "checkpoint_ns": ""}
    if parent:
        conf["checkpoint_id"] = parent
    new_versions: ChannelVersions = {"small": version, "big": version}
    return saver.put({"configurable": conf}, checkpoint, {"source": "loop", "step": step}, new_versions)


def rows() -> dict[str, list[tuple[Any, ...]]]:
    """Every row of the three tables, id included, in id order (the columns BEFORE and AFTER share)."""
    return {
        model.__name__: list(
            model.objects.order_by("pk").values_list(
                *(f.attname for f in model._meta.concrete_fields if f.name not in LATER_COLUMNS)
            )
        )
        for model in MODELS
    }


def newest() -> dict[str, int]:
    """Each table's highest id."""
    return {model.__name__: model.objects.order_by("-pk").values_list("pk", flat=True)[0] for model in MODELS}


@pytest.fixture
def executor() -> Iterator[MigrationExecutor]:
    """A migration executor; the saver's tables end the test fully migrated, whatever happened."""
    yield MigrationExecutor(connection)
    executor = MigrationExecutor(connection)
    executor.migrate(executor.loader.graph.leaf_nodes(APP))


def test_the_id_columns_are_a_plain_rowid_on_sqlite_and_a_64_bit_auto_increment_elsewhere() -> None:
    for model in MODELS:
        table = model._meta.db_table
        if connection.vendor == "sqlite":
            sql = table_sql(table)
            assert '"id" integer NOT NULL PRIMARY KEY' in sql, sql
            assert "AUTOINCREMENT" not in sql.upper(), sql
        elif connection.vendor == "postgresql":
            assert id_column(table) == ("bigint", "yes")
        else:
            data_type, extra = id_column(table)
            assert data_type == "bigint" and "auto_increment" in extra


def test_the_migration_keeps_every_row_forward_and_back(executor: MigrationExecutor) -> None:
    saver = DjangoCheckpointSaver()
    thread = f"schema-{uuid.uuid4()}"
    first = put(saver, thread, 0)
    saver.put_writes(first, [("small", 1), ("big", 2)], task_id="task-0")
    put(saver, thread, 1, first["configurable"]["checkpoint_id"])
    stored = rows()
    assert all(stored.values()), stored

    executor.migrate([BEFORE])
    assert rows() == stored
    if connection.vendor == "sqlite":
        for model in MODELS:
            assert "AUTOINCREMENT" in table_sql(model._meta.db_table).upper()

    executor = MigrationExecutor(connection)
    executor.migrate([AFTER])
    assert rows() == stored
    if connection.vendor == "sqlite":
        for model in MODELS:
            assert "AUTOINCREMENT" not in table_sql(model._meta.db_table).upper()
    MigrationExecutor(connection).migrate([LATEST])
    head = saver.get_tuple({"configurable": {"thread_id": thread, "checkpoint_ns": ""}})
    assert head is not None and head.checkpoint["channel_values"] == {"small": 1, "big": BIG + "1"}
    # New rows are numbered after the copied ones.
    put(saver, thread, 2, head.config["configurable"]["checkpoint_id"])
    assert Checkpoint.objects.order_by("pk").last().metadata["step"] == 2  # type: ignore[union-attr]


def test_answers_do_not_depend_on_ids_when_the_newest_rows_are_deleted_and_their_ids_given_again() -> None:
    saver = DjangoCheckpointSaver()
    thread = f"reuse-{uuid.uuid4()}"
    first = put(saver, thread, 0)
    parent = first["configurable"]["checkpoint_id"]
    # Task "b" writes first, so its rows get lower ids than task "a"'s below.
    saver.put_writes(first, [("small", "b0"), ("big", "b1")], task_id="b")
    second = put(saver, thread, 1, parent)
    saver.put_writes(second, [("small", "doomed")], task_id="a")
    newest_ids = newest()

    # The newest checkpoint, its value rows and its write go; the thread is at ``first`` again.
    second_id = second["configurable"]["checkpoint_id"]
    CheckpointWrite.objects.filter(checkpoint_id=second_id).delete()
    Checkpoint.objects.filter(checkpoint_id=second_id).delete()
    ChannelBlob.objects.filter(version=f"{2:032}.{0:016}").delete()

    saver.put_writes(first, [("small", "a0")], task_id="a")
    third = put(saver, thread, 2, parent)
    reused = newest()
    if connection.vendor == "sqlite":
        assert reused == newest_ids  # SQLite's rowid hands the deleted ids out again
    else:
        assert all(reused[name] > newest_ids[name] for name in reused)

    found = saver.get_tuple(first)
    assert found is not None
    # LangGraph's order (task path, task id, index), not the order of ids.
    assert found.pending_writes == [("a", "small", "a0"), ("b", "small", "b0"), ("b", "big", "b1")]
    head = saver.get_tuple({"configurable": {"thread_id": thread, "checkpoint_ns": ""}})
    assert head is not None and head.config == third
    assert head.pending_writes == []  # the deleted checkpoint's write did not come back with its id
    assert head.checkpoint["channel_values"] == {"small": 2, "big": BIG + "2"}
    listed = list(saver.list({"configurable": {"thread_id": thread}}))
    assert [t.config["configurable"]["checkpoint_id"] for t in listed] == [
        third["configurable"]["checkpoint_id"],
        parent,
    ]
    assert listed[1].pending_writes == found.pending_writes
