"""MariaDB/MySQL refuse any statement larger than ``max_allowed_packet``, value included.

The driver escapes quotes, backslashes and line breaks in the statement text, so a value
of ``MAX_VALUE_BYTES`` can need twice that on the wire: an 8 MiB transcript of quotes does
not fit the default 16 MiB packet. The port measures the statement before sending it and
refuses one that cannot fit with :class:`~turnstate_app.errors.CheckpointFieldError`, as
for any other limit; retrying it could never succeed.
"""

from __future__ import annotations

from typing import Any
from weakref import WeakKeyDictionary

from django.db.backends.base.base import BaseDatabaseWrapper

from turnstate_app.errors import CheckpointFieldError

ESCAPED_BY_THE_DRIVER = ("\\", "'", '"', "\n", "\r", "\x1a")  # NUL is refused before
STATEMENT_OVERHEAD = 1024
"""Bytes of packet header, quoting and formatted dates, beyond the SQL text and the values."""

_limits: WeakKeyDictionary[BaseDatabaseWrapper, tuple[Any, int]] = WeakKeyDictionary()


def wire_bytes(text: str) -> int:
    """The bytes ``text`` takes in the statement once the driver has escaped it."""
    size = len(text) if text.isascii() else len(text.encode("utf-8"))
    return size + sum(text.count(char) for char in ESCAPED_BY_THE_DRIVER)


def statement_bytes(sql: str, params: tuple[Any, ...]) -> int:
    return len(sql) + STATEMENT_OVERHEAD + sum(wire_bytes(p) + 2 for p in params if isinstance(p, str))


def packet_limit(connection: BaseDatabaseWrapper) -> int:
    """The server's ``max_allowed_packet`` for this connection, read once per connection."""
    connection.ensure_connection()
    driver = connection.connection
    cached = _limits.get(connection)
    if cached is not None and cached[0] is driver:
        return cached[1]
    with connection.cursor() as cursor:
        cursor.execute("SELECT @@max_allowed_packet")
        limit = int(cursor.fetchone()[0])
    _limits[connection] = (driver, limit)
    return limit


def require_fits_packet(connection: BaseDatabaseWrapper, sql: str, params: tuple[Any, ...]) -> None:
    """Refuse, before sending, a statement the server would refuse for its size."""
    size = statement_bytes(sql, params)
    limit = packet_limit(connection)
    if size > limit:
        raise CheckpointFieldError(
            "value",
            f"would make a statement of {size} bytes once escaped; this database accepts at most "
            f"{limit} (max_allowed_packet)",
        )
