"""The port's fast path skips Django's per-statement checks only while none of them could fire.

Each test warms the path first (so the connection's guard record and port state exist),
then changes exactly what one of Django's checks, or a cached piece of state, looks at,
and shows the next statement reacts as Django's own cursor would.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
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
from turnstate_app.ports.execution import _driver_cursor, connection_for, run_statement
from turnstate_app.ports.limits import (
    ID_MAX_LENGTH,
    INDEX_ID_BYTE_LIMITS,
    plainly_valid_write,
    require_write,
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


def read_sql() -> tuple[str, str, tuple[str, ...]]:
    statements = statements_for("default")
    return statements.read, statements.native_read, (ROW["thread_id"], ROW["checkpoint_id"], "k")


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


def test_a_replaced_driver_connection_gets_a_cursor_of_its_own(
    model_port: ModelCheckpointCommandPort, connection: BaseDatabaseWrapper
) -> None:
    write(model_port, "before")
    old_cursor, _ = _driver_cursor(connection)
    connection.close()
    write(model_port, "after")
    new_cursor, _ = _driver_cursor(connection)
    assert new_cursor is not old_cursor
    assert stored("after") == "v"


def test_a_connection_used_from_another_thread_is_refused_as_django_refuses_it(
    model_port: ModelCheckpointCommandPort, connection: BaseDatabaseWrapper
) -> None:
    write(model_port, "warm")
    portable, native, params = read_sql()
    run_statement(connection, portable, native, params)  # the fast path, in the owning thread
    raised: list[BaseException] = []

    def other_thread() -> None:
        try:
            run_statement(connection, portable, native, params)
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
    portable, native, params = read_sql()
    results: list[Any] = []
    connection.inc_thread_sharing()
    try:
        worker = threading.Thread(
            target=lambda: results.append(run_statement(connection, portable, native, params))
        )
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


def test_the_health_check_runs_once_per_request_cycle(
    model_port: ModelCheckpointCommandPort, monkeypatch: pytest.MonkeyPatch, connection: BaseDatabaseWrapper
) -> None:
    write(model_port, "warm")
    old_driver = connection.connection
    checks: list[bool] = []

    def dead() -> bool:
        checks.append(False)
        return False

    monkeypatch.setattr(connection, "health_check_enabled", True)
    monkeypatch.setattr(connection, "health_check_done", False)  # a new request began
    connection.is_usable = dead  # type: ignore[method-assign]
    try:
        write(model_port, "after")
        # Found dead, closed and reopened: Django's connect() marks the check done.
        assert checks == [False]
        assert connection.connection is not old_driver
        write(model_port, "again")
        assert checks == [False]  # not again within the same request
    finally:
        del connection.is_usable
    assert stored("after") == "v" and stored("again") == "v"


def test_a_running_event_loop_is_refused_as_django_refuses_it(
    model_port: ModelCheckpointCommandPort, connection: BaseDatabaseWrapper
) -> None:
    write(model_port, "warm")
    portable, native, params = read_sql()
    run_statement(connection, portable, native, params)

    async def in_a_loop() -> None:
        run_statement(connection, portable, native, params)

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


def test_turning_prepared_statements_off_takes_effect_at_once(
    model_port: ModelCheckpointCommandPort, connection: BaseDatabaseWrapper
) -> None:
    if connection.vendor != "postgresql":
        pytest.skip("prepared statements are PostgreSQL's")

    def claim_prepared() -> bool:
        with connection.cursor() as cursor:
            cursor.execute("SELECT statement FROM pg_prepared_statements")
            return any("DO NOTHING" in row[0] for row in cursor.fetchall())

    connection.close()
    write(model_port, "warm")  # a fresh driver connection, its cursor cached with preparing on
    with override_settings(TURNSTATE={"PREPARED_STATEMENTS": False}):
        assert model_port.claim_metadata_sync(**ROW, key="plain", value="v", task_id=None)
        assert not claim_prepared()
    assert model_port.claim_metadata_sync(**ROW, key="prepared", value="v", task_id=None)
    assert claim_prepared()


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


# -- connection_for ------------------------------------------------------------------


def test_connection_for_is_connections_of_the_calling_thread() -> None:
    here = connection_for("default")
    assert here is connections["default"]
    seen: dict[str, Any] = {}

    def other_thread() -> None:
        seen["before"] = connections["default"]  # made here first: connection_for finds it
        seen["found"] = connection_for("default")
        seen["fresh"] = connection_for("replica")  # not made yet in this thread
        seen["replica"] = connections["replica"]
        connections.close_all()

    worker = threading.Thread(target=other_thread)
    worker.start()
    worker.join()
    assert seen["found"] is seen["before"] and seen["found"] is not here
    assert seen["fresh"] is seen["replica"]
    connections.close_all()
    assert connection_for("default") is connections["default"] is here


def test_connection_for_in_a_running_loop_is_connections_there() -> None:
    async def in_a_loop() -> tuple[Any, Any]:
        return connection_for("default"), connections["default"]

    found, expected = asyncio.run(in_a_loop())
    assert found is expected and found is not connections["default"]


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


@pytest.mark.parametrize("vendor", ["postgresql", "mysql", "sqlite", None])
def test_the_quick_check_accepts_only_what_the_full_check_accepts(vendor: str | None) -> None:
    """Wherever the quick check says yes, the full one passes; the usual writes take the quick one."""

    def full_passes(*args: Any) -> bool:
        try:
            require_write(*args, vendor=vendor, max_bytes=64)
        except CheckpointFieldError:
            return False
        return True

    def quick(thread_id: Any, checkpoint_id: Any, key: Any, value: Any, task_id: Any) -> bool:
        return plainly_valid_write(thread_id, checkpoint_id, key, value, task_id, vendor, 64)

    ids = _edge_ids()
    cases: list[tuple[Any, ...]] = []
    for edge in ids:
        cases += [(edge, "cp", "k", "v", None), ("t", edge, "k", "v", "task"), ("t", "cp", edge, "v", None)]
        cases.append(("t", "cp", "k", "v", edge))
    cases += [("t", "cp", "k", value, None) for value in _edge_values()]
    longest = "x" * ID_MAX_LENGTH
    cases.append((longest, longest, longest, "x" * 64, longest))
    wide = "😀" * ID_MAX_LENGTH  # 1020 UTF-8 bytes each: over PostgreSQL's index limit together
    cases.append((wide, wide, wide, "v", None))
    quick_yes = 0
    for case in cases:
        if quick(*case):
            quick_yes += 1
            assert full_passes(*case), case
    assert quick_yes >= 8
    assert quick("t", "cp", "k", "v", None) and quick(longest, longest, longest, "x" * 64, longest)
    if vendor == "postgresql":
        assert not full_passes(wide, wide, wide, "v", None)


def test_the_quick_check_respects_a_smaller_index_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    longest = "x" * ID_MAX_LENGTH
    monkeypatch.setitem(INDEX_ID_BYTE_LIMITS, "postgresql", 3 * ID_MAX_LENGTH - 1)
    assert not plainly_valid_write(longest, longest, longest, "v", None, "postgresql", 64)
    with pytest.raises(CheckpointFieldError, match="unique index"):
        require_write(longest, longest, longest, "v", None, vendor="postgresql", max_bytes=64)


def test_writes_the_quick_check_declines_still_get_the_full_checks_errors(
    model_port: ModelCheckpointCommandPort,
) -> None:
    bad: list[tuple[dict[str, Any], str]] = [
        ({"key": ""}, "key"),
        ({"key": "a\x00"}, "key"),
        ({"value": "a\x00"}, "value"),
        ({"value": "\ud800"}, "value"),
        ({"task_id": "x" * (ID_MAX_LENGTH + 1)}, "task_id"),
    ]
    fields: Callable[[dict[str, Any]], dict[str, Any]] = lambda change: {  # noqa: E731
        **ROW,
        "key": "k",
        "value": "v",
        "task_id": None,
        **change,
    }
    for change, field in bad:
        with pytest.raises(CheckpointFieldError) as raised:
            model_port.write_metadata_sync(**fields(change))
        assert raised.value.field == field
    model_port.write_metadata_sync(**fields({"value": "é"}))
    assert stored("k") == "é"
