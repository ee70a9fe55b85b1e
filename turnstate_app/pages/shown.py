"""What the answer page shows: the question as stored, and its form's fields with their values.

The question is read as the lifecycle reads a record: its MAC checked before it is decrypted,
so a request changed at rest is an unreadable record, never words on a page.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from turnstate_app.errors import PauseCheckpointNotFoundError, UnreadableValueError
from turnstate_app.models import Pause
from turnstate_app.pages.answer_forms import (
    ANSWER,
    ANSWER_JSON,
    ARG_PREFIX,
    ARGS_JSON,
    REASON,
    AnswerForm,
    choice_labels,
    choice_value,
)
from turnstate_app.pages.questions import as_text, call_arguments, calls, details, question_text, title_of
from turnstate_app.ports.sealing import read_row

INPUT_TYPES = {"integer": "number", "number": "number", "boolean": "checkbox", "string": "textarea"}
"""A string is a text area: an input would drop the line breaks of the value it holds."""


@dataclass(frozen=True)
class Field:
    """One input of the form, ready for the template (which escapes every part of it)."""

    name: str
    label: str
    type: str = "text"
    value: str = ""
    checked: bool = False
    step: str = ""
    errors: list[str] = field(default_factory=list)


def read_question(found: Pause) -> Any:
    """The request the pause was minted with, its MAC verified: ``UnreadableValueError`` when it
    does not verify or cannot be decrypted, ``PauseCheckpointNotFoundError`` when it is gone."""
    stored = getattr(found, "request_value", None)
    if stored is None:
        raise PauseCheckpointNotFoundError(f"the request of pause {found.jti!r} is not stored")
    key_id, mac = getattr(found, "request_key_id", None), getattr(found, "request_mac", None)
    raw = read_row(found.thread_id, found.checkpoint_id, found.request_key, stored, key_id, mac)
    try:
        return json.loads(raw)
    except ValueError:
        raise UnreadableValueError(f"the request of pause {found.jti!r} is not JSON") from None


def pause_context(
    found: Pause,
    question: Any,
    form: AnswerForm,
    data: Mapping[str, Any] | None = None,
    errors: Mapping[str, list[str]] | None = None,
) -> dict[str, Any]:
    """The template's context: the question, and the form as filled (``data``) or fresh."""
    errors = errors or {}
    return {
        "pause": found,
        "title": title_of(question, found.name or found.jti),
        "question": question_text(question),
        "calls": calls(question),
        "details": details(question),
        "form": form,
        "choices": choices(found.answer_schema, form, data),
        "scalar": scalar_field(form, data, errors),
        "arg_fields": arg_fields(form, question, data, errors),
        "args_json": Field(
            ARGS_JSON,
            "",
            value=str(data.get(ARGS_JSON, "")) if data else as_text(call_arguments(question) or {}),
            errors=errors.get(ARGS_JSON, []),
        ),
        "reason": Field(
            REASON, "", value=str(data.get(REASON, "")) if data else "", errors=errors.get(REASON, [])
        ),
        "answer_json": Field(
            ANSWER_JSON,
            "",
            value=str(data.get(ANSWER_JSON, "")) if data else "",
            errors=errors.get(ANSWER_JSON, []),
        ),
        "errors": errors,
    }


def choices(schema: Any, form: AnswerForm, data: Mapping[str, Any] | None) -> list[Field]:
    labels = choice_labels(schema)
    picked = data.get(ANSWER) if data else None
    return [
        Field(ANSWER, labels.get(value, value), type="radio", value=value, checked=value == picked)
        for value in map(choice_value, form.choices)
    ]


def scalar_field(
    form: AnswerForm, data: Mapping[str, Any] | None, errors: Mapping[str, list[str]]
) -> Field | None:
    if form.kind != "scalar":
        return None
    value = str(data.get(ANSWER, "")) if data else ""
    return typed_field(ANSWER, "", form.type, value, errors)


def arg_fields(
    form: AnswerForm, question: Any, data: Mapping[str, Any] | None, errors: Mapping[str, list[str]]
) -> list[Field]:
    """One input per argument of the call, holding its value as the model gave it (or as edited)."""
    current = call_arguments(question) or {}
    shown: list[Field] = []
    for name, kind in form.arg_types.items():
        key = ARG_PREFIX + name
        if data is not None:
            value = str(data.get(key, ""))
        else:
            original = current.get(name)
            value = ("true" if original else "") if kind == "boolean" else as_text(original)
        shown.append(typed_field(key, name, kind, value, errors))
    return shown


def typed_field(name: str, label: str, kind: str, value: str, errors: Mapping[str, list[str]]) -> Field:
    """An input for a value of JSON type ``kind``: a checkbox is ticked by a true value."""
    if kind == "boolean":
        return Field(
            name,
            label,
            type="checkbox",
            value="true",
            checked=value in ("true", "on"),
            errors=list(errors.get(name, [])),
        )
    step = {"integer": "1", "number": "any"}.get(kind, "")
    return Field(
        name, label, type=INPUT_TYPES[kind], value=value, step=step, errors=list(errors.get(name, []))
    )
