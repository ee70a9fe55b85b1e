"""The one pair every stored value goes through: what the models hold, and what it was.

The session's items (JSON) and the run's state (``RunState.to_string()``) are written with
:func:`encode_value` and read with :func:`decode_value`, nowhere else, so the way values are
kept at rest is decided in this module alone. Items are JSON as ``SQLiteSession`` writes it
(ASCII escapes: never a NUL byte or a lone surrogate on the wire).
"""

from __future__ import annotations

import json
from typing import Any

from turnstate_app.contrib.openai_agents.errors import UnreadableSessionItemError
from turnstate_app.errors import CheckpointFieldError


def encode_value(text: str) -> str:
    """What a model stores for ``text``."""
    return text


def decode_value(stored: str) -> str:
    """The text :func:`encode_value` was given for ``stored``."""
    return stored


def encode_item(item: Any) -> str:
    """One session item as stored; ``CheckpointFieldError`` when it is not JSON."""
    try:
        return encode_value(json.dumps(item, allow_nan=False))
    except (TypeError, ValueError) as exc:
        raise CheckpointFieldError("items", f"hold a value that is not JSON ({exc})") from None


def decode_item(stored: str, *, session_id: str) -> Any:
    """The item ``stored`` holds; ``UnreadableSessionItemError`` (the row is kept) when it holds none."""
    try:
        return json.loads(decode_value(stored))
    except ValueError as exc:
        raise UnreadableSessionItemError(
            f"an item of session {session_id!r} is not readable JSON ({exc.__class__.__name__}); "
            "nothing was returned or removed"
        ) from None
