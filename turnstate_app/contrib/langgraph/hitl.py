"""LangChain's ``HumanInTheLoopMiddleware`` (``create_agent``): its batched review as one checked pause.

In ``per_call`` mode (the one LangChain's docs recommend) each gated tool call interrupts on
its own with a ``tool_call_id`` and a typed ``response_schema``: it pauses like any other
interrupt, one pause per tool call, its answer checked against that schema.

In ``batched`` mode (the middleware's default) one interrupt asks about every gated call of
a model turn, ``{"action_requests": [...], "review_configs": [...]}``, with no
``response_schema``, and is answered ``{"decisions": [...]}`` by position. LangChain checks
only the count, and only when the run continues: a wrong answer would then fail the
continuation. So the pause gets a JSON Schema built from the request: exactly one decision
per action, each of a type its action's review config allows, refused before the token is
spent. The middleware is not imported: the request is recognised by its shape.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

ACTION = {
    "type": "object",
    "properties": {"name": {"type": "string"}, "args": {"type": "object"}},
    "required": ["name", "args"],
}
DECISIONS: dict[str, dict[str, Any]] = {
    "approve": {"properties": {"type": {"const": "approve"}}, "required": ["type"]},
    "edit": {
        "properties": {"type": {"const": "edit"}, "edited_action": ACTION},
        "required": ["type", "edited_action"],
    },
    "reject": {
        "properties": {"type": {"const": "reject"}, "message": {"type": "string"}},
        "required": ["type"],
    },
    "respond": {
        "properties": {"type": {"const": "respond"}, "message": {"type": "string"}},
        "required": ["type", "message"],
    },
}


def is_batched_review(value: Any) -> bool:
    """Whether ``value`` is the middleware's batched ``HITLRequest``."""
    return (
        isinstance(value, dict)
        and isinstance(value.get("action_requests"), list)
        and isinstance(value.get("review_configs"), list)
        and all(isinstance(a, dict) and isinstance(a.get("name"), str) for a in value["action_requests"])
    )


def batched_answer_schema(value: dict[str, Any]) -> dict[str, Any]:
    """``{"decisions": [...]}``: one per action, in order, each of a type its review config allows."""
    allowed = {
        config.get("action_name"): [d for d in config.get("allowed_decisions", []) if d in DECISIONS]
        for config in value["review_configs"]
        if isinstance(config, dict)
    }
    per_action = [
        {
            "anyOf": [
                {"type": "object", **DECISIONS[d]} for d in allowed.get(action["name"]) or list(DECISIONS)
            ]
        }
        for action in value["action_requests"]
    ]
    count = len(per_action)
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "properties": {
            "decisions": {
                "type": "array",
                "prefixItems": per_action,
                "items": False,
                "minItems": count,
                "maxItems": count,
            }
        },
        "required": ["decisions"],
    }


def as_reasked(value: dict[str, Any], values: Any) -> dict[str, Any]:
    """The batched review as the middleware asks it again when the run continues.

    The middleware re-runs and rebuilds its actions from the tool calls of the state's last AI
    message, and runs those calls: so each action's ``args`` are taken from there (the gated
    calls in order, matched by name), not from the stored interrupt. An edited message then
    reads as a changed question. An action with no such call gets ``args: None``.
    """
    calls = _last_tool_calls(values)
    actions: list[Any] = []
    start = 0
    for action in value["action_requests"]:
        found = next((i for i in range(start, len(calls)) if calls[i].get("name") == action["name"]), None)
        if found is None:
            actions.append({**action, "args": None})
            continue
        start = found + 1
        actions.append({**action, "args": calls[found].get("args")})
    return {**value, "action_requests": actions}


def _last_tool_calls(values: Any) -> list[dict[str, Any]]:
    """The tool calls of the last AI message in the state's ``messages`` (as the middleware finds it)."""
    messages = values.get("messages") if isinstance(values, Mapping) else getattr(values, "messages", None)
    if not isinstance(messages, list):
        return []
    for message in reversed(messages):
        if getattr(message, "type", None) == "ai":
            calls = getattr(message, "tool_calls", None) or []
            return [call for call in calls if isinstance(call, dict)]
    return []
