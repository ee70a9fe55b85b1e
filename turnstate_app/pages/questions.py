"""What a pause's request shows a person: its title, its question, the tool calls it asks about.

Requests come in the shapes the integrations mint: a plain pause's ``{"question": ...}``,
PydanticAI's and OpenAI Agents' approvals (``tool_name`` with ``args`` / ``arguments``),
LangChain's reviews (``name`` and ``args``, or ``action_requests``), a LangGraph interrupt's
value. Everything here is data for templates, which escape it: nothing is marked safe.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

TEXT_KEYS = ("question", "description", "prompt", "message", "text", "value")
"""Where a request's words are, in the order they are looked for (``question`` first)."""


@dataclass(frozen=True)
class Call:
    """One tool call a request asks about, its arguments as rows of text."""

    tool: str
    rows: list[tuple[str, str]]


def question_text(request: Any) -> str | None:
    """The request's words: ``request["question"]`` when it has one."""
    if isinstance(request, str):
        return request
    if isinstance(request, dict):
        for key in TEXT_KEYS:
            if isinstance(request.get(key), str) and request[key].strip():
                return str(request[key])
    return None


def title_of(request: Any, fallback: str) -> str:
    """The first line of the question, else the tool's name for an approval, else ``fallback``."""
    asked = request.get("question") if isinstance(request, dict) else None
    if isinstance(asked, str) and asked.strip():
        return first_line(asked)
    tool = tool_name(request)
    if tool:
        return tool
    words = question_text(request)
    return first_line(words) if words else fallback


def first_line(words: str) -> str:
    return words.strip().splitlines()[0]


def actions(request: Any) -> list[dict[str, Any]]:
    """LangChain's batched review's actions, else the one call the request is about (maybe none)."""
    if not isinstance(request, dict):
        return []
    listed = request.get("action_requests")
    if isinstance(listed, list):
        return [action for action in listed if isinstance(action, dict)]
    for name_key, args_key in (("tool_name", "args"), ("tool_name", "arguments"), ("name", "args")):
        if isinstance(request.get(name_key), str) and args_key in request:
            return [{"name": request[name_key], "args": request[args_key]}]
    return []


def tool_name(request: Any) -> str | None:
    """The tool a request asks about, when it asks about exactly one."""
    found = actions(request)
    return str(found[0]["name"]) if len(found) == 1 and isinstance(found[0].get("name"), str) else None


def call_arguments(request: Any) -> dict[str, Any] | None:
    """The arguments of the one call a request asks about (None: not exactly one, or not an object)."""
    found = actions(request)
    args = found[0].get("args") if len(found) == 1 else None
    return args if isinstance(args, dict) else None


def calls(request: Any) -> list[Call]:
    """Each call the request asks about, with its arguments as rows (a value that is not text as JSON)."""
    shown: list[Call] = []
    for action in actions(request):
        args = action.get("args")
        rows = (
            [(str(name), as_text(value)) for name, value in args.items()]
            if isinstance(args, dict)
            else [("", as_text(args))]
        )
        shown.append(Call(tool=str(action.get("name", "")), rows=rows))
    return shown


def as_text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, indent=2)


def details(request: Any) -> str | None:
    """The request as JSON, when neither a question nor a call says what it asks."""
    if request is None or question_text(request) or actions(request):
        return None
    return as_text(request)
