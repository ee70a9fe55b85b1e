"""What a deferred tool call asks, and which answers it accepts.

A call is an *approval* (``requires_approval=True`` or ``ApprovalRequired``), a
*question* (``CallDeferred(kind="question")``) or *external* (``CallDeferred()``): work
done outside the agent whose result is the answer. The answer schema is stored with
the pause, so a wrong answer is refused before its token is spent (PydanticAI itself
checks override arguments only when the run continues, after the token is gone).
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from pydantic_ai.tools import DeferredToolRequests, ToolApproved, ToolDenied

APPROVAL = "approval"
QUESTION = "question"
EXTERNAL = "external"
ANY_OBJECT: dict[str, Any] = {"type": "object"}
DEFAULT_DENIAL = "The tool call was denied."


@dataclass(frozen=True)
class DeferredCall:
    """One deferred tool call as a pause presents it."""

    tool_call_id: str
    tool_name: str
    args: dict[str, Any]
    kind: str
    metadata: dict[str, Any]
    parameters_json_schema: dict[str, Any] | None

    def request(self, conversation_id: str) -> dict[str, Any]:
        """The pause's request: what the person is asked, and what they may answer."""
        return {
            "conversation_id": conversation_id,
            "tool_call_id": self.tool_call_id,
            "tool_name": self.tool_name,
            "args": self.args,
            "kind": self.kind,
            "metadata": self.metadata,
            "parameters_json_schema": self.parameters_json_schema,
        }

    def answer_schema(self) -> dict[str, Any]:
        return answer_schema(self.kind, self.parameters_json_schema)

    def shown(self, start: dict[str, Any]) -> dict[str, Any]:
        """What the person is shown, as its digest binds the answer (:func:`shown_call`)."""
        return shown_call(self.tool_name, self.args, start)


def shown_call(tool_name: str, args: dict[str, Any], start: dict[str, Any]) -> dict[str, Any]:
    """What a pause's digest binds of a deferred call, as at mint so before the run continues:
    the tool's name and its arguments, and the state the run starts from
    (:func:`~turnstate_app.contrib.pydantic_ai.start.start_of`). The run executes the call as the
    conversation's last response holds it, so that is where the check reads it again."""
    return {"tool_name": tool_name, "args": args, "start": start}


def deferred_calls(
    requests: DeferredToolRequests, schemas: Mapping[str, dict[str, Any]]
) -> list[DeferredCall]:
    """Every call of ``requests`` in a stable order: approvals first, then the other calls."""
    return [
        DeferredCall(
            tool_call_id=part.tool_call_id,
            tool_name=part.tool_name,
            args=part.args_as_dict(),
            kind=requests.kind(part.tool_call_id),
            metadata=dict(requests.metadata.get(part.tool_call_id, {})),
            parameters_json_schema=schemas.get(part.tool_name),
        )
        for part in [*requests.approvals, *requests.calls]
    ]


def tool_schemas(agent: Any) -> dict[str, dict[str, Any]]:
    """The parameter JSON Schema of each function tool ``agent`` has (empty without an agent)."""
    if agent is None:
        return {}
    schemas: dict[str, dict[str, Any]] = {}
    for toolset in _toolsets(agent):
        for name, tool in getattr(toolset, "tools", {}).items():
            tool_def = getattr(tool, "tool_def", None)
            if tool_def is not None:
                schemas.setdefault(name, dict(tool_def.parameters_json_schema))
    return schemas


def _toolsets(agent: Any) -> Iterable[Any]:
    pending = list(getattr(agent, "toolsets", []))
    while pending:
        toolset = pending.pop(0)
        yield toolset
        # Wrappers (prefixed, filtered) and combinations hold the toolsets with the tools.
        inner = getattr(toolset, "wrapped", None)
        if inner is not None:
            pending.append(inner)
        pending.extend(getattr(toolset, "toolsets", []))


def answer_schema(kind: str, parameters: dict[str, Any] | None) -> dict[str, Any]:
    """The JSON Schema an answer must meet.

    Approval: ``{"approved": true}`` with optional ``override_args`` (the tool's parameters),
    or ``{"approved": false}`` with an optional ``message`` for the model. A question's or an
    external call's answer: any JSON (it becomes the tool's result).
    """
    if kind != APPROVAL:
        return {}
    arguments = copy.deepcopy(parameters) if parameters else dict(ANY_OBJECT)
    definitions = arguments.pop("$defs", None)  # refs say "#/$defs/...": they must sit at the root
    schema: dict[str, Any] = {
        "oneOf": [
            {
                "type": "object",
                "properties": {"approved": {"const": True}, "override_args": arguments},
                "required": ["approved"],
                "additionalProperties": False,
            },
            {
                "type": "object",
                "properties": {"approved": {"const": False}, "message": {"type": "string"}},
                "required": ["approved"],
                "additionalProperties": False,
            },
        ]
    }
    if definitions:
        schema["$defs"] = definitions
    return schema


def approval_result(answer: Any) -> ToolApproved | ToolDenied:
    """The answer to an approval as PydanticAI takes it (the answer met its schema at resume)."""
    if not isinstance(answer, dict) or not isinstance(answer.get("approved"), bool):
        raise ValueError(f"an approval is {{'approved': true|false, ...}}, not {answer!r}")
    if answer["approved"]:
        return ToolApproved(override_args=answer.get("override_args"))
    return ToolDenied(message=answer.get("message") or DEFAULT_DENIAL)
