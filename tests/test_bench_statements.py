"""The benches' raw-driver floor runs exactly the port's statements, with every column the port writes.

The floor (``bench/common.py``: ``SQL_READ``, ``SQL_WRITE``, ``SQL_CLAIM``) is what the port's
latency is measured against, so it must send the very statements the port sends: when the port
gains a column and the floor does not, the benches stop at start (``check_statements``) and
publish no figures. These tests catch that in the suite instead, without running a bench. Rows
the port reads back are seeded with their real MAC (``stored_params``); the floor's own rows
carry a constant (``FLOOR_MAC``), which the port refuses to read.
"""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from django.db import connections

from bench import common
from turnstate_app.errors import ChangedAtRestError
from turnstate_app.ports import ModelCheckpointCommandPort
from turnstate_app.ports.statements import statements_for


@pytest.fixture
def vendor() -> str:
    """The test database's vendor; the hand-written floor SQL is the SQLite and PostgreSQL spelling."""
    name = connections["default"].vendor
    if name not in common.FLOOR_VENDORS:
        pytest.skip(f"the floor runs the port's own statement on {name} (statements_for), nothing to compare")
    return name


def test_the_floor_sql_is_the_ports(vendor: str) -> None:
    built = statements_for("default")
    ours = {"read": common.SQL_READ, "write": common.SQL_WRITE, "claim": common.SQL_CLAIM}
    theirs = {"read": built.read, "write": built.write, "claim": built.claim}
    assert ours == theirs


def test_check_statements_passes_the_ports_sql_and_stops_at_any_other(
    vendor: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    common.check_statements(vendor)  # the floor as it is: no SystemExit
    monkeypatch.setattr(common, "SQL_READ", common.SQL_READ.replace('"value_mac"', '"value"'))
    with pytest.raises(SystemExit, match="bench SQL for 'read' differs from the port's"):
        common.check_statements(vendor)


def test_a_row_fills_every_placeholder_of_the_ports_inserts() -> None:
    """On every database (MariaDB's floor runs the port's own statements with these parameters)."""
    built = statements_for("default")
    params = common.stored_params("bench-t", "cp", "k", "v", common.TASK_ID, datetime.now(UTC))
    assert built.write.count("%s") == len(params)
    assert built.claim.count("%s") == len(params)


@pytest.mark.django_db
def test_a_seeded_row_reads_back_through_the_port_and_a_floor_row_does_not(vendor: str) -> None:
    now = datetime.now(UTC)
    seeded = common.stored_params("bench-seed", "cp", "k:000001", "seeded value", common.TASK_ID, now)
    floor = ("bench-floor", "cp", "k:000001", "floor value", None, common.FLOOR_MAC, common.TASK_ID, now, now)
    with connections["default"].cursor() as cursor:
        cursor.execute(common.SQL_WRITE, seeded)
        cursor.execute(common.SQL_WRITE, floor)
    port = ModelCheckpointCommandPort()
    assert (
        port.read_metadata_sync(thread_id="bench-seed", checkpoint_id="cp", key="k:000001") == "seeded value"
    )
    with pytest.raises(ChangedAtRestError):
        port.read_metadata_sync(thread_id="bench-floor", checkpoint_id="cp", key="k:000001")
