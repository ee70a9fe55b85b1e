"""What the store keeps as keys, and the limits it checks before any statement runs.

Checked here, with an error naming the field, rather than left to the database: there
the error would differ per vendor and would poison the caller's transaction on PostgreSQL.
"""

from __future__ import annotations

from typing import Any

from turnstate_app.contrib._text import refuse_lone_surrogate
from turnstate_app.errors import CheckpointFieldError

CONVERSATION_ID_MAX_LENGTH = 255  # also the core's thread_id: a conversation is a pause's thread
SCOPE_MAX_LENGTH = 255
ENTRY_ID_MAX_LENGTH = 64  # PydanticAI mints uuid7 strings (36 characters)
REVISION_MAX_LENGTH = 64
KIND_MAX_LENGTH = 32


def check_text(field: str, value: Any, *, max_length: int, optional: bool = False) -> str | None:
    """``value`` is a non-empty str without NUL or a lone surrogate within ``max_length`` (or None
    when ``optional``)."""
    if value is None and optional:
        return None
    if not isinstance(value, str):
        raise CheckpointFieldError(field, f"must be a str, not {type(value).__name__}")
    if not value:
        raise CheckpointFieldError(field, "must not be empty")
    if len(value) > max_length:
        raise CheckpointFieldError(field, f"is {len(value)} characters long; the limit is {max_length}")
    if "\x00" in value:
        raise CheckpointFieldError(field, "must not contain NUL characters")
    refuse_lone_surrogate(field, value)
    return value
