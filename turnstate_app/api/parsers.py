"""The one body format the app's views read: JSON, bounded in nesting.

Deeply nested input would otherwise surface later as a ``RecursionError`` (a 500) when
the answer is serialised for the store; here it is a 400 before anything runs.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import IO, Any

from rest_framework.exceptions import ParseError
from rest_framework.parsers import JSONParser

MAX_JSON_DEPTH = 100
"""Far deeper than any answer a person gives; deeper bodies are refused."""


class BoundedJSONParser(JSONParser):
    """DRF's strict JSON parser (no NaN or Infinity), refusing bodies nested too deeply."""

    def parse(
        self, stream: IO[Any], media_type: str | None = None, parser_context: Mapping[str, Any] | None = None
    ) -> Any:
        try:
            data = super().parse(stream, media_type, parser_context)
        except RecursionError:
            raise ParseError(f"JSON parse error - nested deeper than {MAX_JSON_DEPTH} levels") from None
        if nesting_exceeds(data, MAX_JSON_DEPTH):
            raise ParseError(f"JSON parse error - nested deeper than {MAX_JSON_DEPTH} levels")
        return data


def nesting_exceeds(value: Any, limit: int) -> bool:
    """Whether ``value`` nests containers more than ``limit`` deep; iterative, so never recursing."""
    pending: list[tuple[Any, int]] = [(value, 1)]
    while pending:
        item, depth = pending.pop()
        children = item.values() if isinstance(item, dict) else item if isinstance(item, list) else None
        if children is None:
            continue
        if depth > limit:
            return True
        pending.extend((child, depth + 1) for child in children)
    return False
