"""A value whose statement cannot fit MariaDB/MySQL's packet is refused before it is sent.

Escaping doubles quotes and backslashes on the wire, so with the default 16 MiB
``max_allowed_packet`` an 8 MiB value of quotes used to fail every retry with a database
error (503), and such a transcript made ``mint_pause`` raise instead of minting a pause
that says it is not resumable.
"""

from __future__ import annotations

from typing import Any

import pytest
from django.db import connection, connections

from tests.pause_helpers import mint
from turnstate_app.checks import check_packet_limit
from turnstate_app.errors import CheckpointFieldError
from turnstate_app.models import Pause
from turnstate_app.pauses import resume_pause
from turnstate_app.ports import ModelCheckpointCommandPort
from turnstate_app.ports.packets import packet_limit, statement_bytes, wire_bytes

mysql_only = pytest.mark.skipif(connection.vendor != "mysql", reason="max_allowed_packet is MariaDB/MySQL's")


def test_wire_bytes_counts_what_the_driver_escapes() -> None:
    assert wire_bytes("abc") == 3
    assert wire_bytes("'\"\\\n\r\x1a") == 12
    assert wire_bytes("é'") == 4  # two UTF-8 bytes, one quote escaped
    assert statement_bytes("INSERT", ("a'b", None, 3)) > len("INSERT") + 4


def quotes_filling(limit: int) -> str:
    """The largest value of quotes MAX_VALUE_BYTES allows that cannot fit the packet once escaped."""
    return "'" * (limit // 2 + 1)


@mysql_only
@pytest.mark.django_db(transaction=True)
def test_a_value_that_cannot_fit_the_packet_is_a_field_error_not_a_database_error(
    turnstate_settings: Any,
) -> None:
    limit = packet_limit(connections["default"])
    value = quotes_filling(limit)
    turnstate_settings["MAX_VALUE_BYTES"] = len(value)
    port = ModelCheckpointCommandPort()
    with pytest.raises(CheckpointFieldError, match="max_allowed_packet"):
        port.write_metadata_sync(thread_id="t", checkpoint_id="cp", key="k", value=value, task_id=None)
    assert port.read_metadata_sync(thread_id="t", checkpoint_id="cp", key="k") is None
    port.write_metadata_sync(thread_id="t", checkpoint_id="cp", key="k", value="fits", task_id=None)
    assert port.read_metadata_sync(thread_id="t", checkpoint_id="cp", key="k") == "fits"


@mysql_only
@pytest.mark.django_db(transaction=True)
def test_such_a_transcript_mints_a_pause_that_says_it_is_not_resumable(turnstate_settings: Any) -> None:
    value = quotes_filling(packet_limit(connections["default"]))
    turnstate_settings["MAX_VALUE_BYTES"] = len(value) + 1024
    minted = mint(1, messages=[{"role": "user", "content": value}])
    assert minted.resumable is False
    assert Pause.objects.get().resumable is False
    assert resume_pause(minted.token, "answered all the same").checkpoint is None


@mysql_only
@pytest.mark.django_db(transaction=True)
def test_such_an_answer_is_refused_and_the_pause_stays_pending(turnstate_settings: Any) -> None:
    value = quotes_filling(packet_limit(connections["default"]))
    turnstate_settings["MAX_VALUE_BYTES"] = len(value) + 1024
    minted = mint(2)
    with pytest.raises(CheckpointFieldError, match="max_allowed_packet"):
        resume_pause(minted.token, value)
    assert Pause.objects.get().status == "pending"
    assert resume_pause(minted.token, "short").answer == "short"


@mysql_only
@pytest.mark.django_db
def test_w002_warns_when_max_value_bytes_cannot_fit_the_packet(turnstate_settings: Any) -> None:
    limit = packet_limit(connections["default"])
    turnstate_settings["MAX_VALUE_BYTES"] = limit // 2
    assert [m.id for m in check_packet_limit(databases=["default"])] == ["turnstate.W002"]
    turnstate_settings["MAX_VALUE_BYTES"] = limit // 4
    assert check_packet_limit(databases=["default"]) == []
    turnstate_settings["MAX_VALUE_BYTES"] = limit // 2
    assert check_packet_limit(databases=None) == []  # only when checks may reach the database


@pytest.mark.skipif(connection.vendor == "mysql", reason="other databases have no packet limit")
@pytest.mark.django_db
def test_w002_is_silent_on_other_databases(turnstate_settings: Any) -> None:
    turnstate_settings["MAX_VALUE_BYTES"] = 1 << 30
    assert check_packet_limit(databases=["default"]) == []
