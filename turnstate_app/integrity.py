"""Every stored value bound to its row by a MAC keyed from ``SECRET_KEY``.

Someone who can write the database but holds no key (a leaked database password, a restored
backup, an operator's mistake) could otherwise edit a stored value, plant a clear value where
a sealed one was written, or copy a row under another thread: encryption alone does not stop a
forged row, because a row's key id says "clear" as easily as it names a key. So each row that
holds a value keeps, in a column of its own, a MAC over

- its table (a value copied into another table never verifies),
- its identity (thread, checkpoint, key, …: a value copied to another row never verifies),
- its key id (a clear value where a sealed one was written never verifies),
- and the value exactly as stored (ciphertext, or the clear text when no keys are set),

written with the value in the same statement and checked on every read before the value is
decrypted or decoded. A missing or wrong MAC makes the row an unreadable record
(:class:`~turnstate_app.errors.UnreadableValueError`, a ``PayloadBindingError``), never data.

The MAC is Django's ``salted_hmac`` (SHA-256; its key derived once per secret, the value fed as
stored, never copied; the tests hold it equal to ``salted_hmac``'s), made with ``SECRET_KEY``
and verified under it and each of ``SECRET_KEY_FALLBACKS``, as Django's signing is, so
``SECRET_KEY`` can be rotated without refusing a row. A row rewritten in place (an upsert)
could be set back to an older value that verified once; where that would change what runs, the
lifecycle binds the state a continuation starts from to its pause (each bridge's start-state
check).
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Sequence
from functools import lru_cache
from typing import Any

from django.conf import settings
from django.utils.encoding import force_bytes

from turnstate_app.errors import ChangedAtRestError

__all__ = ["MAC_LENGTH", "changed_at_rest", "require_row", "row_mac", "row_verifies"]

MAC_LENGTH = 64
"""Hex digits of a row's MAC (SHA-256): the width of every ``value_mac`` column."""

_SALT = "turnstate_app.integrity.row"

Value = bytes | memoryview | str | None
"""A column as stored: text, or bytes as the driver hands them back (``memoryview`` on PostgreSQL)."""


def _field(part: Any) -> str:
    # Length-prefixed, so no choice of ids can read as another's; None is not "" (no length).
    if part is None:
        return "-"
    text = str(part)
    return f"{len(text)}:{text}"


@lru_cache(maxsize=64)
def _opening(table: str, width: int) -> str:
    """The header's first two fields (the table, the identity's width), the same for every row of a
    table: spelt once, not per row."""
    return f"{_field(table)}|{_field(width)}|"


def _header(table: str, identity: Sequence[Any], key_id: str | None, value: Value) -> bytes:
    """``table | width | *identity | key id | "value" or none``, each field length-prefixed and
    joined by ``|``, as UTF-8. A row is read and written many times per request, so the fields are
    spelt inline (text as it is, anything else through ``str``) rather than through a call each."""
    fields = [f"{len(part)}:{part}" if type(part) is str else _field(part) for part in (*identity, key_id)]
    closing = "|5:value" if value is not None else "|-"
    return (_opening(table, len(identity)) + "|".join(fields) + closing).encode("utf-8")


@lru_cache(maxsize=8)
def _keyed(secret: Any) -> hmac.HMAC:
    """An HMAC keyed as Django's ``salted_hmac(_SALT, …, secret=secret, algorithm="sha256")`` keys
    it, fed nothing yet: each row starts from a copy, so the key is derived and padded once per
    secret, not once per row (``tests/test_row_macs.py`` holds every MAC equal to ``salted_hmac``'s)."""
    return hmac.new(hashlib.sha256(force_bytes(_SALT) + force_bytes(secret)).digest(), digestmod="sha256")


def _mac(header: bytes, value: Value, secret: Any) -> str:
    mac = _keyed(secret).copy()
    mac.update(header)
    if value is not None:  # fed as it is: a large value is hashed once, never copied
        mac.update(b"\x00")
        mac.update(value.encode("utf-8") if isinstance(value, str) else value)
    return mac.hexdigest()


def row_mac(table: str, identity: Sequence[Any], key_id: str | None, value: Value) -> str:
    """The MAC under ``SECRET_KEY`` that a row of ``table`` at ``identity`` stores beside ``value``.

    ``table`` is the model's label (``app_label.Model``); ``value`` is the column as stored:
    the token when sealed, the clear text or bytes otherwise, None where the column is empty."""
    return _mac(_header(table, identity, key_id, value), value, settings.SECRET_KEY)


def row_verifies(
    table: str, identity: Sequence[Any], key_id: str | None, value: Value, recorded: str | None
) -> bool:
    """Whether ``recorded`` is this row's MAC under ``SECRET_KEY`` or a fallback (missing: never)."""
    if not recorded:
        return False
    header = _header(table, identity, key_id, value)
    # Compared as bytes in constant time, as Django's ``constant_time_compare`` does; SECRET_KEY
    # first, the fallbacks only when it fails.
    expected = recorded.encode()
    if hmac.compare_digest(expected, _mac(header, value, settings.SECRET_KEY).encode()):
        return True
    return any(
        hmac.compare_digest(expected, _mac(header, value, secret).encode())
        for secret in settings.SECRET_KEY_FALLBACKS
    )


def require_row(
    table: str, identity: Sequence[Any], key_id: str | None, value: Value, recorded: str | None
) -> None:
    """:class:`ChangedAtRestError` (an ``UnreadableValueError``) unless ``recorded`` verifies; the
    error names the row, not its value."""
    if row_verifies(table, identity, key_id, value, recorded):
        return
    raise changed_at_rest(table, identity, recorded)


def changed_at_rest(table: str, identity: Sequence[Any], recorded: str | None) -> ChangedAtRestError:
    """The error of a row whose MAC did not verify: it names the row, never its value."""
    what = "has no MAC" if not recorded else "does not match its MAC"
    return ChangedAtRestError(
        f"the stored value of {table} row {list(map(str, identity))} {what}: it was not written by "
        "this app under its SECRET_KEY (or SECRET_KEY_FALLBACKS), or it was changed at rest; it is "
        "an unreadable record and is not used"
    )
