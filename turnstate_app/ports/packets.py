"""MariaDB/MySQL refuse any statement larger than ``max_allowed_packet``, value included.

The driver escapes quotes, backslashes and line breaks in the statement text, so a value
sent as text can need twice its size on the wire: 8 MiB of ``"`` would not fit the default
16 MiB packet. So the port sends every value as base64 (:func:`to_wire`), which escaping never
grows, and the server decodes it (:data:`VALUE_FROM_WIRE`, in the port's statements): a value
of ``MAX_VALUE_BYTES`` needs a third more, whatever its characters. The port still measures
each statement before sending it and refuses one that cannot fit with
:class:`~turnstate_app.errors.CheckpointFieldError`, as for any other limit (retrying it could
never succeed); check ``turnstate.E015`` reports a packet too small for ``MAX_VALUE_BYTES``.
"""

from __future__ import annotations

import base64
from typing import Any
from weakref import WeakKeyDictionary

from django.db.backends.base.base import BaseDatabaseWrapper

from turnstate_app.errors import CheckpointFieldError
from turnstate_app.ports.limits import ID_MAX_LENGTH

ESCAPED_BY_THE_DRIVER = ("\\", "'", '"', "\n", "\r", "\x1a")  # NUL is refused before
STATEMENT_OVERHEAD = 1024
"""Bytes of packet header, quoting and formatted dates, beyond the SQL text and the values."""
IDS_AT_MOST = 4 * ID_MAX_LENGTH * 4 * 2
"""The ids of one write (thread, checkpoint, key, task), each 255 characters of 4 UTF-8 bytes, escaped."""
VALUE_FROM_WIRE = "CONVERT(FROM_BASE64(%s) USING utf8mb4)"
"""The value's placeholder in the port's statements: the server decodes what :func:`to_wire` sent."""

_limits: WeakKeyDictionary[BaseDatabaseWrapper, tuple[Any, int]] = WeakKeyDictionary()


def to_wire(value: str) -> str:
    """``value`` as the port sends it to MariaDB/MySQL: base64 of its UTF-8, never escaped."""
    return base64.b64encode(value.encode("utf-8")).decode("ascii")


def wire_bytes(text: str) -> int:
    """The bytes ``text`` takes in the statement once the driver has escaped it."""
    size = len(text) if text.isascii() else len(text.encode("utf-8"))
    return size + sum(text.count(char) for char in ESCAPED_BY_THE_DRIVER)


def statement_bytes(sql: str, params: tuple[Any, ...]) -> int:
    return len(sql) + STATEMENT_OVERHEAD + sum(wire_bytes(p) + 2 for p in params if isinstance(p, str))


def required_packet(max_value_bytes: int) -> int:
    """The ``max_allowed_packet`` a write of ``max_value_bytes`` needs at most, its ids included."""
    return 4 * -(-max_value_bytes // 3) + IDS_AT_MOST + 2 * STATEMENT_OVERHEAD


def largest_fitting_value(limit: int) -> int:
    """The largest ``MAX_VALUE_BYTES`` whose writes always fit a packet of ``limit`` bytes."""
    return max(0, (limit - IDS_AT_MOST - 2 * STATEMENT_OVERHEAD) // 4 * 3)


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
            f"would make a statement of {size} bytes; this database accepts at most "
            f"{limit} (max_allowed_packet)",
        )
