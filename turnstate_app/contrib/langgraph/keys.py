"""What the saver stores as keys, and the limits it checks before any statement runs.

Limits are checked here, with an error naming the field, rather than left to the
database: there the error would differ per vendor, could truncate silently on MariaDB
outside strict mode, and would poison the caller's transaction on PostgreSQL.
"""

from __future__ import annotations

import hashlib
from functools import lru_cache
from typing import Any

from turnstate_app.contrib._text import refuse_lone_surrogate
from turnstate_app.errors import CheckpointFieldError

THREAD_ID_MAX_LENGTH = 255
NAME_MAX_LENGTH = 255  # channel names, run ids
SHORT_ID_MAX_LENGTH = 64  # checkpoint ids, task ids, versions: LangGraph's are 36 to 49 characters
HASH_LENGTH = 64  # hex SHA-256


@lru_cache(maxsize=4096)
def ns_hash(checkpoint_ns: str) -> str:
    """The key of a namespace: SHA-256 of its UTF-8 bytes, in hex."""
    return hashlib.sha256(checkpoint_ns.encode("utf-8")).hexdigest()


ROOT_NS_HASH = ns_hash("")


def check_text(field: str, value: Any, *, max_length: int | None, allow_empty: bool = False) -> str:
    """``value`` is a str without NUL (PostgreSQL cannot store one) or a lone surrogate (no
    database can) within ``max_length``."""
    if not isinstance(value, str):
        raise CheckpointFieldError(field, f"must be a str, not {type(value).__name__}")
    if not value and not allow_empty:
        raise CheckpointFieldError(field, "must not be empty")
    if max_length is not None and len(value) > max_length:
        raise CheckpointFieldError(field, f"is {len(value)} characters long; the limit is {max_length}")
    if "\x00" in value:
        raise CheckpointFieldError(field, "must not contain NUL characters")
    refuse_lone_surrogate(field, value)
    return value


def thread_id_of(value: Any) -> str:
    return check_text("thread_id", value, max_length=THREAD_ID_MAX_LENGTH)


def checkpoint_id_of(value: Any) -> str:
    return check_text("checkpoint_id", value, max_length=SHORT_ID_MAX_LENGTH)


def namespace_of(value: Any) -> str:
    return check_text("checkpoint_ns", "" if value is None else value, max_length=None, allow_empty=True)


def version_of(channel: str, value: Any) -> str:
    """A channel version as stored: its ``str``, whatever type LangGraph gave (int, float, str)."""
    check_text("channel", channel, max_length=NAME_MAX_LENGTH)
    version = value if type(value) is str else str(value)
    if 0 < len(version) <= SHORT_ID_MAX_LENGTH and "\x00" not in version:
        return version  # valid: the field's name (which names the channel) is spelt only for an error
    return check_text(f"version of {channel!r}", version, max_length=SHORT_ID_MAX_LENGTH)
