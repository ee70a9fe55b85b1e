"""The model-backed port on the configured database: the contract, sync and async."""

from __future__ import annotations

import dataclasses
import multiprocessing
from collections import Counter
from concurrent.futures import ProcessPoolExecutor
from importlib.util import find_spec

import pytest
from asgiref.sync import sync_to_async
from django.db import DatabaseError, connection, transaction
from django.test.utils import CaptureQueriesContext

from tests.factories import make_claims, make_turn
from tests.processes import claim_keys, overwrite_keys
from turnstate_app.errors import CheckpointFieldError
from turnstate_app.models import CheckpointMetadata
from turnstate_app.ports import InMemoryCheckpointCommandPort, ModelCheckpointCommandPort
from turnstate_app.ports.limits import INDEX_ID_BYTE_LIMITS
from turnstate_app.turnstate import TurnCheckpointStore

ROW = {"thread_id": "t-1", "checkpoint_id": "cp-1", "key": "ask_user_request:call-1"}

pytestmark = pytest.mark.django_db(transaction=True)


def test_read_of_a_missing_row_is_none(model_port: ModelCheckpointCommandPort) -> None:
    assert model_port.read_metadata_sync(**ROW) is None


def test_write_inserts_then_overwrites_in_place(model_port: ModelCheckpointCommandPort) -> None:
    model_port.write_metadata_sync(**ROW, value="one", task_id="run-1")
    first = CheckpointMetadata.objects.get()
    model_port.write_metadata_sync(**ROW, value="two", task_id=None)
    row = CheckpointMetadata.objects.get()
    assert (row.pk, row.value, row.task_id) == (first.pk, "two", None)
    assert row.created_at == first.created_at
    assert row.updated_at >= first.updated_at
    assert model_port.read_metadata_sync(**ROW) == "two"


def test_claim_inserts_only_when_absent(model_port: ModelCheckpointCommandPort) -> None:
    assert model_port.claim_metadata_sync(**ROW, value="first", task_id=None) is True
    assert model_port.claim_metadata_sync(**ROW, value="second", task_id=None) is False
    assert model_port.read_metadata_sync(**ROW) == "first"
    assert CheckpointMetadata.objects.count() == 1


async def test_async_api_matches_the_sync_twins(model_port: ModelCheckpointCommandPort) -> None:
    assert await model_port.read_metadata(**ROW) is None
    await model_port.write_metadata(**ROW, value="async", task_id="run-1")
    assert await sync_to_async(model_port.read_metadata_sync)(**ROW) == "async"
    assert await model_port.claim_metadata(**ROW, value="x", task_id=None) is False
    other = {**ROW, "key": "interrupt_payload:i-1"}
    assert await model_port.claim_metadata(**other, value="y", task_id=None) is True
    assert await model_port.read_metadata(**other) == "y"


async def test_store_round_trip_on_the_database(model_port: ModelCheckpointCommandPort) -> None:
    store = TurnCheckpointStore(commands=model_port)
    claims = make_claims()
    checkpoint = make_turn(claims=claims, messages=[{"content": "ünïcødé 𝄞 '\"; --"}])
    assert await store.record(claims, checkpoint) is True
    assert await TurnCheckpointStore(commands=ModelCheckpointCommandPort()).load(claims) == checkpoint


def test_ids_are_exact_byte_for_byte(model_port: ModelCheckpointCommandPort) -> None:
    variants = ["T-1", "t-1", "t-1 ", "\u00e9", "e\u0301", "E", "stra\u00dfe", "strasse"]
    for index, thread_id in enumerate(variants):
        model_port.write_metadata_sync(
            thread_id=thread_id, checkpoint_id="cp", key="k", value=str(index), task_id=None
        )
    assert CheckpointMetadata.objects.count() == len(variants)
    for index, thread_id in enumerate(variants):
        assert model_port.read_metadata_sync(thread_id=thread_id, checkpoint_id="cp", key="k") == str(index)


def test_each_write_is_one_statement(model_port: ModelCheckpointCommandPort) -> None:
    # MariaDB: a connection's first write reads max_allowed_packet once.
    model_port.write_metadata_sync(**{**ROW, "key": "warm"}, value="v", task_id=None)
    with CaptureQueriesContext(connection) as queries:
        model_port.write_metadata_sync(**ROW, value="v", task_id=None)
        model_port.write_metadata_sync(**ROW, value="w", task_id=None)
        model_port.claim_metadata_sync(**ROW, value="x", task_id=None)
        model_port.read_metadata_sync(**ROW)
    statements = [q["sql"] for q in queries.captured_queries]
    assert len(statements) == 4, statements
    assert all(s.lstrip().upper().startswith(("INSERT", "SELECT")) for s in statements)


