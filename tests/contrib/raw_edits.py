"""A stored row edited behind every API: one raw ``UPDATE`` through Django's cursor.

How a bad row edit, a replayed write or a host's own bug changes a framework's stored state
between a person's answer and the run's continuation.
"""

from __future__ import annotations

from typing import Any

from django.db import connections, router


def raw_update(model: Any, pk: Any, field: str, value: Any) -> None:
    """``UPDATE <model's table> SET <field's column> = %s WHERE <pk> = %s``; exactly one row."""
    meta = model._meta
    connection = connections[router.db_for_write(model)]
    quote = connection.ops.quote_name
    with connection.cursor() as cursor:
        cursor.execute(
            f"UPDATE {quote(meta.db_table)} SET {quote(meta.get_field(field).column)} = %s "
            f"WHERE {quote(meta.pk.column)} = %s",
            [value, pk],
        )
        assert cursor.rowcount == 1
