"""The store's rows as someone with the database (and, for the app's own writes, its key) edits them."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from turnstate_app.contrib.pydantic_ai.models import ENTRY_IDENTITY, StoredEntry
from turnstate_app.encryption import unseal_text
from turnstate_app.integrity import row_mac

Args = dict[str, Any]


def calling_entry(conversation_id: str, call_id: str) -> StoredEntry:
    """The stored entry whose response makes ``call_id``."""
    for entry in StoredEntry.objects.filter(conversation_id=conversation_id):
        if any(call.get("tool_call_id") == call_id for call in tool_calls(message_of(entry))):
            return entry
    raise AssertionError(f"no stored response makes call {call_id!r}")


def message_of(entry: StoredEntry) -> list[dict[str, Any]]:
    """An entry's message as JSON data, decrypted when it is sealed."""
    text = unseal_text(entry.message, entry.encryption_key_id, thread_id=entry.conversation_id)
    value: list[dict[str, Any]] = json.loads(text)
    return value


def tool_calls(message: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [p for m in message for p in m.get("parts", []) if p.get("part_kind") == "tool-call"]


def edited_call(entry: StoredEntry, call_id: str, change: Callable[[Args], Args]) -> str:
    """``entry``'s message, clear, with ``call_id``'s arguments changed."""
    message = message_of(entry)
    for part in tool_calls(message):
        if part.get("tool_call_id") == call_id:
            args = part["args"] if isinstance(part["args"], dict) else json.loads(part["args"])
            part["args"] = change(args)
    return json.dumps(message)


def entry_mac(entry: StoredEntry, key_id: str | None, message: str) -> str:
    """The MAC the store writes beside ``message`` at ``entry``'s place (under the current SECRET_KEY)."""
    identity = [getattr(entry, column) for column in ENTRY_IDENTITY]
    return row_mac(StoredEntry._meta.label, identity, key_id, message)


def rewrite_entry(entry: StoredEntry, message: str, *, mac: str | None) -> None:
    """``entry``'s message rewritten clear (key id NULL) with ``mac`` beside it: one ``UPDATE``
    through the ORM, behind the store's API."""
    updated = StoredEntry.objects.filter(pk=entry.pk).update(
        message=message, encryption_key_id=None, value_mac=mac
    )
    assert updated == 1
