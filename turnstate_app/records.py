"""The turn-state record formats, each frozen the day it shipped.

A stored record outlives the code that wrote it, so a format is never read through the
live :class:`~turnstate_app.turnstate.TurnCheckpoint`: each version has its own schema
here, with a reader and a writer. Adding a field to the live model therefore cannot
change what format 1 means. It makes the format-1 writer refuse to run until a new
version (a new schema, reader and writer) says where the field goes. Readers are kept
for every version ever written, so every stored record stays readable.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

FORMAT_VERSION_FIELD = "format"
WRITTEN_FORMAT_VERSION = 1
"""The version :func:`encode_record` writes.

Raised only in the release *after* the one that learned to read the new version, so
that during a rolling deploy every running process can read every record written.
"""


class TurnStateRecordV1(BaseModel):
    """Format 1, as first shipped. Frozen: never add, remove or retype a field."""

    model_config = ConfigDict(frozen=True, extra="forbid", strict=True)

    run_id: str
    session_id: str
    thread_id: str
    checkpoint_id: str
    scope_hash: str
    tool_call_id: str | None
    interrupt_id: str | None
    name: str | None
    prompt: str
    messages: list[dict[str, Any]]


_V1_FIELDS = tuple(TurnStateRecordV1.model_fields)


def _read_v1(document: dict[str, Any]) -> dict[str, Any]:
    try:
        record = TurnStateRecordV1.model_validate(document, strict=True)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(map(str, err['loc'])) or '<record>'}: {err['msg']}" for err in exc.errors()
        )
        raise ValueError(f"format 1 record is incomplete or mistyped ({problems})") from None
    return {name: getattr(record, name) for name in _V1_FIELDS}


def _write_v1(fields: Mapping[str, Any]) -> dict[str, Any]:
    if set(fields) != set(_V1_FIELDS):
        raise ValueError(
            f"format 1 holds exactly {sorted(_V1_FIELDS)}, not {sorted(fields)}: a field added to "
            "TurnCheckpoint needs a new record format (schema, reader and writer) before it is written"
        )
    return {name: fields[name] for name in _V1_FIELDS}


READERS: dict[int, Callable[[dict[str, Any]], dict[str, Any]]] = {1: _read_v1}
"""Every format this release reads: version -> the live model's fields."""

WRITERS: dict[int, Callable[[Mapping[str, Any]], dict[str, Any]]] = {1: _write_v1}
"""The formats this release can write: the live model's fields -> the stored document."""


def encode_record(fields: Mapping[str, Any], *, version: int = WRITTEN_FORMAT_VERSION) -> str:
    """The stored text of a turn state, in ``version``: JSON, the version first."""
    document = {FORMAT_VERSION_FIELD: version, **WRITERS[version](fields)}
    return json.dumps(document, ensure_ascii=False, separators=(",", ":"), allow_nan=False)


def decode_record(raw: object) -> dict[str, Any]:
    """The live model's fields from a stored record of any version; ``ValueError`` otherwise.

    Nothing is guessed: a record that cannot be read completely is refused whole,
    because continuing from half a transcript is worse than not continuing.
    """
    if not isinstance(raw, str | bytes | bytearray):
        raise ValueError(f"a turn-state record is text, not {type(raw).__name__}")
    try:
        document = json.loads(raw)
    except ValueError as exc:  # JSONDecodeError and UnicodeDecodeError alike
        raise ValueError(f"not JSON: {exc}") from None
    if not isinstance(document, dict):
        raise ValueError(f"a JSON object was expected, not {type(document).__name__}")
    version = document.pop(FORMAT_VERSION_FIELD, None)
    reader = READERS.get(version) if type(version) is int else None
    if reader is None:
        raise ValueError(f"unknown format version {version!r}; this release reads {sorted(READERS)}")
    return reader(document)
