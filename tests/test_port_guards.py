"""The port's statements meet every check Django's cursor makes, and every setting at once.

Each test warms the port first, then changes exactly what one of Django's checks (or a
setting the port reads) looks at, and shows the next statement reacts as Django's own
cursor would: the port keeps no state of its own on the connection.
"""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import pytest
from django.conf import settings
from django.core.exceptions import SynchronousOnlyOperation
from django.db import DatabaseError, connections, transaction
from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.transaction import TransactionManagementError
from django.test import override_settings

from turnstate_app.errors import CheckpointFieldError
from turnstate_app.models import CheckpointMetadata
from turnstate_app.ports import ModelCheckpointCommandPort
from turnstate_app.ports.execution import run_statement
from turnstate_app.ports.limits import (
    ID_MAX_LENGTH,
)
from turnstate_app.ports.model import whole_transaction_writes
from turnstate_app.ports.statements import statements_for

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def connection() -> BaseDatabaseWrapper:
    """This thread's wrapper itself, not ``django.db.connection`` (a proxy to the calling thread's)."""
    return connections["default"]


ROW = {"thread_id": "t-guard", "checkpoint_id": "cp-1"}


def write(port: ModelCheckpointCommandPort, key: str, value: str = "v") -> None:
    port.write_metadata_sync(**ROW, key=key, value=value, task_id=None)


def read_sql() -> tuple[str, tuple[str, ...]]:
    return statements_for("default").read, (ROW["thread_id"], ROW["checkpoint_id"], "k")


def stored(key: str) -> str | None:
    row = CheckpointMetadata.objects.filter(**ROW, key=key).first()
    return None if row is None else row.value


# -- Django's four checks ------------------------------------------------------------


def test_a_closed_connection_is_reopened(
    model_port: ModelCheckpointCommandPort, connection: BaseDatabaseWrapper
) -> None:
    write(model_port, "before")
    old_driver = connection.connection
    connection.close()
    assert connection.connection is None
    write(model_port, "after")
    assert connection.connection is not None and connection.connection is not old_driver
    assert stored("after") == "v"


def test_a_connection_used_from_another_thread_is_refused_as_django_refuses_it(
    model_port: ModelCheckpointCommandPort, connection: BaseDatabaseWrapper
) -> None:
    write(model_port, "warm")
    sql, params = read_sql()
    run_statement(connection, sql, params)  # in the owning thread
    raised: list[BaseException] = []

    def other_thread() -> None:
        try:
            run_statement(connection, sql, params)
        except BaseException as exc:  # noqa: BLE001 - handed to the test thread
            raised.append(exc)

    worker = threading.Thread(target=other_thread)
    worker.start()
    worker.join()
    assert len(raised) == 1 and type(raised[0]) is DatabaseError
    assert "can only be used in that same thread" in str(raised[0])


def test_a_connection_shared_on_purpose_may_be_used_from_another_thread(
    model_port: ModelCheckpointCommandPort, connection: BaseDatabaseWrapper
) -> None:
    write(model_port, "warm")
    sql, params = read_sql()
    results: list[Any] = []
    connection.inc_thread_sharing()
    try:
        worker = threading.Thread(target=lambda: results.append(run_statement(connection, sql, params)))
        worker.start()
        worker.join()
    finally:
        connection.dec_thread_sharing()
    assert results and results[0][1] is None


def test_a_broken_transaction_is_refused(model_port: ModelCheckpointCommandPort) -> None:
    write(model_port, "warm")
    with transaction.atomic(), whole_transaction_writes():
        write(model_port, "inside")  # the fast path, inside the transaction
        transaction.set_rollback(True)
        with pytest.raises(TransactionManagementError):
            write(model_port, "refused")
    assert stored("inside") is None and stored("refused") is None


def test_a_running_event_loop_is_refused_as_django_refuses_it(
    model_port: ModelCheckpointCommandPort, connection: BaseDatabaseWrapper
) -> None:
    write(model_port, "warm")
    sql, params = read_sql()
    run_statement(connection, sql, params)

    async def in_a_loop() -> None:
        run_statement(connection, sql, params)

    with pytest.raises(SynchronousOnlyOperation):
        asyncio.run(in_a_loop())


# -- cached state follows the settings ---------------------------------------------


def test_a_changed_value_limit_takes_effect_at_once(model_port: ModelCheckpointCommandPort) -> None:
    write(model_port, "warm", "x" * 100)
    with override_settings(TURNSTATE={"MAX_VALUE_BYTES": 10}):
        with pytest.raises(CheckpointFieldError, match="MAX_VALUE_BYTES"):
            write(model_port, "big", "x" * 11)
        write(model_port, "small", "x" * 10)
    write(model_port, "big", "x" * 11)
    assert stored("big") == "x" * 11


@pytest.mark.parametrize("turn_on", ["override_settings", "assignment"])
def test_debug_turned_on_logs_the_ports_statements(
    model_port: ModelCheckpointCommandPort,
    turn_on: str,
    monkeypatch: pytest.MonkeyPatch,
    connection: BaseDatabaseWrapper,
) -> None:
    write(model_port, "warm")
    assert settings.DEBUG is False
    connection.queries_log.clear()
    if turn_on == "assignment":
        monkeypatch.setattr(settings, "DEBUG", True)
        write(model_port, "logged")
    else:
        with override_settings(DEBUG=True):
            write(model_port, "logged")
    assert any(
        "logged" in str(query["sql"]) or query["sql"].startswith("INSERT") for query in connection.queries
    )
    connection.queries_log.clear()
    monkeypatch.undo()
    write(model_port, "quiet")
    assert connection.queries == []


def test_use_tz_turned_off_stamps_naive_times_as_timezone_now_would(
    model_port: ModelCheckpointCommandPort,
) -> None:
    write(model_port, "warm")
    with override_settings(USE_TZ=False):
        # SQLite and MariaDB refuse an aware datetime when USE_TZ is off: a stale read would raise.
        write(model_port, "naive")
        stamped = CheckpointMetadata.objects.get(**ROW, key="naive").created_at
    assert stamped.tzinfo is None
    write(model_port, "aware")
    assert CheckpointMetadata.objects.get(**ROW, key="aware").created_at.tzinfo is not None


# -- the limits' quick check ------------------------------------------------------------


def _edge_ids() -> list[Any]:
    return [
        "a",
        "x" * ID_MAX_LENGTH,
        "x" * (ID_MAX_LENGTH + 1),
        "",
        "a\x00b",
        "é",
        "é" * ID_MAX_LENGTH,
        "\ud800",
        "a\ud800",
        "日本" * 100,
        "😀" * 200,
        7,
        None,
        b"bytes",
        type("Sub", (str,), {})("sub"),
    ]


def _edge_values() -> list[Any]:
    return ["", "v", "x" * 64, "x" * 65, "é" * 32, "é" * 33, "a\x00", "\udfff", 1, None, b"v"]
