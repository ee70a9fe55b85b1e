"""What an ``anyOf`` / ``oneOf`` expected, for an answer that matched none of its alternatives.

``jsonschema`` says only "'yes' is not valid under any of the given schemas": a client cannot
tell what to send. Each alternative is named (its ``title``, else its shape: type, pinned
values, required keys) with the reason this answer missed it.
"""

from __future__ import annotations

import json
from typing import Any

from jsonschema.exceptions import ValidationError, best_match

MAX_ALTERNATIVES = 10
MAX_SHOWN = 80
TYPE_WORDS = {
    "object": "an object",
    "array": "an array",
    "string": "a string",
    "integer": "an integer",
    "number": "a number",
    "boolean": "a boolean",
    "null": "null",
}


def with_alternatives(error: ValidationError) -> str:
    """``error``'s message, and for an ``anyOf``/``oneOf`` that nothing matched, what each expected."""
    message = str(error.message)
    options = error.validator_value
    if error.validator not in ("anyOf", "oneOf") or not error.context or not isinstance(options, list):
        return message
    missed: dict[int, list[ValidationError]] = {}
    for sub in error.context:
        missed.setdefault(int(sub.relative_schema_path[0]), []).append(sub)
    lines: list[str] = []
    for index, option in enumerate(options[:MAX_ALTERNATIVES]):
        why = best_match(missed.get(index, []))
        reason = f" ({location(why.absolute_path)}: {why.message})" if why is not None else ""
        lines.append(f"({index + 1}) {expected(option)}{reason}")
    if len(options) > MAX_ALTERNATIVES:
        lines.append(f"and {len(options) - MAX_ALTERNATIVES} more")
    return f"{message}; expected one of: " + "; ".join(lines)


def expected(schema: Any) -> str:
    """An alternative in a few words: its title, else its type, pinned properties and required keys."""
    if isinstance(schema, bool):
        return "anything" if schema else "nothing"
    if not isinstance(schema, dict):
        return shown(schema)
    if isinstance(schema.get("title"), str) and schema["title"].strip():
        return str(schema["title"])
    if "const" in schema:
        return shown(schema["const"])
    if isinstance(schema.get("enum"), list):
        return "one of " + shown(schema["enum"])
    if isinstance(schema.get("$ref"), str):
        return f"the schema at {schema['$ref']}"
    words = []
    kinds = schema.get("type")
    if isinstance(kinds, str | list):
        names = [kinds] if isinstance(kinds, str) else kinds
        words.append(" or ".join(TYPE_WORDS.get(str(name), str(name)) for name in names))
    keys = keys_of(schema)
    if keys:
        words.append(("with " if words else "") + ", ".join(keys))
    return " ".join(words) or shown(schema)


def keys_of(schema: dict[str, Any]) -> list[str]:
    """Properties with a pinned value (``const``, ``enum``), then the other required keys."""
    properties = schema.get("properties")
    properties = properties if isinstance(properties, dict) else {}
    required = schema.get("required")
    required = required if isinstance(required, list) else []
    keys, pinned = [], set()
    for name, sub in properties.items():
        if isinstance(sub, dict) and "const" in sub:
            keys.append(f"{shown(name)}: {shown(sub['const'])}")
        elif isinstance(sub, dict) and isinstance(sub.get("enum"), list):
            keys.append(f"{shown(name)} one of {shown(sub['enum'])}")
        else:
            continue
        pinned.add(name)
    return keys + [shown(name) for name in required if name not in pinned]


def shown(value: Any) -> str:
    """Compact JSON, cut short: an alternative may hold a whole tool's parameters."""
    text = json.dumps(value, ensure_ascii=False, separators=(", ", ": "), default=str)
    return text if len(text) <= MAX_SHOWN else text[: MAX_SHOWN - 1] + "…"


def location(parts: Any) -> str:
    """A JSONPath-like location: ``$`` is the answer, ``$.items[2].name`` a field within it."""
    text = "$"
    for part in parts:
        text += f"[{part}]" if isinstance(part, int) else f".{part}"
    return text