def test_a_refused_write_leaves_the_callers_transaction_usable(
    model_port: ModelCheckpointCommandPort, monkeypatch: pytest.MonkeyPatch
) -> None:
    from turnstate_app.ports import model as model_module
    from turnstate_app.ports.statements import statements_for

    good = statements_for("default")
    bad = "INSERT INTO no_such_table VALUES (%s, %s, %s, %s, %s, %s, %s)"
    broken = dataclasses.replace(good, write=bad)
    with transaction.atomic():
        model_port.write_metadata_sync(**ROW, value="kept", task_id=None)
        monkeypatch.setattr(model_module, "statements_for", lambda alias: broken)
        with pytest.raises(DatabaseError):
            model_port.write_metadata_sync(**{**ROW, "key": "lost"}, value="v", task_id=None)
        monkeypatch.setattr(model_module, "statements_for", statements_for)
        model_port.write_metadata_sync(**{**ROW, "key": "other"}, value="also kept", task_id=None)
    assert set(CheckpointMetadata.objects.values_list("value", flat=True)) == {"kept", "also kept"}


@pytest.mark.parametrize("port_class", [ModelCheckpointCommandPort, InMemoryCheckpointCommandPort])
@pytest.mark.parametrize(
    ("row", "field"),
    [
        ({**ROW, "thread_id": ""}, "thread_id"),
        ({**ROW, "checkpoint_id": "x" * 256}, "checkpoint_id"),
        ({**ROW, "key": "a\x00b"}, "key"),
        ({**ROW, "thread_id": 7}, "thread_id"),
    ],
)
def test_bad_ids_are_refused_before_writing(port_class: type, row: dict, field: str) -> None:
    port = port_class()
    with pytest.raises(CheckpointFieldError, match=field):
        port.write_metadata_sync(**row, value="v", task_id=None)
    with pytest.raises(CheckpointFieldError, match=field):
        port.claim_metadata_sync(**row, value="v", task_id=None)
    assert CheckpointMetadata.objects.count() == 0


@pytest.mark.parametrize("port_class", [ModelCheckpointCommandPort, InMemoryCheckpointCommandPort])
def test_oversize_and_non_text_values_are_refused(port_class: type, turnstate_settings: dict) -> None:
    turnstate_settings["MAX_VALUE_BYTES"] = 100
    port = port_class()
    port.write_metadata_sync(**ROW, value="é" * 50, task_id=None)  # exactly 100 bytes
    with pytest.raises(
        CheckpointFieldError,
        match=r"value: is 102 UTF-8 bytes; the limit \(MAX_VALUE_BYTES\) is 100",
    ):
        port.write_metadata_sync(**ROW, value="é" * 51, task_id=None)
    with pytest.raises(CheckpointFieldError, match="value: must be a str, not bytes"):
        port.write_metadata_sync(**ROW, value=b"raw", task_id=None)
    with pytest.raises(CheckpointFieldError, match="NUL"):
        port.write_metadata_sync(**ROW, value="a\x00", task_id=None)
    with pytest.raises(CheckpointFieldError, match="task_id"):
        port.write_metadata_sync(**ROW, value="ok", task_id="t" * 300)
    assert port.read_metadata_sync(**ROW) == "é" * 50


