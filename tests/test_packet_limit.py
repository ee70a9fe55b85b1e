"""MariaDB/MySQL: every value within ``MAX_VALUE_BYTES`` is stored byte-exact, whatever its characters.

The driver escapes quotes, backslashes and line breaks in the statement text, so a value of
8 MiB of ``"`` used to need 16 MiB on the wire, past the default ``max_allowed_packet``: such
a turn state minted an unresumable pause and such an answer was a 400. The port sends every
value as base64 (decoded by the server), which no escaping grows; a statement that still
cannot fit is refused before it is sent, and check ``turnstate.E015`` says which setting to
change when ``MAX_VALUE_BYTES`` cannot fit the server's packet at all.
"""

from __future__ import annotations

import base64
from typing import Any

import pytest
from django.db import connection, connections

from tests.pause_helpers import mint
from turnstate_app.checks import check_packet_limit
from turnstate_app.conf import DEFAULTS
from turnstate_app.errors import CheckpointFieldError
from turnstate_app.keys import turn_state_key
from turnstate_app.models import CheckpointMetadata, Pause
from turnstate_app.pauses import resume_pause
from turnstate_app.ports import ModelCheckpointCommandPort
from turnstate_app.ports.packets import packet_limit, required_packet, statement_bytes, wire_bytes

mysql_only = pytest.mark.skipif(connection.vendor != "mysql", reason="max_allowed_packet is MariaDB/MySQL's")
MAX = DEFAULTS["MAX_VALUE_BYTES"]


def test_wire_bytes_counts_what_the_driver_escapes() -> None:
    assert wire_bytes("abc") == 3
    assert wire_bytes("'\"\\\n\r\x1a") == 12
    assert wire_bytes("é'") == 4  # two UTF-8 bytes, one quote escaped
    assert statement_bytes("INSERT", ("a'b", None, 3)) > len("INSERT") + 4
    assert wire_bytes(base64.b64encode(b'"' * 3000).decode()) == 4000  # base64 is never escaped


def test_the_packet_a_value_needs_grows_by_a_third_not_double() -> None:
    assert 4 * MAX // 3 < required_packet(MAX) < 4 * MAX // 3 + 64 * 1024


@mysql_only
@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("char", ['"', "\\", "'", "\n"])
def test_a_value_of_max_value_bytes_of_escaped_characters_is_stored_byte_exact(char: str) -> None:
    assert packet_limit(connections["default"]) < 2 * MAX + 1024  # escaping would not fit
    value = char * MAX
    port = ModelCheckpointCommandPort()
    port.write_metadata_sync(thread_id="t", checkpoint_id="cp", key="k", value=value, task_id=None)
    assert port.read_metadata_sync(thread_id="t", checkpoint_id="cp", key="k") == value
    assert not port.claim_metadata_sync(thread_id="t", checkpoint_id="cp", key="k", value="x", task_id=None)
    assert port.claim_metadata_sync(thread_id="t", checkpoint_id="cp", key="c", value=value, task_id=None)
    assert port.read_metadata_sync(thread_id="t", checkpoint_id="cp", key="c") == value
    assert CheckpointMetadata.objects.get(key="k").value == value


def test_text_round_trips_exactly_through_the_port_on_every_database(db: Any) -> None:
    value = "é\"'\\\n\r\x1a😀 ͏\u2028"
    port = ModelCheckpointCommandPort()
    port.write_metadata_sync(thread_id="t", checkpoint_id="cp", key="k", value=value, task_id=None)
    assert port.read_metadata_sync(thread_id="t", checkpoint_id="cp", key="k") == value


def quotes_turn_state(n: int) -> tuple[str, str]:
    """Messages content and prompt for mint ``n`` whose turn state is exactly ``MAX`` bytes of JSON
    (its quotes each stored as two characters that the driver would both escape)."""
    probe = mint(n, messages=[{"role": "user", "content": '"' * 10}])
    row = CheckpointMetadata.objects.get(key=turn_state_key(probe.claims))
    overhead = len(row.value.encode()) - 2 * 10
    row.delete()
    Pause.objects.filter(jti=probe.claims.jti).delete()
    quotes, odd = divmod(MAX - overhead, 2)
    return '"' * quotes, "Book me a flight to Lisbon." + "!" * odd


