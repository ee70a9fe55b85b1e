"""Records and entries to row values and back, through PydanticAI's own adapters.

Messages go through ``ModelMessagesTypeAdapter`` (one message per row, as a one-element
list), so bytes, timestamps and every part type read back as the adapter wrote them.

A lone surrogate cannot be UTF-8: pydantic refuses one in a value and silently replaces one in
a dict key (a tool call's arguments). Either is a ``CheckpointFieldError`` naming the field.

What a person said is encrypted at rest when keys are configured (:mod:`turnstate_app.encryption`,
the conversation id as the thread): each entry's message and a record's deferred tool calls
(their arguments), each row's key id in its own column. Ids, usage and branches stay clear.

Each of those two values is bound to its row by a MAC keyed from ``SECRET_KEY``
(:mod:`turnstate_app.integrity`), written with it and checked before it is decrypted or decoded:
an entry by its conversation, its id and the entry before it (what orders the history), a record
by its conversation. A value edited, planted clear or moved to another row is an unreadable
record (:class:`~turnstate_app.errors.UnreadableValueError`), never a message.
"""

from __future__ import annotations

import json
from typing import Any, Literal

from pydantic import TypeAdapter
from pydantic_ai.conversation_store import ConversationEntry, ConversationRecord
from pydantic_ai.messages import ModelMessage, ModelMessagesTypeAdapter
from pydantic_ai.tools import DeferredToolRequests
from pydantic_ai.usage import RunUsage
from pydantic_core import PydanticSerializationError

from turnstate_app.contrib._text import refuse_lone_surrogates_in
from turnstate_app.contrib.pydantic_ai.errors import UnreadableConversationError
from turnstate_app.contrib.pydantic_ai.models import (
    StoredConversation,
    StoredEntry,
)
from turnstate_app.encryption import seal_text, unseal_text
from turnstate_app.errors import UnreadableValueError
from turnstate_app.integrity import require_row, row_mac

FORMAT_VERSION: Literal[1] = 1

_usage = TypeAdapter(RunUsage)
_requests = TypeAdapter(DeferredToolRequests)
REPLACEMENT = "\ufffd".encode()


def json_of(field: str, adapter: TypeAdapter[Any], value: Any) -> str:
    """``adapter``'s JSON of ``value``; a lone surrogate anywhere in it is refused, naming ``field``."""
    try:
        data = adapter.dump_json(value)
    except PydanticSerializationError:
        refuse_lone_surrogates_in(field, adapter.dump_python(value))
        raise
    if REPLACEMENT in data:  # rare: only then look for a key pydantic replaced
        refuse_lone_surrogates_in(field, adapter.dump_python(value))
    return data.decode()


def record_values(record: ConversationRecord) -> dict[str, Any]:
    """The columns of ``StoredConversation`` for ``record`` (its id excluded)."""
    requests, key_id = None, None
    if record.deferred_tool_requests is not None:
        requests, key_id = seal_text(
            json_of("deferred_tool_requests", _requests, record.deferred_tool_requests),
            thread_id=record.conversation_id,
        )
    mac = row_mac(StoredConversation._meta.label, (record.conversation_id,), key_id, requests)
    return {
        "scope": record.scope,
        "head_id": record.head_id,
        "revision": record.revision,
        "usage": json_of("usage", _usage, record.usage),
        "deferred_tool_requests": requests,
        "encryption_key_id": key_id,
        "value_mac": mac,
        "branches": json.dumps(list(record.branches)),
        "forked_from": record.forked_from,
        "forked_at": record.forked_at,
        "format_version": record.format_version,
        "updated_at": record.updated_at,
    }


RECORD_COLUMNS = (
    "conversation_id",
    "scope",
    "head_id",
    "revision",
    "usage",
    "deferred_tool_requests",
    "encryption_key_id",
    "value_mac",
    "branches",
    "forked_from",
    "forked_at",
    "format_version",
    "updated_at",
)
"""A record's columns as :func:`record_from` reads them: its id, then :func:`record_values`'s."""


def record_from(row: tuple[Any, ...]) -> ConversationRecord:
    """A record from a row of ``RECORD_COLUMNS``."""
    values = dict(zip(RECORD_COLUMNS, row, strict=True))
    if values["format_version"] != FORMAT_VERSION:
        raise UnreadableConversationError(
            f"conversation {values['conversation_id']!r} was stored in format {values['format_version']}; "
            f"this build reads format {FORMAT_VERSION}"
        )
    conversation_id = values["conversation_id"]
    requests = stored_requests(
        conversation_id, values["deferred_tool_requests"], values["encryption_key_id"], values["value_mac"]
    )
    try:
        return ConversationRecord(
            conversation_id=values["conversation_id"],
            head_id=values["head_id"],
            usage=_usage.validate_json(values["usage"]),
            deferred_tool_requests=None if requests is None else _requests.validate_json(requests),
            scope=values["scope"],
            forked_from=values["forked_from"],
            forked_at=values["forked_at"],
            branches=list(json.loads(values["branches"])),
            revision=values["revision"],
            updated_at=values["updated_at"],
            format_version=FORMAT_VERSION,
        )
    except ValueError as exc:
        raise UnreadableConversationError(
            f"conversation {values['conversation_id']!r} cannot be read back: {exc}"
        ) from exc


def stored_requests(
    conversation_id: str, stored: str | None, key_id: str | None, mac: str | None
) -> str | None:
    """A record's deferred tool requests as written (JSON), once the row's MAC verifies."""
    require_row(StoredConversation._meta.label, (conversation_id,), key_id, stored, mac)
    return opened(stored, key_id, conversation_id)


def opened(stored: str | None, key_id: str | None, conversation_id: str) -> str | None:
    """A stored text as written; :class:`UnreadableConversationError` when its key is gone."""
    if stored is None:
        return None
    try:
        return unseal_text(stored, key_id, thread_id=conversation_id)
    except UnreadableValueError as exc:
        raise UnreadableConversationError(
            f"conversation {conversation_id!r} cannot be read back: {exc}"
        ) from None


def message_json(message: ModelMessage) -> str:
    return json_of("message", ModelMessagesTypeAdapter, [message])


def sealed_message(
    message: ModelMessage, conversation_id: str, entry_id: str, parent_id: str | None
) -> tuple[str, str | None, str]:
    """An entry's message as stored, its key id (None: clear) and the row's MAC."""
    stored, key_id = seal_text(message_json(message), thread_id=conversation_id)
    mac = row_mac(StoredEntry._meta.label, (conversation_id, entry_id, parent_id), key_id, stored)
    return stored, key_id, mac


def entry_from(
    entry_id: str,
    parent_id: str | None,
    kind: str,
    message: str,
    conversation_id: str,
    key_id: str | None,
    mac: str | None,
) -> ConversationEntry:
    """An entry from its row, once its MAC verifies; the message decrypted with its conversation's
    keys when ``key_id`` is set."""
    require_row(StoredEntry._meta.label, (conversation_id, entry_id, parent_id), key_id, message, mac)
    try:
        (decoded,) = ModelMessagesTypeAdapter.validate_json(opened(message, key_id, conversation_id) or "")
    except ValueError as exc:
        raise UnreadableConversationError(f"entry {entry_id!r} cannot be read back: {exc}") from exc
    if kind != "message":
        raise UnreadableConversationError(
            f"entry {entry_id!r} is of kind {kind!r}, which this build cannot read"
        )
    return ConversationEntry(id=entry_id, parent_id=parent_id, message=decoded, kind="message")