def test_ids_at_the_column_limit_with_four_byte_characters(
    model_port: ModelCheckpointCommandPort,
) -> None:
    """255 characters of 4-byte UTF-8 each: stored where the index holds them, refused cleanly where not."""
    wide = "\U0001d11e" * 255  # 1020 bytes
    limit = INDEX_ID_BYTE_LIMITS.get(connection.vendor)
    # One full-width id plus short ones always fits.
    model_port.write_metadata_sync(thread_id=wide, checkpoint_id="cp", key="k", value="1", task_id=None)
    assert model_port.read_metadata_sync(thread_id=wide, checkpoint_id="cp", key="k") == "1"
    if limit is None:
        model_port.write_metadata_sync(thread_id=wide, checkpoint_id=wide, key=wide, value="3", task_id=None)
        assert model_port.read_metadata_sync(thread_id=wide, checkpoint_id=wide, key=wide) == "3"
        return
    with pytest.raises(CheckpointFieldError, match=f"at most {limit}"):
        model_port.write_metadata_sync(thread_id=wide, checkpoint_id=wide, key=wide, value="3", task_id=None)
    # Right at the limit, with incompressible characters, the database accepts it.
    rest = limit - 2 * len(wide.encode())
    key = "".join(chr(0x10000 + (i * 7919) % 0xFFFF) for i in range(rest // 4)) + "k" * (rest % 4)
    assert len((wide + wide + key).encode()) == limit
    model_port.write_metadata_sync(
        thread_id=wide, checkpoint_id=wide, key=key, value="at limit", task_id=None
    )
    assert model_port.read_metadata_sync(thread_id=wide, checkpoint_id=wide, key=key) == "at limit"


def test_eight_processes_claiming_the_same_keys_have_one_winner_each() -> None:
    keys = [f"ask_user_request:call-{n}" for n in range(50)]
    settings_dict = dict(connection.settings_dict)
    with ProcessPoolExecutor(8, mp_context=multiprocessing.get_context("spawn")) as pool:
        futures = [pool.submit(claim_keys, settings_dict, worker, keys) for worker in range(8)]
        results = [item for future in futures for item in future.result()]
    errors = [outcome for _, outcome in results if isinstance(outcome, str)]
    assert errors == []
    wins = Counter(key for key, outcome in results if outcome is True)
    assert wins == Counter(dict.fromkeys(keys, 1))
    assert CheckpointMetadata.objects.filter(thread_id="race").count() == 50
    for row in CheckpointMetadata.objects.filter(thread_id="race"):
        assert row.value == f"worker-{row.task_id}"


def test_eight_processes_overwriting_the_same_keys_leave_well_formed_rows() -> None:
    keys = [f"turn_state:jti-{n}" for n in range(50)]
    settings_dict = dict(connection.settings_dict)
    with ProcessPoolExecutor(8, mp_context=multiprocessing.get_context("spawn")) as pool:
        futures = [pool.submit(overwrite_keys, settings_dict, worker, keys, 3) for worker in range(8)]
        errors = [error for future in futures for error in future.result()]
    assert errors == []
    rows = CheckpointMetadata.objects.filter(thread_id="race")
    assert rows.count() == 50
    written = {f'{{"worker": {w}, "round": {r}}}' for w in range(8) for r in range(3)}
    for row in rows:
        assert row.value in written
        assert row.task_id == row.value.split(",")[0].split(": ")[1]


def test_execute_wrappers_see_every_port_statement(model_port: ModelCheckpointCommandPort) -> None:
    seen: list[str] = []

    def spy(execute, sql, params, many, context):  # type: ignore[no-untyped-def]
        seen.append(sql)
        return execute(sql, params, many, context)

    with connection.execute_wrapper(spy):
        model_port.write_metadata_sync(**ROW, value="v", task_id=None)
        model_port.claim_metadata_sync(**ROW, value="v", task_id=None)
        assert model_port.read_metadata_sync(**ROW) == "v"
    port_statements = [sql for sql in seen if CheckpointMetadata._meta.db_table in sql]
    assert len(port_statements) == 3  # (a fresh connection may add its own set-up statements)


@pytest.mark.skipif(connection.vendor != "postgresql", reason="prepared statements are PostgreSQL's")
@pytest.mark.skipif(
    bool(connection.settings_dict["OPTIONS"].get("pool")),
    reason="the test reconnects with other OPTIONS; a pool keeps the connections it opened",
)
@pytest.mark.skipif(
    find_spec("psycopg") is None,
    reason="server_side_binding and prepare_threshold are psycopg 3's OPTIONS; psycopg2 binds "
    "parameters on the client and prepares nothing",
)
def test_prepared_statements_are_djangos_options(model_port: ModelCheckpointCommandPort) -> None:
    """The port prepares nothing of its own: with Django's OPTIONS for it (psycopg 3's server-side
    binding and a prepare threshold) PostgreSQL prepares the port's statements; without, none."""

    def prepared() -> list[str]:
        with connection.cursor() as cursor:
            cursor.execute("SELECT statement FROM pg_prepared_statements")
            return [row[0] for row in cursor.fetchall()]

    model_port.write_metadata_sync(**ROW, value="v", task_id=None)
    assert not any("ON CONFLICT" in sql for sql in prepared())
    saved = connection.settings_dict["OPTIONS"]
    connection.close()
    connection.settings_dict["OPTIONS"] = {**saved, "server_side_binding": True, "prepare_threshold": 0}
    try:
        model_port.write_metadata_sync(**ROW, value="w", task_id=None)
        assert model_port.read_metadata_sync(**ROW) == "w"
        statements = prepared()
    finally:
        connection.close()
        connection.settings_dict["OPTIONS"] = saved
    assert any("ON CONFLICT" in sql for sql in statements), statements
    assert any(sql.lstrip().startswith("SELECT") for sql in statements), statements
