"""Text no database stores: a lone surrogate, refused with the field named before any statement.

Python strings may hold one (``"\\ud800"``, e.g. from ``json.loads`` of an escaped half pair);
UTF-8 cannot encode it. Left to the driver, it is a bare ``UnicodeEncodeError`` (or, inside
JSON, PostgreSQL's ``DataError``, which also poisons the caller's transaction).
"""

from __future__ import annotations

from typing import Any

from turnstate_app.errors import CheckpointFieldError


def refuse_lone_surrogate(field: str, value: str) -> None:
    """``CheckpointFieldError`` when ``value`` holds a lone surrogate."""
    if value.isascii():
        return
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise CheckpointFieldError(
            field,
            f"holds a lone surrogate ({exc.object[exc.start]!r} at character {exc.start}), "
            "which no database stores as text",
        ) from None


def refuse_lone_surrogates_in(field: str, value: Any) -> None:
    """:func:`refuse_lone_surrogate` for every str in a JSON-like ``value``, keys included."""
    pending = [value]
    while pending:
        item = pending.pop()
        if isinstance(item, str):
            refuse_lone_surrogate(field, item)
        elif isinstance(item, dict):
            pending += item.keys()
            pending += item.values()
        elif isinstance(item, list | tuple):
            pending += item
