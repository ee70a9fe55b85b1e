"""The session's two hot statements, built once per database from the model's own names.

``add_items`` is one multi-row ``INSERT`` per :data:`ITEMS_PER_INSERT` items and ``get_items``
one ``SELECT`` of the stored text, its key id and its MAC: no model instance per item, which at
1,000 items is most of the time. Quoted by the connection, run on Django's cursor.
"""

from __future__ import annotations

from functools import lru_cache

from django.db import connections

from turnstate_app.contrib.openai_agents.models import StoredSessionItem

ITEMS_PER_INSERT = 500  # rows per INSERT: 2,500 parameters, far under every database's limit
ITEM_COLUMNS = ("session_id", "item", "encryption_key_id", "value_mac", "created_at")


@lru_cache(maxsize=64)
def insert_items(alias: str, count: int) -> str:
    """``count`` items in one statement (in order: the ids they get keep it)."""
    quote = connections[alias].ops.quote_name
    table = quote(StoredSessionItem._meta.db_table)
    columns = ", ".join(quote(c) for c in ITEM_COLUMNS)
    row = f"({', '.join(['%s'] * len(ITEM_COLUMNS))})"
    return f"INSERT INTO {table} ({columns}) VALUES {', '.join([row] * count)}"


@lru_cache(maxsize=32)
def select_items(alias: str, *, latest: bool) -> str:
    """The session's items (value, key id, MAC) oldest first; with ``latest``, the newest first and at most
    ``%s`` of them."""
    quote = connections[alias].ops.quote_name
    table = quote(StoredSessionItem._meta.db_table)
    order = f" ORDER BY {quote('id')} DESC LIMIT %s" if latest else f" ORDER BY {quote('id')}"
    columns = ", ".join(quote(c) for c in ("item", "encryption_key_id", "value_mac"))
    return f"SELECT {columns} FROM {table} WHERE {quote('session_id')} = %s{order}"
