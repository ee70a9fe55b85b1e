"""What a pending tool approval asks, and which answers it takes.

The request shows the tool, the call id and the arguments the model gave (parsed from the
call's JSON string). What the person is shown (tool, call id, arguments) is the pause's
``shown``: its digest binds the answer to exactly that, and the continuation reads it again
from the stored state before anything runs.

The answer is the approval shape of the PydanticAI bridge: ``{"approved": true}``, or
``{"approved": false}`` with an optional ``message`` (what the model is told). The SDK runs
an approved call with the arguments the model gave (0.24 has no way to change them, and it
refuses a state whose arguments were edited), so ``override_args`` is not offered: an answer
carrying them is refused by the pause's ``answer_schema`` before its token is spent.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from turnstate_app.errors import ContinuationRefused

ANSWER_SCHEMA: dict[str, Any] = {
    "oneOf": [
        {
            "type": "object",
            "properties": {"approved": {"const": True}},
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


@dataclass(frozen=True)
class Approval:
    """One pending approval (a ``ToolApprovalItem``) as a pause presents it."""

    call_id: str
    tool_name: str
    arguments: Any
    agent: str | None

    def request(self, run_id: str) -> dict[str, Any]:
        """The pause's request: what the person is asked."""
        return {
            "run_id": run_id,
            "call_id": self.call_id,
            "tool_name": self.tool_name,
            "arguments": self.arguments,
            "agent": self.agent,
        }

    def shown(self) -> dict[str, Any]:
        """What the answer binds to: the tool, the call and its arguments."""
        return {"tool_name": self.tool_name, "call_id": self.call_id, "arguments": self.arguments}


def _field(raw: Any, name: str) -> Any:
    return raw.get(name) if isinstance(raw, dict) else getattr(raw, name, None)


def approval_of(item: Any) -> Approval:
    """The :class:`Approval` of one ``ToolApprovalItem``."""
    raw = item.raw_item
    call_id = _field(raw, "call_id") or _field(raw, "id")
    if not isinstance(call_id, str) or not call_id:
        raise ValueError(
            f"an interruption of tool {item.tool_name!r} carries no call id; it cannot be paused"
        )
    arguments = _field(raw, "arguments")
    if isinstance(arguments, str):
        with contextlib.suppress(ValueError):  # else shown as the model gave it
            arguments = json.loads(arguments)
    agent = getattr(getattr(item, "agent", None), "name", None)
    tool_name = getattr(item, "tool_name", None) or _field(raw, "name") or "tool"
    return Approval(call_id=call_id, tool_name=str(tool_name), arguments=arguments, agent=agent)


def approvals_of(items: Iterable[Any]) -> list[Approval]:
    """Every pending approval, in the SDK's order; one call id appearing twice is refused."""
    approvals = [approval_of(item) for item in items]
    ids = [approval.call_id for approval in approvals]
    if len(set(ids)) != len(ids):
        raise ValueError(
            f"the run's interruptions repeat a call id ({sorted(ids)}); they cannot be told apart"
        )
    return approvals


def decision(answer: Any) -> tuple[bool, str | None]:
    """``(approved, message)`` of an answer (it met :data:`ANSWER_SCHEMA` at resume)."""
    if not isinstance(answer, dict) or not isinstance(answer.get("approved"), bool):
        raise ContinuationRefused(f"an approval is {{'approved': true|false, ...}}, not {answer!r}")
    message = answer.get("message")
    return answer["approved"], message if isinstance(message, str) and message else None
