"""The state a continuation starts from, bound to its pauses: the messages up to the deferred
calls, and the deferred calls themselves.

Each row of the store carries a MAC, but a row that verifies can still be the wrong one: the
history cut short (the record's head moved back to an older entry), or a record set back to an
older value of its own (an older set of deferred calls). So each pause's ``shown`` also holds
the *start* of its run: how many messages the conversation held when the pause was minted, and
the SHA-256 of those messages and the deferred calls (canonical JSON, as PydanticAI's adapters
write them). The core keeps a MAC of ``shown`` keyed from ``SECRET_KEY``, so the start cannot be
recomputed by someone who edits the store; the continuation computes it again from what it
loaded, and any difference refuses it before the agent runs.

To say *what* changed, the continuation first compares what it loaded with the transcript the
group's first pause recorded in its turn state (:func:`history_changed`); the keyed ``shown`` is
what refuses when that transcript is absent, or when only the deferred calls differ.
"""

from __future__ import annotations

from typing import Any

from pydantic import TypeAdapter
from pydantic_ai.conversation import Conversation
from pydantic_ai.messages import ModelMessagesTypeAdapter
from pydantic_ai.tools import DeferredToolRequests

from turnstate_app.pauses.shown import shown_digest

_requests = TypeAdapter(DeferredToolRequests)


def transcript(conversation: Conversation) -> list[dict[str, Any]]:
    """The conversation's messages as JSON data (what a pause's turn state records)."""
    messages: list[dict[str, Any]] = ModelMessagesTypeAdapter.dump_python(conversation.messages, mode="json")
    return messages


def start_of(messages: list[dict[str, Any]], requests: DeferredToolRequests | None) -> dict[str, Any]:
    """The start a pause records in its ``shown``: the number of messages and one digest of the
    messages and the deferred calls."""
    calls = None if requests is None else _requests.dump_python(requests, mode="json")
    return {"messages": len(messages), "digest": shown_digest([messages, calls])}


def history_changed(
    jti: str, conversation_id: str, recorded: list[dict[str, Any]], loaded: list[dict[str, Any]]
) -> str | None:
    """Why the loaded history is not the one pause ``jti`` recorded (None: it is the same)."""
    if recorded == loaded:
        return None
    where = f"pause {jti}: the stored history of conversation {conversation_id!r}"
    if len(loaded) < len(recorded):
        return (
            f"{where} holds {len(loaded)} messages, its pauses were minted on {len(recorded)}: "
            f"{len(recorded) - len(loaded)} were removed since; nothing was run"
        )
    if len(loaded) > len(recorded):
        return (
            f"{where} holds {len(loaded)} messages, its pauses were minted on {len(recorded)}: "
            f"{len(loaded) - len(recorded)} were added since; nothing was run"
        )
    for position, (was, now) in enumerate(zip(recorded, loaded, strict=True), start=1):
        if was != now:  # JSON data: dicts compare whatever their keys' order
            return (
                f"{where} changed since its pauses were minted: message {position} of {len(recorded)} "
                f"(a model {was.get('kind', 'message')}) is not the one recorded then; nothing was run"
            )
    return None
