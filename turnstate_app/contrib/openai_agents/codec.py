"""The one pair every stored value goes through: what the models hold, and what it was.

The session's items (JSON) and the run's state (``RunState.to_string()``) are written with
:func:`encode_item` / :func:`encode_state` and read with :func:`decode_item` / :func:`decode_state`,
nowhere else, so the way values are kept at rest is decided in this module alone. Items are JSON as
``SQLiteSession`` writes it (ASCII escapes: never a NUL byte or a lone surrogate on the wire).

With keys configured (:mod:`turnstate_app.encryption`) each value is encrypted at rest with the
keys of its thread: a session item's session id, a run state's ``thread_id`` (the session id
when the run used one, else the run id: the thread its pauses are minted on). The key id is
stored beside the value, in the row's ``encryption_key_id``, in the same statement. Ids stay
clear. A value whose key is gone, or that fails authentication, is refused with the contrib's
unreadable error, which names the thread and the key id, never the value.

Sealed or clear, each value is bound to its row by a MAC keyed from ``SECRET_KEY``
(:mod:`turnstate_app.integrity`), written in the same statement and checked before the value is
decrypted or decoded, so someone who can write the database but holds no key cannot edit a value,
plant a clear one or move one to another row: the row reads as unreadable. A run state is named by
its run, its thread and its revision, so an older state put back under the revision its pauses
were minted at never verifies (:data:`STATE_IDENTITY`). An item is named by its session only: its
position is the id the ``INSERT`` gives it, known only after the statement that must carry the MAC
(a position chosen before it would cost each append a read of the session's last one). So a
writer without the key can still reorder, repeat or remove a session's own items, never edit one,
plant one or move one into another session; a continuation starts from its run's state, which is
bound to its pauses whole.
"""

from __future__ import annotations

import json
from typing import Any

from turnstate_app.contrib.openai_agents.errors import UnreadableRunStateError, UnreadableSessionItemError
from turnstate_app.contrib.openai_agents.models import StoredRunState, StoredSessionItem
from turnstate_app.encryption import seal_text, unseal_text
from turnstate_app.errors import CheckpointFieldError, UnreadableValueError
from turnstate_app.integrity import require_row, row_mac

STATE_IDENTITY = ("run_id", "thread_id", "revision")
"""The columns that name a run state in its MAC; the revision changes on every write."""
ITEM_IDENTITY = ("session_id",)
"""The columns that name a session item in its MAC."""


def encode_value(text: str, *, thread_id: str) -> tuple[str, str | None]:
    """What a model stores for ``text`` of ``thread_id``, and its key id (None: stored clear)."""
    return seal_text(text, thread_id=thread_id)


def decode_value(stored: str, key_id: str | None, *, thread_id: str) -> str:
    """The text :func:`encode_value` was given for ``stored``; ``UnreadableValueError`` when it cannot."""
    return unseal_text(stored, key_id, thread_id=thread_id)


def item_mac(session_id: str, key_id: str | None, stored: str) -> str:
    return row_mac(StoredSessionItem._meta.label, (session_id,), key_id, stored)


def state_mac(run_id: str, thread_id: str, revision: str, key_id: str | None, stored: str) -> str:
    return row_mac(StoredRunState._meta.label, (run_id, thread_id, revision), key_id, stored)


def item_text(stored: str, key_id: str | None, mac: str | None, *, session_id: str) -> str:
    """The text of a stored item once its MAC verifies; ``UnreadableValueError`` otherwise."""
    require_row(StoredSessionItem._meta.label, (session_id,), key_id, stored, mac)
    return decode_value(stored, key_id, thread_id=session_id)


def state_text(
    stored: str, key_id: str | None, mac: str | None, *, run_id: str, thread_id: str, revision: str
) -> str:
    """The text of a stored run state once its MAC verifies; ``UnreadableValueError`` otherwise."""
    require_row(StoredRunState._meta.label, (run_id, thread_id, revision), key_id, stored, mac)
    return decode_value(stored, key_id, thread_id=thread_id)


def encode_item(item: Any, *, session_id: str) -> tuple[str, str | None, str]:
    """One session item as stored, its key id and its MAC; ``CheckpointFieldError`` when it is not JSON."""
    try:
        text = json.dumps(item, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise CheckpointFieldError("items", f"hold a value that is not JSON ({exc})") from None
    stored, key_id = encode_value(text, thread_id=session_id)
    return stored, key_id, item_mac(session_id, key_id, stored)


def decode_item(stored: str, key_id: str | None, mac: str | None, *, session_id: str) -> Any:
    """The item ``stored`` holds; ``UnreadableSessionItemError`` (the row is kept) when it holds none."""
    try:
        text = item_text(stored, key_id, mac, session_id=session_id)
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


def encode_state(text: str, *, run_id: str, thread_id: str, revision: str) -> tuple[str, str | None, str]:
    """A run's state as stored at ``revision``, its key id and its MAC."""
    stored, key_id = encode_value(text, thread_id=thread_id)
    return stored, key_id, state_mac(run_id, thread_id, revision, key_id, stored)


def decode_state(
    stored: str, key_id: str | None, mac: str | None, *, run_id: str, thread_id: str, revision: str
) -> str:
    """A run's state as written; ``UnreadableRunStateError`` when its MAC fails, its key is gone or it
    was altered."""
    try:
        return state_text(stored, key_id, mac, run_id=run_id, thread_id=thread_id, revision=revision)
    except UnreadableValueError as exc:
        raise UnreadableRunStateError(f"the stored state of run {run_id!r} cannot be read: {exc}") from None
