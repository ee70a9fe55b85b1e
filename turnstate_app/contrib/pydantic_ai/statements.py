"""The store's write statements, built once per database from the models' own names.

A load starts with the record, one row by its unique key. A save is PydanticAI's
``read_record`` then ``write_record``: in one transaction, a locking read of the stored
entries the new ones continue, the record inserted (insert-if-absent, on its unique key) or
updated (only at the expected revision), and the new entries in one multi-row ``INSERT``.
Built from ``_meta`` and quoted by the connection, run on Django's cursor.
"""

from __future__ import annotations

from functools import lru_cache

from django.db import connections

from turnstate_app.contrib.pydantic_ai.models import StoredConversation, StoredEntry

ENTRY_COLUMNS = (
    "entry_id",
    "parent_id",
    "conversation_id",
    "kind",
    "message",
    "encryption_key_id",
    "value_mac",
    "created_at",
)
ENTRIES_PER_INSERT = 500  # rows per INSERT: 4,000 parameters, far under every database's limit


@lru_cache(maxsize=16)
def read_record(alias: str, columns: tuple[str, ...]) -> str:
    """One record's ``columns`` by its conversation id."""
    quote = connections[alias].ops.quote_name
    names = ", ".join(quote(c) for c in columns)
    table = quote(StoredConversation._meta.db_table)
    return f"SELECT {names} FROM {table} WHERE {quote('conversation_id')} = %s"


@lru_cache(maxsize=64)
def lock_entries(alias: str, count: int) -> str:
    """The ids of ``count`` entries, locked (``FOR UPDATE`` where the database has it)."""
    connection = connections[alias]
    quote = connection.ops.quote_name
    marks = ", ".join(["%s"] * count)
    lock = " FOR UPDATE" if connection.features.has_select_for_update else ""
    return (
        f"SELECT {quote('entry_id')} FROM {quote(StoredEntry._meta.db_table)}"
        f" WHERE {quote('entry_id')} IN ({marks}){lock}"
    )


@lru_cache(maxsize=16)
def insert_record(alias: str, columns: tuple[str, ...]) -> str:
    quote = connections[alias].ops.quote_name
    names = ", ".join(quote(c) for c in ("conversation_id", *columns))
    marks = ", ".join(["%s"] * (len(columns) + 1))
    return f"INSERT INTO {quote(StoredConversation._meta.db_table)} ({names}) VALUES ({marks})"


@lru_cache(maxsize=16)
def update_record(alias: str, columns: tuple[str, ...]) -> str:
    """The record's columns set, only where it still has the expected revision."""
    quote = connections[alias].ops.quote_name
    sets = ", ".join(f"{quote(c)} = %s" for c in columns)
    return (
        f"UPDATE {quote(StoredConversation._meta.db_table)} SET {sets}"
        f" WHERE {quote('conversation_id')} = %s AND {quote('revision')} = %s"
    )


@lru_cache(maxsize=64)
def insert_entries(alias: str, count: int) -> str:
    quote = connections[alias].ops.quote_name
    names = ", ".join(quote(c) for c in ENTRY_COLUMNS)
    row = "(" + ", ".join(["%s"] * len(ENTRY_COLUMNS)) + ")"
    return f"INSERT INTO {quote(StoredEntry._meta.db_table)} ({names}) VALUES {', '.join([row] * count)}"