@mysql_only
@pytest.mark.django_db(transaction=True)
def test_a_turn_state_of_exactly_max_value_bytes_of_quotes_mints_a_resumable_pause() -> None:
    content, prompt = quotes_turn_state(1)
    minted = mint(1, messages=[{"role": "user", "content": content}], prompt=prompt)
    stored = CheckpointMetadata.objects.get(key=turn_state_key(minted.claims)).value
    assert len(stored.encode()) == MAX
    assert minted.resumable is True
    checkpoint = resume_pause(minted.token, "yes").checkpoint
    assert checkpoint is not None and checkpoint.messages[0]["content"] == content


@mysql_only
@pytest.mark.django_db(transaction=True)
def test_an_answer_of_exactly_max_value_bytes_of_quotes_is_stored_byte_exact() -> None:
    minted = mint(2)
    answer = '"' * ((MAX - 2) // 2)  # stored as JSON: a quote, 2 bytes per quote, a quote
    assert resume_pause(minted.token, answer).answer == answer
    stored = CheckpointMetadata.objects.get(key=f"answer:{minted.claims.jti}").value
    assert len(stored.encode()) == MAX and stored == '"' + '\\"' * len(answer) + '"'
    assert Pause.objects.get().status == "answered"


@mysql_only
@pytest.mark.django_db(transaction=True)
def test_a_value_whose_statement_cannot_fit_the_packet_is_a_field_error_not_a_database_error(
    turnstate_settings: Any,
) -> None:
    limit = packet_limit(connections["default"])
    value = "a" * (limit * 3 // 4 + 1)  # within MAX_VALUE_BYTES, its base64 is past the packet
    turnstate_settings["MAX_VALUE_BYTES"] = limit
    port = ModelCheckpointCommandPort()
    with pytest.raises(CheckpointFieldError, match="max_allowed_packet"):
        port.write_metadata_sync(thread_id="t", checkpoint_id="cp", key="k", value=value, task_id=None)
    assert port.read_metadata_sync(thread_id="t", checkpoint_id="cp", key="k") is None
    port.write_metadata_sync(thread_id="t", checkpoint_id="cp", key="k", value="fits", task_id=None)
    assert port.read_metadata_sync(thread_id="t", checkpoint_id="cp", key="k") == "fits"


@mysql_only
@pytest.mark.django_db
def test_e015_when_max_value_bytes_cannot_fit_the_packet(turnstate_settings: Any) -> None:
    limit = packet_limit(connections["default"])
    assert check_packet_limit(databases=["default"]) == []  # the defaults fit a 16 MiB packet
    turnstate_settings["MAX_VALUE_BYTES"] = limit
    [error] = check_packet_limit(databases=["default"])
    assert error.id == "turnstate.E015" and error.is_serious()
    assert "MAX_VALUE_BYTES" in error.msg and "max_allowed_packet" in error.msg
    needed = required_packet(limit)
    assert f"max_allowed_packet={needed}" in (error.hint or "")
    assert "MAX_VALUE_BYTES" in (error.hint or "")
    turnstate_settings["MAX_VALUE_BYTES"] = limit // 2
    assert check_packet_limit(databases=["default"]) == []
    turnstate_settings["MAX_VALUE_BYTES"] = limit
    assert check_packet_limit(databases=None) == []  # only when checks may reach the database


@pytest.mark.skipif(connection.vendor == "mysql", reason="other databases have no packet limit")
@pytest.mark.django_db
def test_e015_is_silent_on_other_databases(turnstate_settings: Any) -> None:
    turnstate_settings["MAX_VALUE_BYTES"] = 1 << 30
    assert check_packet_limit(databases=["default"]) == []


def test_a_token_is_as_long_as_reckoned_for_every_size() -> None:
    from cryptography.fernet import Fernet

    from turnstate_app.encryption import largest_sealable, sealed_length

    fernet = Fernet(Fernet.generate_key())
    for size in (0, 1, 15, 16, 17, 1000, 4096, 65_537):
        assert len(fernet.encrypt(b"x" * size)) == sealed_length(size)
        assert largest_sealable(sealed_length(size)) >= size
        assert sealed_length(largest_sealable(sealed_length(size))) <= sealed_length(size)


@mysql_only
@pytest.mark.django_db
def test_e015_reckons_with_the_token_when_values_are_encrypted(turnstate_settings: Any) -> None:
    from tests.encryption_support import KEY_A

    limit = packet_limit(connections["default"])
    turnstate_settings["MAX_VALUE_BYTES"] = limit * 6 // 10  # fits as plaintext, not as a token
    assert check_packet_limit(databases=["default"]) == []
    turnstate_settings["ENCRYPTION_KEYS"] = [KEY_A]
    [error] = check_packet_limit(databases=["default"])
    assert error.id == "turnstate.E015"
