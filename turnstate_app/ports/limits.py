"""What a port refuses before writing, with an error that names the field and the limit.

A database error after the fact would say less, differ per database and, on
PostgreSQL, poison the caller's transaction.
"""

from __future__ import annotations

from typing import Any

from turnstate_app.errors import CheckpointFieldError

ID_MAX_LENGTH = 255
"""The longest id (thread, checkpoint, key, run, ...) in characters: the column size everywhere."""

# The unique index on (thread_id, checkpoint_id, key) has a size limit of its own on
# PostgreSQL: a btree entry holds at most 2704 bytes (a third of an 8 KB page). Each
# id costs its UTF-8 bytes plus a varlena header (4 bytes) and alignment (up to 3),
# and the entry has an 8-byte header: 2704 - 8 - 3 * (4 + 3) = 2675 bytes of ids.
# MariaDB/MySQL (InnoDB, DYNAMIC rows) allow 3072 bytes, which three utf8mb4
# VARCHAR(255) columns (3 * 1020) never exceed; SQLite has no such limit.
INDEX_ID_BYTE_LIMITS: dict[str, int] = {"postgresql": 2675}


def require_id(field: str, value: Any) -> None:
    """An id is a non-empty str of at most 255 characters, without NUL."""
    if not isinstance(value, str):
        raise CheckpointFieldError(field, f"must be a str, not {type(value).__name__}")
    if not value:
        raise CheckpointFieldError(field, "must not be empty")
    if len(value) > ID_MAX_LENGTH:
        raise CheckpointFieldError(field, f"is {len(value)} characters long; the limit is {ID_MAX_LENGTH}")
    if "\x00" in value:
        raise CheckpointFieldError(field, "must not contain NUL characters")
    if not value.isascii():
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            raise CheckpointFieldError(
                field, "holds a lone surrogate, which no database stores as text"
            ) from None


def require_row_ids(thread_id: Any, checkpoint_id: Any, key: Any, *, vendor: str | None) -> None:
    """Every id valid, and together small enough for the unique index on ``vendor``."""
    require_id("thread_id", thread_id)
    require_id("checkpoint_id", checkpoint_id)
    require_id("key", key)
    limit = INDEX_ID_BYTE_LIMITS.get(vendor or "")
    if limit is not None:
        total = sum(len(part.encode()) for part in (thread_id, checkpoint_id, key))
        if total > limit:
            raise CheckpointFieldError(
                "thread_id, checkpoint_id, key",
                f"together take {total} UTF-8 bytes; the unique index on {vendor} holds at most {limit}",
            )


def require_task_id(task_id: Any) -> None:
    """The task id is optional; when given it obeys the id rules."""
    if task_id is not None:
        require_id("task_id", task_id)


def require_value(value: Any, *, max_bytes: int) -> None:
    """A value is a str without NUL, storable as UTF-8 (no lone surrogate), within ``max_bytes``."""
    if not isinstance(value, str):
        raise CheckpointFieldError("value", f"must be a str, not {type(value).__name__}")
    if value.isascii():
        size = len(value)
    else:
        try:
            size = len(value.encode("utf-8"))
        except UnicodeEncodeError as exc:
            raise CheckpointFieldError(
                "value",
                f"holds a lone surrogate ({exc.object[exc.start]!r}), which no database stores as text",
            ) from None
    if size > max_bytes:
        raise CheckpointFieldError(
            "value", f"is {size} UTF-8 bytes; the limit (MAX_VALUE_BYTES) is {max_bytes}"
        )
    if "\x00" in value:
        raise CheckpointFieldError("value", "must not contain NUL characters")


def require_write(
    thread_id: Any,
    checkpoint_id: Any,
    key: Any,
    value: Any,
    task_id: Any,
    *,
    vendor: str | None,
    max_bytes: int,
) -> None:
    """Everything a write or claim must satisfy, checked before any statement runs."""
    require_row_ids(thread_id, checkpoint_id, key, vendor=vendor)
    require_value(value, max_bytes=max_bytes)
    require_task_id(task_id)
