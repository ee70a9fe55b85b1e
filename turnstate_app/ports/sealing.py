"""The store's value codec: which rows are encrypted at rest, the calls that do it, and each
row's MAC (:mod:`turnstate_app.integrity`).

A pause's request, turn state and answer hold what a person said and was asked; they are
sealed with :mod:`turnstate_app.encryption`. The store's other rows (claims, a thread's
turn, heartbeats) hold ids and times, are compared by value, and stay clear. Every row, sealed
or clear, is written with the MAC of its place, key id and stored value, and read only once
that MAC verifies: someone who can write the database but holds no key cannot make the app
read a value it did not write there.
"""

from __future__ import annotations

from turnstate_app.encryption import seal_text, unseal_text
from turnstate_app.integrity import require_row, row_mac
from turnstate_app.keys import ANSWER_KEY_PREFIX, REQUEST_KEY_PREFIXES, TURN_STATE_KEY_PREFIX

SEALED_KEY_PREFIXES = (*REQUEST_KEY_PREFIXES, TURN_STATE_KEY_PREFIX, ANSWER_KEY_PREFIX)

STORE_TABLE = "turnstate_app.CheckpointMetadata"
"""The store's name in its rows' MACs: the model's label (``CheckpointMetadata._meta.label``)."""


def stored_value(thread_id: str, key: str, value: str) -> tuple[str, str | None]:
    """The value as written under ``key``, and its key id (None: clear)."""
    if not key.startswith(SEALED_KEY_PREFIXES):
        return value, None
    return seal_text(value, thread_id=thread_id)


def stored_row(thread_id: str, checkpoint_id: str, key: str, value: str) -> tuple[str, str | None, str]:
    """The value as written at ``(thread_id, checkpoint_id, key)``, its key id, and its MAC."""
    stored, key_id = stored_value(thread_id, key, value)
    return stored, key_id, value_mac(thread_id, checkpoint_id, key, stored, key_id)


def value_mac(thread_id: str, checkpoint_id: str, key: str, stored: str, key_id: str | None) -> str:
    """The MAC a store row at this place keeps beside ``stored`` (the value as stored)."""
    return row_mac(STORE_TABLE, (thread_id, checkpoint_id, key), key_id, stored)


def read_row(
    thread_id: str, checkpoint_id: str, key: str, stored: str, key_id: str | None, mac: str | None
) -> str:
    """A stored value as written, its MAC verified before anything of it is decrypted or used.

    :class:`~turnstate_app.errors.UnreadableValueError` when the MAC is missing or does not
    verify, or when the value's key is gone."""
    require_row(STORE_TABLE, (thread_id, checkpoint_id, key), key_id, stored, mac)
    return unseal_text(stored, key_id, thread_id=thread_id)
