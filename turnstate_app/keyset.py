"""Pages by the sort key of the last row shown: what the admin's lists and ``turnstate_unresumable``
page by, so page 100 reads from an index what page 1 reads, and nothing pages by OFFSET.

The order is newest first, by ``("pk",)`` or ``("created_at", "pk")`` (a timestamp field, then
the primary key to break ties); a cursor is that key of the last row shown, as text.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from django.db.models import Q
from django.utils import timezone

BIGINT_MAX = 2**63 - 1
"""The largest primary key every database stores and compares (signed 64-bit)."""


class BadCursorError(ValueError):
    """A cursor that is not the key of a row of this order (mistyped, cut short, out of range)."""


def cursor_of(key_values: Sequence[Any]) -> str:
    """The cursor after a row whose sort key is ``key_values``: ``<pk>`` or ``<ISO time>~<pk>``."""
    return "~".join(value.isoformat() if isinstance(value, datetime) else str(value) for value in key_values)


def keyset_after(keys: Sequence[str], cursor: str) -> Q:
    """Rows after ``cursor`` in the newest-first order of ``keys``, as index range conditions.

    With a timestamp first, ``<field> <= t`` bounds the index range and the rest breaks ties.
    """
    parts = cursor.split("~")
    try:
        if list(keys) == ["pk"] and len(parts) == 1:
            return Q(pk__lt=bounded_pk(parts[0]))
        if list(keys[1:]) == ["pk"] and len(parts) == 2:
            at, pk = datetime.fromisoformat(parts[0]), bounded_pk(parts[1])
            if timezone.is_naive(at):
                raise ValueError(cursor)
            # The database compares it in UTC, and a time near year 1 or 9999 may have none
            # (SQLite's adapter converts it only as the query runs, too late to refuse it).
            at = at.astimezone(UTC)
            field = keys[0]
            return Q(**{f"{field}__lte": at}) & (Q(**{f"{field}__lt": at}) | Q(pk__lt=pk))
    except (ValueError, OverflowError) as error:
        raise BadCursorError(f"bad cursor {cursor!r}") from error
    raise BadCursorError(f"bad cursor {cursor!r}")


def bounded_pk(text: str) -> int:
    """A primary key every database compares, else ``ValueError``."""
    value = int(text)
    if not 0 <= value <= BIGINT_MAX:
        raise ValueError(text)
    return value
