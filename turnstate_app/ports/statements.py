"""The three statements of the model port, spelled for each database.

The SQL of the port lives here and nowhere else: one upsert, one insert-if-absent,
one read, each a single statement (a value's key id and MAC travel in it, beside the value),
with table and column names taken from the model's ``_meta`` and quoted by the
connection, and values only ever as parameters.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

from django.db import connections
from django.db.models import Field

from turnstate_app.errors import InteractionConfigurationError
from turnstate_app.ports.packets import VALUE_FROM_WIRE


@dataclass(frozen=True)
class PortStatements:
    """Each statement with ``%s`` placeholders, as Django's cursor takes them."""

    read: str
    write: str
    claim: str
    values: str
    """The ``VALUES (...)`` clause both inserts share, each value's placeholder as the database takes it."""


_INSERT_FIELDS = (
    "thread_id",
    "checkpoint_id",
    "key",
    "value",
    "encryption_key_id",
    "value_mac",
    "task_id",
    "created_at",
    "updated_at",
)
_CONFLICT_FIELDS = ("thread_id", "checkpoint_id", "key")
_OVERWRITE_FIELDS = ("value", "encryption_key_id", "value_mac", "task_id", "updated_at")


@cache
def statements_for(alias: str) -> PortStatements:
    """Build (once per database alias) the statements in that database's dialect."""
    from turnstate_app.models import CheckpointMetadata

    connection = connections[alias]
    quote = connection.ops.quote_name
    meta = CheckpointMetadata._meta
    table = quote(meta.db_table)

    def column(name: str) -> str:
        field = meta.get_field(name)
        assert isinstance(field, Field) and field.column
        return quote(field.column)

    insert_columns = ", ".join(column(name) for name in _INSERT_FIELDS)
    # MariaDB/MySQL: the value travels as base64, which escaping never grows (ports/packets.py).
    value = VALUE_FROM_WIRE if connection.vendor == "mysql" else "%s"
    placeholders = ", ".join(value if name == "value" else "%s" for name in _INSERT_FIELDS)
    values = f"VALUES ({placeholders})"
    conflict = ", ".join(column(name) for name in _CONFLICT_FIELDS)
    where = " AND ".join(f"{column(name)} = %s" for name in _CONFLICT_FIELDS)
    read = (
        f"SELECT {column('value')}, {column('encryption_key_id')}, {column('value_mac')} "
        f"FROM {table} WHERE {where}"
    )
    insert = f"INTO {table} ({insert_columns}) {values}"

    if connection.vendor in ("postgresql", "sqlite"):
        overwrite = ", ".join(f"{column(name)} = EXCLUDED.{column(name)}" for name in _OVERWRITE_FIELDS)
        return PortStatements(
            read=read,
            write=f"INSERT {insert} ON CONFLICT ({conflict}) DO UPDATE SET {overwrite}",
            claim=f"INSERT {insert} ON CONFLICT ({conflict}) DO NOTHING",
            values=values,
        )
    if connection.vendor == "mysql":
        overwrite = ", ".join(f"{column(name)} = VALUES({column(name)})" for name in _OVERWRITE_FIELDS)
        return PortStatements(
            read=read,
            write=f"INSERT {insert} ON DUPLICATE KEY UPDATE {overwrite}",
            claim=f"INSERT IGNORE {insert}",
            values=values,
        )
    raise InteractionConfigurationError(
        f"ModelCheckpointCommandPort has no single-statement upsert for the {connection.vendor!r} "
        "database; use SQLite, PostgreSQL or MariaDB/MySQL, or wire another port"
    )
