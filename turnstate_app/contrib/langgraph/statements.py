"""The saver's SQL, spelled once per database alias from the models' ``_meta``.

Every write is one statement: a multi-row insert-if-absent for channel values, an
upsert for the checkpoint, an upsert or insert-if-absent for a batch of writes
(MariaDB/MySQL cannot ``bulk_create(update_conflicts=True, unique_fields=...)``, so
the ORM is not used for these). The read of a checkpoint's channel values and
writes is one ``UNION ALL``. Values only ever travel as parameters.
"""

from __future__ import annotations

from functools import cache, lru_cache

from django.db import connections
from django.db.models import Field, Model

from turnstate_app.errors import InteractionConfigurationError

CHECKPOINT_COLUMNS = (
    "thread_id",
    "checkpoint_ns",
    "ns_hash",
    "checkpoint_id",
    "parent_checkpoint_id",
    "run_id",
    "type",
    "checkpoint",
    "encryption_key_id",
    "value_mac",
    "metadata",
    "created_at",
)
BLOB_COLUMNS = (
    "thread_id",
    "ns_hash",
    "channel",
    "version",
    "type",
    "blob",
    "encryption_key_id",
    "value_mac",
)
WRITE_COLUMNS = (
    "thread_id",
    "ns_hash",
    "checkpoint_id",
    "task_id",
    "task_path",
    "idx",
    "channel",
    "type",
    "blob",
    "encryption_key_id",
    "value_mac",
)
_CHECKPOINT_KEY = ("thread_id", "ns_hash", "checkpoint_id")
_BLOB_KEY = ("thread_id", "ns_hash", "channel", "version")
_WRITE_KEY = ("thread_id", "ns_hash", "checkpoint_id", "task_id", "idx")
_CHECKPOINT_OVERWRITE = (
    "parent_checkpoint_id",
    "run_id",
    "type",
    "checkpoint",
    "encryption_key_id",
    "value_mac",
    "metadata",
)
_WRITE_OVERWRITE = ("task_path", "channel", "type", "blob", "encryption_key_id", "value_mac")
# What a checkpoint read returns, in this order (rows.CHECKPOINT_WIDTH columns).
CHECKPOINT_SELECT = (
    "checkpoint_ns",
    "checkpoint_id",
    "parent_checkpoint_id",
    "type",
    "checkpoint",
    "encryption_key_id",
    "metadata",
    "value_mac",
)


def _models() -> tuple[type[Model], type[Model], type[Model]]:
    from turnstate_app.contrib.langgraph.models import ChannelBlob, Checkpoint, CheckpointWrite

    return Checkpoint, ChannelBlob, CheckpointWrite


class _Table:
    def __init__(self, alias: str, model: type[Model]) -> None:
        self.quote = connections[alias].ops.quote_name
        self.meta = model._meta
        self.name = self.quote(self.meta.db_table)

    def col(self, name: str) -> str:
        field = self.meta.get_field(name)
        assert isinstance(field, Field) and field.column
        return self.quote(field.column)

    def cols(self, names: tuple[str, ...]) -> str:
        return ", ".join(self.col(n) for n in names)


def _vendor(alias: str) -> str:
    vendor = connections[alias].vendor
    if vendor not in ("postgresql", "sqlite", "mysql"):
        raise InteractionConfigurationError(
            f"DjangoCheckpointSaver has no single-statement upsert for the {vendor!r} database; "
            "use SQLite, PostgreSQL or MariaDB/MySQL"
        )
    return vendor


def _rows(count: int, width: int) -> str:
    row = "(" + ", ".join(["%s"] * width) + ")"
    return ", ".join([row] * count)


def _insert(
    alias: str,
    table: _Table,
    columns: tuple[str, ...],
    key: tuple[str, ...],
    overwrite: tuple[str, ...],
    rows: int,
) -> str:
    """``rows`` rows; on a duplicate key overwrite ``overwrite`` (empty: keep the existing row)."""
    head = f"INSERT INTO {table.name} ({table.cols(columns)}) VALUES {_rows(rows, len(columns))}"
    if _vendor(alias) == "mysql":
        # A no-op assignment, not INSERT IGNORE, which would also turn real errors into warnings.
        names = overwrite or key[:1]
        sets = ", ".join(
            f"{table.col(n)} = {'VALUES(' + table.col(n) + ')' if overwrite else table.col(n)}" for n in names
        )
        return f"{head} ON DUPLICATE KEY UPDATE {sets}"
    if not overwrite:
        return f"{head} ON CONFLICT ({table.cols(key)}) DO NOTHING"
    sets = ", ".join(f"{table.col(n)} = EXCLUDED.{table.col(n)}" for n in overwrite)
    return f"{head} ON CONFLICT ({table.cols(key)}) DO UPDATE SET {sets}"


@cache
def put_checkpoint(alias: str) -> str:
    checkpoints, _, _ = _models()
    table = _Table(alias, checkpoints)
    return _insert(alias, table, CHECKPOINT_COLUMNS, _CHECKPOINT_KEY, _CHECKPOINT_OVERWRITE, 1)


@cache
def put_blobs(alias: str, rows: int) -> str:
    _, blobs, _ = _models()
    return _insert(alias, _Table(alias, blobs), BLOB_COLUMNS, _BLOB_KEY, (), rows)


@cache
def put_writes(alias: str, rows: int, overwrite: bool) -> str:
    _, _, writes = _models()
    return _insert(
        alias, _Table(alias, writes), WRITE_COLUMNS, _WRITE_KEY, _WRITE_OVERWRITE if overwrite else (), rows
    )


