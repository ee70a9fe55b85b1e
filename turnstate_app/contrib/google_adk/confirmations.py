"""What a pending ADK tool confirmation asks, and which answers it takes.

ADK pauses a call to a tool gated with ``require_confirmation`` (or a tool that called
``tool_context.request_confirmation(hint=..., payload=...)``) by adding an
``adk_request_confirmation`` function call to the invocation's events. Its arguments carry the
original call (tool, call id, arguments) and the ``ToolConfirmation`` (hint, payload). The
invocation goes on when a user event answers that call with ``{"confirmed": ..., "payload": ...}``.

The answer is ``{"confirmed": true|false}``; when the tool asked for structured data it is
``{"confirmed": true, "payload": ...}``. ``ToolConfirmation.payload`` carries no schema, only an
example of the data the tool wants, so the payload's schema is derived from that example's shape
(:func:`payload_schema`) and checked when the person answers, before the token is spent.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

REQUEST_CONFIRMATION = "adk_request_confirmation"
"""The name of the function call ADK adds for each call that waits on a person."""


def payload_schema(shape: Any) -> dict[str, Any]:
    """A JSON Schema for data shaped like ``shape``: the same keys (all of them, no others), each
    value of the same JSON type, arrays of items shaped like their first."""
    if isinstance(shape, Mapping):
        return {
            "type": "object",
            "properties": {str(key): payload_schema(value) for key, value in shape.items()},
            "required": sorted(str(key) for key in shape),
            "additionalProperties": False,
        }
    if isinstance(shape, list | tuple):
        return {"type": "array", "items": payload_schema(shape[0])} if shape else {"type": "array"}
    if shape is None:
        return {"type": "null"}
    for kind, name in ((bool, "boolean"), (int, "integer"), (float, "number"), (str, "string")):
        if isinstance(shape, kind):  # bool first: it is an int to Python, never to JSON
            return {"type": name}
    raise ValueError(f"a confirmation payload is JSON; {type(shape).__name__} has no JSON type")


def answer_schema(payload_shape: Any) -> dict[str, Any]:
    """The answer a confirmation takes: ``{"confirmed": bool}``, and when the tool asked for data
    (``payload_shape`` is not None), a confirmation carries that data as ``payload``."""
    if payload_shape is None:
        return {
            "type": "object",
            "properties": {"confirmed": {"type": "boolean"}},
            "required": ["confirmed"],
            "additionalProperties": False,
        }
    return {
        "oneOf": [
            {
                "type": "object",
                "properties": {"confirmed": {"const": True}, "payload": payload_schema(payload_shape)},
                "required": ["confirmed", "payload"],
                "additionalProperties": False,
            },
            {
                "type": "object",
                "properties": {"confirmed": {"const": False}},
                "required": ["confirmed"],
                "additionalProperties": False,
            },
        ]
    }


@dataclass(frozen=True)
class Confirmation:
    """One ``adk_request_confirmation`` call, as a pause presents it.

    ``confirmation_id``: the id the answer goes back to. ``call_id``, ``tool_name`` and
    ``arguments``: the tool call it holds back. ``event_id``: the event that asked.
    """

    confirmation_id: str
    call_id: str
    tool_name: str
    arguments: dict[str, Any]
    hint: str
    payload: Any
    event_id: str
    author: str | None

    def request(self, invocation_id: str) -> dict[str, Any]:
        """The pause's request: what the person is asked."""
        return {
            "invocation_id": invocation_id,
            "confirmation_id": self.confirmation_id,
            "call_id": self.call_id,
            "tool_name": self.tool_name,
            "arguments": self.arguments,
            "hint": self.hint,
            "payload": self.payload,
            "agent": self.author,
        }

    def shown(self, address: Mapping[str, str]) -> dict[str, Any]:
        """What the answer binds to: the session and invocation, the tool, its call and arguments,
        and what the tool asked (hint, payload)."""
        return {
            **address,
            "confirmation_id": self.confirmation_id,
            "call_id": self.call_id,
            "tool_name": self.tool_name,
            "arguments": self.arguments,
            "hint": self.hint,
            "payload": self.payload,
        }

    def response(self, answer: Any) -> dict[str, Any]:
        """The function response that gives ``answer`` (it met the pause's schema) back to ADK."""
        if not isinstance(answer, dict) or not isinstance(answer.get("confirmed"), bool):
            raise ValueError(f"a confirmation is {{'confirmed': true|false, ...}}, not {answer!r}")
        if answer["confirmed"] and "payload" in answer:
            return {"confirmed": True, "payload": answer["payload"]}
        return {"confirmed": answer["confirmed"]}


def confirmation_of(call: Any, event: Any) -> Confirmation | None:
    """The :class:`Confirmation` of one function call of ``event``; None when it is not one."""
    if getattr(call, "name", None) != REQUEST_CONFIRMATION:
        return None
    args = call.args or {}
    original = args.get("originalFunctionCall")
    asked = args.get("toolConfirmation") or {}
    if not isinstance(call.id, str) or not call.id or not isinstance(original, dict):
        raise ValueError(f"an {REQUEST_CONFIRMATION} call of event {event.id!r} names no call to confirm")
    call_id, tool_name = original.get("id"), original.get("name")
    if not isinstance(call_id, str) or not call_id or not isinstance(tool_name, str) or not tool_name:
        raise ValueError(f"confirmation {call.id!r} names no tool call id or tool; it cannot be paused")
    return Confirmation(
        confirmation_id=call.id,
        call_id=call_id,
        tool_name=tool_name,
        arguments=dict(original.get("args") or {}),
        hint=str(asked.get("hint") or ""),
        payload=asked.get("payload"),
        event_id=str(event.id),
        author=event.author,
    )


def answered_ids(events: Iterable[Any]) -> set[str]:
    """The ids of the confirmations a user event of ``events`` answered already."""
    return {
        response.id
        for event in events
        if event.author == "user"
        for response in event.get_function_responses()
        if response.name == REQUEST_CONFIRMATION and response.id
    }


def pending_confirmations(events: Iterable[Any], invocation_id: str) -> list[Confirmation]:
    """Every confirmation the invocation ``invocation_id`` asked in ``events`` and nobody answered
    yet, in the events' order; a tool call id waiting twice is refused (its pauses could not be told
    apart)."""
    events = list(events)
    answered = answered_ids(events)
    found = [
        confirmation
        for event in events
        if event.invocation_id == invocation_id and event.author != "user"
        for call in event.get_function_calls()
        if (confirmation := confirmation_of(call, event)) is not None
        and confirmation.confirmation_id not in answered
    ]
    ids = [confirmation.call_id for confirmation in found]
    if len(set(ids)) != len(ids):
        raise ValueError(f"invocation {invocation_id!r} waits twice on one tool call ({sorted(ids)})")
    return found
