"""The one pair every stored value goes through: what the models hold, and what it was.

The session's items (JSON) and the run's state (``RunState.to_string()``) are written with
:func:`encode_value` and read with :func:`decode_value`, nowhere else, so the way values are
kept at rest is decided in this module alone. Items are JSON as ``SQLiteSession`` writes it
(ASCII escapes: never a NUL byte or a lone surrogate on the wire).

With keys configured (:mod:`turnstate_app.encryption`) each value is encrypted at rest with the
keys of its thread: a session item's session id, a run state's ``thread_id`` (the session id
when the run used one, else the run id: the thread its pauses are minted on). The key id is
stored beside the value, in the row's ``encryption_key_id``, in the same statement. Ids stay
clear. A value whose key is gone, or that fails authentication, is refused with the contrib's
unreadable error, which names the thread and the key id, never the value.
"""

from __future__ import annotations

import json
from typing import Any

from turnstate_app.contrib.openai_agents.errors import UnreadableRunStateError, UnreadableSessionItemError
from turnstate_app.encryption import seal_text, unseal_text
from turnstate_app.errors import CheckpointFieldError, UnreadableValueError


def encode_value(text: str, *, thread_id: str) -> tuple[str, str | None]:
    """What a model stores for ``text`` of ``thread_id``, and its key id (None: stored clear)."""
    return seal_text(text, thread_id=thread_id)


def decode_value(stored: str, key_id: str | None, *, thread_id: str) -> str:
    """The text :func:`encode_value` was given for ``stored``; ``UnreadableValueError`` when it cannot."""
    return unseal_text(stored, key_id, thread_id=thread_id)


def encode_item(item: Any, *, session_id: str) -> tuple[str, str | None]:
    """One session item as stored, and its key id; ``CheckpointFieldError`` when it is not JSON."""
    try:
        text = json.dumps(item, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise CheckpointFieldError("items", f"hold a value that is not JSON ({exc})") from None
    return encode_value(text, thread_id=session_id)


def decode_item(stored: str, key_id: str | None, *, session_id: str) -> Any:
    """The item ``stored`` holds; ``UnreadableSessionItemError`` (the row is kept) when it holds none."""
    try:
        text = decode_value(stored, key_id, thread_id=session_id)
    except UnreadableValueError as exc:
        raise UnreadableSessionItemError(
            f"an item of session {session_id!r} cannot be read: {exc}; nothing was returned or removed"
        ) from None
    try:
        return json.loads(text)
    except ValueError as exc:
        raise UnreadableSessionItemError(
            f"an item of session {session_id!r} is not readable JSON ({exc.__class__.__name__}); "
            "nothing was returned or removed"
        ) from None


def encode_state(text: str, *, thread_id: str) -> tuple[str, str | None]:
    """A run's state as stored, and its key id."""
    return encode_value(text, thread_id=thread_id)


def decode_state(stored: str, key_id: str | None, *, run_id: str, thread_id: str) -> str:
    """A run's state as written; ``UnreadableRunStateError`` when its key is gone or it was altered."""
    try:
        return decode_value(stored, key_id, thread_id=thread_id)
    except UnreadableValueError as exc:
        raise UnreadableRunStateError(f"the stored state of run {run_id!r} cannot be read: {exc}") from None
