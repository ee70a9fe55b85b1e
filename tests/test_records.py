"""Record formats are frozen: a literal format-1 record, as shipped, read and written byte for byte.

Adding a field to the live ``TurnCheckpoint`` without a new format version fails here: either
the literal no longer decodes to the fixed checkpoint, or the format-1 writer refuses it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from turnstate_app.records import (
    READERS,
    WRITERS,
    WRITTEN_FORMAT_VERSION,
    TurnStateRecordV1,
    decode_record,
    encode_record,
)
from turnstate_app.turnstate import TurnCheckpoint

V1_LITERAL = (Path(__file__).parent / "records" / "turn_state_v1.json").read_bytes()

V1_CHECKPOINT = TurnCheckpoint(
    run_id="run-7",
    session_id="session-7",
    thread_id="thread-7",
    checkpoint_id="cp-7",
    scope_hash="scope-7",
    tool_call_id="call-7",
    interrupt_id=None,
    name="ask_user",
    prompt="Réserve un vol pour Lisbonne.",
    messages=[
        {"role": "user", "content": "Réserve un vol pour Lisbonne 🛫"},
        {
            "role": "assistant",
            "tool_calls": [
                {
                    "id": "call-7",
                    "name": "ask_user",
                    "args": {"question": "Quel jour ?", "n": 2, "ok": True, "x": None},
                }
            ],
        },
    ],
)


def test_the_literal_v1_record_decodes_to_the_fixed_checkpoint() -> None:
    assert TurnCheckpoint.decode(V1_LITERAL) == V1_CHECKPOINT
    assert TurnCheckpoint.decode(V1_LITERAL.decode("utf-8")) == V1_CHECKPOINT


def test_encoding_the_fixed_checkpoint_gives_the_literal_byte_for_byte() -> None:
    assert WRITTEN_FORMAT_VERSION == 1
    assert V1_CHECKPOINT.encode().encode("utf-8") == V1_LITERAL


def test_format_1_has_its_own_schema_apart_from_the_live_model() -> None:
    assert not issubclass(TurnStateRecordV1, TurnCheckpoint)
    assert tuple(TurnStateRecordV1.model_fields) == (
        "run_id",
        "session_id",
        "thread_id",
        "checkpoint_id",
        "scope_hash",
        "tool_call_id",
        "interrupt_id",
        "name",
        "prompt",
        "messages",
    )


def test_every_written_format_has_a_reader() -> None:
    assert set(WRITERS) <= set(READERS)
    assert WRITTEN_FORMAT_VERSION in WRITERS


def test_the_v1_writer_refuses_a_field_format_1_does_not_hold() -> None:
    fields: dict[str, Any] = {**V1_CHECKPOINT.model_dump(mode="json"), "locale": "fr"}
    with pytest.raises(ValueError, match="needs a new record format"):
        encode_record(fields, version=1)


def test_the_v1_writer_refuses_a_field_missing() -> None:
    fields = V1_CHECKPOINT.model_dump(mode="json")
    del fields["prompt"]
    with pytest.raises(ValueError, match="format 1 holds exactly"):
        encode_record(fields, version=1)


def test_a_boolean_is_not_a_format_version() -> None:
    raw = V1_LITERAL.decode("utf-8").replace('"format":1', '"format":true')
    with pytest.raises(ValueError, match="unknown format version True"):
        decode_record(raw)