@cache
def put_checkpoint_and_blobs(alias: str, rows: int) -> str | None:
    """PostgreSQL: both writes as one statement (a data-modifying CTE), atomic without a transaction."""
    if _vendor(alias) != "postgresql":
        return None
    return f"WITH blobs AS ({put_blobs(alias, rows)}) {put_checkpoint(alias)}"


WRITE_SELECT = ("task_id", "task_path", "idx", "channel", "type", "blob", "encryption_key_id", "value_mac")


@cache
def get_checkpoint(alias: str, by_id: bool) -> str:
    """The newest checkpoint of a (thread, namespace), or the one with the given id, with its writes.

    One row per pending write (the write's columns NULL when it has none). Parameters:
    thread, ns_hash[, checkpoint_id], thread, ns_hash.
    """
    checkpoints, _, writes = _models()
    t, w = _Table(alias, checkpoints), _Table(alias, writes)
    where = f"WHERE {t.col('thread_id')} = %s AND {t.col('ns_hash')} = %s"
    select = f"SELECT {t.cols(CHECKPOINT_SELECT)} FROM {t.name} {where}"
    if by_id:
        head = f"{select} AND {t.col('checkpoint_id')} = %s"
    else:
        head = f"{select} ORDER BY {t.col('checkpoint_id')} DESC LIMIT 1"
    head_cols = ", ".join(f"c.{t.col(n)}" for n in CHECKPOINT_SELECT)
    write_cols = ", ".join(f"w.{w.col(n)}" for n in WRITE_SELECT)
    return (
        f"SELECT {head_cols}, {write_cols} FROM ({head}) c LEFT JOIN {w.name} w ON "
        f"w.{w.col('thread_id')} = %s AND w.{w.col('ns_hash')} = %s "
        f"AND w.{w.col('checkpoint_id')} = c.{t.col('checkpoint_id')}"
    )


@lru_cache(maxsize=256)
def list_checkpoints(
    alias: str, thread: bool, ns: bool, checkpoint_id: bool, before: bool, limit: bool
) -> str:
    """Checkpoints, newest first, narrowed by the parameters given (in this order), with their writes.

    One row per pending write, as :func:`get_checkpoint`, each led by the thread and ns_hash.
    """
    checkpoints, _, writes = _models()
    t, w = _Table(alias, checkpoints), _Table(alias, writes)
    conditions = [
        f"{t.col(column)} {op} %s"
        for given, column, op in (
            (thread, "thread_id", "="),
            (ns, "ns_hash", "="),
            (checkpoint_id, "checkpoint_id", "="),
            (before, "checkpoint_id", "<"),
        )
        if given
    ]
    where = f" WHERE {' AND '.join(conditions)}" if conditions else ""
    head = (
        f"SELECT {t.cols(('thread_id', 'ns_hash', *CHECKPOINT_SELECT))} FROM {t.name}{where} "
        f"ORDER BY {t.col('checkpoint_id')} DESC{' LIMIT %s' if limit else ''}"
    )
    head_cols = ", ".join(f"c.{t.col(n)}" for n in ("thread_id", "ns_hash", *CHECKPOINT_SELECT))
    write_cols = ", ".join(f"w.{w.col(n)}" for n in WRITE_SELECT)
    return (
        f"SELECT {head_cols}, {write_cols} FROM ({head}) c LEFT JOIN {w.name} w ON "
        f"w.{w.col('thread_id')} = c.{t.col('thread_id')} AND w.{w.col('ns_hash')} = c.{t.col('ns_hash')} "
        f"AND w.{w.col('checkpoint_id')} = c.{t.col('checkpoint_id')} "
        f"ORDER BY c.{t.col('checkpoint_id')} DESC, c.{t.col('thread_id')}, c.{t.col('ns_hash')}"
    )


@lru_cache(maxsize=512)
def get_values(alias: str, blob_groups: tuple[int, ...], write_groups: tuple[int, ...]) -> str:
    """Channel values and pending writes, grouped by (thread, namespace), in one ``UNION ALL``.

    ``blob_groups``: for each (thread, namespace), how many (channel, version) pairs follow its
    two parameters; ``write_groups``: how many checkpoint ids. Spelt as equalities on the
    unique index's leading columns (not row-value ``IN``, which SQLite would answer with a
    scan). Rows: ``(0, thread, ns_hash, channel, version, type, blob, NULL, NULL, NULL, key id, MAC)``
    for values, ``(1, thread, ns_hash, channel, checkpoint_id, type, blob, task_id, task_path, idx,
    key id, MAC)`` for writes.
    """
    _, blobs, writes = _models()
    b, w = _Table(alias, blobs), _Table(alias, writes)
    parts = []
    if blob_groups:
        pair = f"({b.col('channel')} = %s AND {b.col('version')} = %s)"
        where = " OR ".join(
            f"({b.col('thread_id')} = %s AND {b.col('ns_hash')} = %s AND ({' OR '.join([pair] * n)}))"
            for n in blob_groups
        )
        parts.append(
            f"SELECT 0, {b.cols(('thread_id', 'ns_hash', 'channel', 'version', 'type', 'blob'))}, "
            f"NULL, NULL, NULL, {b.cols(('encryption_key_id', 'value_mac'))} FROM {b.name} WHERE {where}"
        )
    if write_groups:
        where = " OR ".join(
            f"({w.col('thread_id')} = %s AND {w.col('ns_hash')} = %s AND "
            f"{w.col('checkpoint_id')} IN ({', '.join(['%s'] * n)}))"
            for n in write_groups
        )
        parts.append(
            f"SELECT 1, {w.cols(('thread_id', 'ns_hash', 'channel', 'checkpoint_id', 'type', 'blob'))}, "
            f"{w.cols(('task_id', 'task_path', 'idx', 'encryption_key_id', 'value_mac'))} "
            f"FROM {w.name} WHERE {where}"
        )
    return " UNION ALL ".join(parts)
