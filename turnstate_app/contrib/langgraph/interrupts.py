"""What a pause holds of a LangGraph interrupt: read from the thread's head, as JSON.

Everything here reads; nothing writes. The pause stores the interrupt's value as its
request (JSON, refused with a clear error before anything is written when it is not),
LangGraph's interrupt id, a ``tool_call_id`` when the value carries one, the answer's
JSON Schema from ``response_schema``, what the person is shown (:func:`shown_of`, its
digest checked again before the run continues), and a projection of the graph's messages
for display. The saver keeps the real state; the projection is what a person is shown.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from turnstate_app.contrib.langgraph.hitl import as_reasked, batched_answer_schema, is_batched_review
from turnstate_app.errors import TurnStateError

if TYPE_CHECKING:  # a type only: the orphans command loads this module without LangGraph
    from langchain_core.runnables import RunnableConfig

PROMPT_KEYS = ("question", "prompt", "description", "message", "text")


class InterruptValueError(TurnStateError, TypeError):
    """An interrupt's value (or schema) cannot be stored as JSON, so it cannot become a pause."""


@dataclass(frozen=True)
class PendingInterrupt:
    """One interrupt waiting at a thread's head, in the shape a pause records it."""

    interrupt_id: str
    request: dict[str, Any]
    prompt: str
    tool_call_id: str | None
    answer_schema: dict[str, Any] | None
    name: str | None
    shown: Any


def head_config(config: RunnableConfig) -> RunnableConfig:
    """The thread's head: the same thread and namespace, never a given checkpoint (that would fork)."""
    configurable = dict((config or {}).get("configurable") or {})
    thread_id = configurable.get("thread_id")
    if not isinstance(thread_id, str) or not thread_id:
        raise ValueError("the config names no thread: pass {'configurable': {'thread_id': ...}}")
    head: dict[str, Any] = {"thread_id": thread_id}
    if configurable.get("checkpoint_ns"):
        head["checkpoint_ns"] = configurable["checkpoint_ns"]
    return {"configurable": head}


def thread_of(config: RunnableConfig) -> str:
    return str(head_config(config)["configurable"]["thread_id"])


SCOPE_PREFIX = "langgraph:"


def scope_of(graph: Any) -> str:
    """The pause's scope: ``langgraph:`` and which graph asked (its name, hashed to a fixed width).

    The prefix is how operators' lists tell LangGraph's pauses from any other.
    """
    name = str(getattr(graph, "name", None) or "LangGraph")
    return SCOPE_PREFIX + hashlib.sha256(name.encode()).hexdigest()[:32]


def pending_ids(snapshot: Any) -> set[str]:
    return {interrupt.id for interrupt in snapshot.interrupts}


def pending_interrupts(snapshot: Any) -> list[PendingInterrupt]:
    """Every interrupt pending at ``snapshot``, each checked to be storable before any is minted."""
    names = {interrupt.id: task.name for task in snapshot.tasks for interrupt in task.interrupts}
    values = snapshot.values
    return [_pending(interrupt, names.get(interrupt.id), values) for interrupt in snapshot.interrupts]


def shown_of(value: Any, values: Any) -> Any:
    """What the person is shown for an interrupt of ``value`` in a state of ``values``: the value, and
    for the middleware's batched review the tool calls it will run (:func:`~.hitl.as_reasked`).
    Computed so at mint and again before the run continues; the two digests must agree."""
    return as_reasked(value, values) if is_batched_review(value) else value


def _pending(interrupt: Any, name: str | None, values: Any) -> PendingInterrupt:
    value = interrupt.value
    as_json = json_value(value, what=f"the value of interrupt {interrupt.id!r} (node {name!r})")
    request = as_json if isinstance(as_json, dict) else {"value": as_json}
    tool_call_id = as_json.get("tool_call_id") if isinstance(as_json, dict) else None
    answer_schema = answer_schema_of(getattr(interrupt, "response_schema", None), interrupt.id)
    if answer_schema is None and is_batched_review(as_json):
        answer_schema = batched_answer_schema(as_json)
    return PendingInterrupt(
        interrupt_id=interrupt.id,
        request=request,
        prompt=prompt_of(as_json),
        tool_call_id=tool_call_id if isinstance(tool_call_id, str) and tool_call_id else None,
        answer_schema=answer_schema,
        name=name,
        shown=shown_of(as_json, values),
    )


def json_value(value: Any, *, what: str) -> Any:
    """``value`` as plain JSON data, or :class:`InterruptValueError` saying why it is not."""
    try:
        return json.loads(json.dumps(value, ensure_ascii=False, allow_nan=False))
    except (TypeError, ValueError) as exc:
        raise InterruptValueError(
            f"{what} is not JSON-representable ({exc}); interrupt with plain JSON data "
            "(dicts, lists, strings, numbers, booleans, None) so it can be stored and shown"
        ) from None


def answer_schema_of(schema: Any, interrupt_id: str) -> dict[str, Any] | None:
    """The JSON Schema answers are validated against before a pause is consumed.

    A type (pydantic model, TypedDict, dataclass) becomes its ``TypeAdapter`` schema; a
    dict is a JSON Schema already and is stored as given (LangGraph never validates it,
    so this is then the only check an answer meets).
    """
    if schema is None:
        return None
    if isinstance(schema, Mapping):
        result = json_value(dict(schema), what=f"the response_schema of interrupt {interrupt_id!r}")
        return dict(result)
    if isinstance(schema, type) or hasattr(schema, "__origin__"):
        from pydantic import TypeAdapter

        return dict(TypeAdapter(schema).json_schema())
    raise InterruptValueError(
        f"the response_schema of interrupt {interrupt_id!r} is a {type(schema).__name__}: "
        "give a type or a JSON Schema dict"
    )


def prompt_of(value: Any) -> str:
    """A line to show: the question when the value names one, the value itself else."""
    if isinstance(value, str):
        return value
    if isinstance(value, dict):
        for key in PROMPT_KEYS:
            if isinstance(value.get(key), str):
                return str(value[key])
    return json.dumps(value, ensure_ascii=False)


def project_messages(values: Any) -> list[dict[str, Any]]:
    """The graph's ``messages`` as JSON for display: role, content, and what a chat UI shows."""
    messages = values.get("messages") if isinstance(values, Mapping) else getattr(values, "messages", None)
    if not isinstance(messages, Iterable) or isinstance(messages, str | bytes | Mapping):
        return []
    return [_message(message) for message in messages]


def _message(message: Any) -> dict[str, Any]:
    if isinstance(message, Mapping):
        return _plain(dict(message))
    if isinstance(message, str):
        return {"role": "message", "content": message}
    projected: dict[str, Any] = {
        "role": getattr(message, "type", type(message).__name__),
        "content": getattr(message, "content", str(message)),
    }
    for field in ("id", "name", "tool_call_id", "tool_calls"):
        if getattr(message, field, None):
            projected[field] = getattr(message, field)
    return _plain(projected)


def _plain(data: dict[str, Any]) -> dict[str, Any]:
    """JSON round trip; whatever is not JSON is shown as its ``str`` (this is for display only)."""
    return dict(json.loads(json.dumps(data, ensure_ascii=False, default=str)))
