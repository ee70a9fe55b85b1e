"""A conversation's history in one statement: a recursive CTE walks from the head to the first entry.

``WITH RECURSIVE`` is understood by SQLite (3.8.3+), PostgreSQL and MariaDB (10.2+) /
MySQL (8.0+), so loading a conversation costs two queries (its record, then this)
whatever its length. The walk stops after ``limit`` entries when a limit is given.
"""

from __future__ import annotations

from functools import lru_cache

from django.db import connections
from pydantic_ai.conversation_store import ConversationEntry

from turnstate_app.contrib.pydantic_ai.codec import entry_from
from turnstate_app.contrib.pydantic_ai.models import StoredEntry

# Far beyond any real conversation; a bound on the walk even if stored rows formed a cycle.
MAX_DEPTH = 10_000_000


@lru_cache(maxsize=8)
def _statement(vendor: str) -> str:
    del vendor  # one statement fits all three; keyed so a vendor-specific one can slot in
    table = StoredEntry._meta.db_table
    return (
        f"WITH RECURSIVE history_chain (entry_id, parent_id, depth) AS ("
        f" SELECT entry_id, parent_id, 1 FROM {table} WHERE entry_id = %s"
        f" UNION ALL"
        f" SELECT e.entry_id, e.parent_id, history_chain.depth + 1 FROM {table} e"
        f" JOIN history_chain ON e.entry_id = history_chain.parent_id WHERE history_chain.depth < %s"
        f") SELECT e.entry_id, e.parent_id, e.kind, e.message, e.conversation_id, e.encryption_key_id,"
        f" e.value_mac, history_chain.depth"
        f" FROM history_chain JOIN {table} e ON e.entry_id = history_chain.entry_id"
        f" ORDER BY history_chain.depth DESC"
    )


def read_history(alias: str, head_id: str | None, limit: int | None) -> list[ConversationEntry]:
    """The entries from the first up to ``head_id``, oldest first (only the last ``limit``).

    Raises ``KeyError`` (a ``LookupError``, as the base class expects) when the head, or an
    entry the chain points at, is not stored: a concurrent delete released it; and
    ``UnreadableValueError`` when an entry's MAC does not verify (nothing of the history is returned).
    """
    if head_id is None or limit == 0:
        return []
    depth = MAX_DEPTH if limit is None else limit
    connection = connections[alias]
    with connection.cursor() as cursor:
        cursor.execute(_statement(connection.vendor), [head_id, depth])
        rows = cursor.fetchall()
    if not rows:
        raise KeyError(head_id)
    oldest_parent = rows[0][1]  # entry_id, parent_id, kind, message, conversation_id, key id, mac, depth
    if oldest_parent is not None and len(rows) < depth:
        raise KeyError(oldest_parent)
    return [entry_from(*row[:7]) for row in rows]
