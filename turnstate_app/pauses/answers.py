"""Answers checked against the pause's JSON Schema before the token is consumed.

A framework that validates a resume value only when the run continues (LangGraph's
``response_schema``, PydanticAI's tool arguments) would refuse the answer after the token
is spent, leaving a pause answered whose run cannot use the answer. Validating here, before
the conditional UPDATE, keeps such a pause pending so the person can answer again.

The schema is checked once, at mint, against its own draft's meta-schema: a schema that
cannot validate anything is the integrator's bug and is refused before anything is written.
That walk costs milliseconds and an integration mints the same few schemas over and over, so a
schema found usable is remembered by its canonical JSON (at most :data:`PROVED_MAX` of them) and
not walked again; a refused one is walked, and refused, every time.
The validator is the ``jsonschema`` library, with the draft the schema declares in
``$schema`` (the newest it knows when it declares none).
"""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import unquote

from jsonschema import exceptions as schema_errors
from jsonschema.validators import validator_for

from turnstate_app.errors import AnswerValidationError, CheckpointFieldError
from turnstate_app.pauses.alternatives import location, with_alternatives

MAX_MESSAGES = 50
"""At most this many violations are reported: enough to fix an answer, bounded for a hostile one."""


PROVED_MAX = 256
"""How many usable schemas are remembered; past it the memory starts over."""
_proved: set[str] = set()


def check_schema(schema: Any) -> dict[str, Any] | None:
    """``schema`` when it is a usable JSON Schema (None stays None); else ``CheckpointFieldError``."""
    if schema is None:
        return None
    if not isinstance(schema, dict):
        raise CheckpointFieldError(
            "answer_schema", f"must be a JSON Schema object (a dict), not {type(schema).__name__}"
        )
    try:
        canonical: str | None = json.dumps(schema, sort_keys=True, separators=(",", ":"), allow_nan=False)
    except (TypeError, ValueError):
        canonical = None  # not JSON: walked below, and refused there or when it is stored
    if canonical is not None and canonical in _proved:
        return schema
    require_usable(schema)
    if canonical is not None:
        if len(_proved) >= PROVED_MAX:
            _proved.clear()
        _proved.add(canonical)
    return schema


def require_usable(schema: dict[str, Any]) -> None:
    """``CheckpointFieldError`` unless ``schema`` is valid against its draft's meta-schema and every
    reference in it can be followed."""
    try:
        validator_class = validator_for(schema)
        validator_class.check_schema(schema)
    except schema_errors.SchemaError as exc:
        raise CheckpointFieldError(
            "answer_schema", f"is not a valid JSON Schema: {exc.message} (at {location(exc.absolute_path)})"
        ) from None
    except schema_errors.UnknownType as exc:  # pragma: no cover - raised by odd metaschemas only
        raise CheckpointFieldError("answer_schema", f"is not a valid JSON Schema: {exc}") from None
    for ref in references(schema):
        problem = unresolvable(schema, ref)
        if problem is not None:
            raise CheckpointFieldError(
                "answer_schema", f"has a $ref that cannot be followed: {ref!r} ({problem})"
            )


VALUE_KEYWORDS = frozenset({"const", "enum", "default", "examples"})
"""Keywords whose contents are JSON values, not schemas: a "$ref" inside them is data."""


def references(node: Any) -> list[str]:
    """Every ``$ref`` and ``$dynamicRef`` in the schema ``node``."""
    found: list[str] = []
    if isinstance(node, dict):
        for key, value in node.items():
            if key in ("$ref", "$dynamicRef") and isinstance(value, str):
                found.append(value)
            elif key not in VALUE_KEYWORDS:
                found += references(value)
    elif isinstance(node, list):
        for item in node:
            found += references(item)
    return found


def unresolvable(schema: dict[str, Any], ref: str) -> str | None:
    """Why ``ref`` would fail when an answer is judged, or None.

    Only references within the schema are followed: nothing is ever fetched, so a person's
    answer never waits on (or is judged by) a remote document. A JSON Pointer must name a
    place that exists; an anchor (``#name``) is left to the validator.
    """
    if not ref.startswith("#"):
        return "only references within the schema (#...) are followed; nothing is fetched"
    if ref in ("#", "") or not ref.startswith("#/"):
        return None
    node: Any = schema
    for raw in ref[2:].split("/"):
        part = unquote(raw).replace("~1", "/").replace("~0", "~")
        if isinstance(node, dict) and part in node:
            node = node[part]
        elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        else:
            return "it points at nothing in the schema"
    return None


def validate_answer(schema: dict[str, Any] | None, answer: Any) -> None:
    """Raise ``AnswerValidationError`` listing every violation of ``schema`` by ``answer``."""
    if schema is None:
        return
    validator = validator_for(schema)(schema)
    errors = sorted(validator.iter_errors(answer), key=lambda error: list(map(str, error.absolute_path)))
    if errors:
        raise AnswerValidationError(
            [
                f"{location(error.absolute_path)}: {with_alternatives(error)}"
                for error in errors[:MAX_MESSAGES]
            ]
        )
