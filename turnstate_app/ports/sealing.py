"""The store's value codec: which rows are encrypted at rest, and the calls that do it.

A pause's request, turn state and answer hold what a person said and was asked; they are
sealed with :mod:`turnstate_app.encryption`. The store's other rows (claims, a thread's
turn, heartbeats) hold ids and times, are compared by value, and stay clear.
"""

from __future__ import annotations

from turnstate_app.encryption import seal_text, unseal_text
from turnstate_app.keys import ANSWER_KEY_PREFIX, REQUEST_KEY_PREFIXES, TURN_STATE_KEY_PREFIX

SEALED_KEY_PREFIXES = (*REQUEST_KEY_PREFIXES, TURN_STATE_KEY_PREFIX, ANSWER_KEY_PREFIX)


def stored_value(thread_id: str, key: str, value: str) -> tuple[str, str | None]:
    """The value as written under ``key``, and its key id (None: clear)."""
    if not key.startswith(SEALED_KEY_PREFIXES):
        return value, None
    return seal_text(value, thread_id=thread_id)


def read_value(thread_id: str, stored: str, key_id: str | None) -> str:
    """A stored value as written; :class:`~turnstate_app.errors.UnreadableValueError` when its key is gone."""
    return unseal_text(stored, key_id, thread_id=thread_id)
