"""The durable port: rows in :class:`~turnstate_app.models.CheckpointMetadata`.

Each write is one statement (an upsert, or an insert-if-absent whose rowcount names
the single winner), so concurrent writers in any number of processes never lose a
write or both win a claim. The sync twins exist so sync Django code pays no
``async_to_sync`` bridge; each async method is exactly one thread hop over its twin.

Inside a caller's open transaction each write runs in its own savepoint, so a
refused write leaves that transaction usable. Such a write has landed only once the
caller commits.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from asgiref.sync import sync_to_async
from django.db import connections, router, transaction
from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.backends.utils import CursorWrapper
from django.utils import timezone

from turnstate_app.conf import conf
from turnstate_app.ports.limits import check_row_ids, check_write
from turnstate_app.ports.statements import statements_for


class _PreparingCursor:
    """A server-binding psycopg cursor that asks for a prepared statement on each execute.

    Handed to Django's own cursor wrappers, so execute wrappers, query logging and
    error translation see every statement exactly as they see the ORM's.
    """

    def __init__(self, cursor: Any) -> None:
        self._cursor = cursor

    def execute(self, sql: str, params: Any = None) -> Any:
        return self._cursor.execute(sql, params, prepare=True)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._cursor, name)


def _model() -> Any:
    from turnstate_app.models import CheckpointMetadata

    return CheckpointMetadata


class ModelCheckpointCommandPort:
    """Durable port over the app's model, in whichever database the router picks."""

    durable = True

    def __init__(self) -> None:
        # One thread hop each, built once: thread-sensitive, so every call shares the
        # connection (and any transaction) of the sync code that started the loop.
        self._read = sync_to_async(self.read_metadata_sync, thread_sensitive=True)
        self._write = sync_to_async(self.write_metadata_sync, thread_sensitive=True)
        self._claim = sync_to_async(self.claim_metadata_sync, thread_sensitive=True)

    # -- the port -------------------------------------------------------------------

    async def read_metadata(self, *, thread_id: str, checkpoint_id: str, key: str) -> str | None:
        return await self._read(thread_id=thread_id, checkpoint_id=checkpoint_id, key=key)

    async def write_metadata(
        self, *, thread_id: str, checkpoint_id: str, key: str, value: str, task_id: str | None
    ) -> None:
        await self._write(
            thread_id=thread_id, checkpoint_id=checkpoint_id, key=key, value=value, task_id=task_id
        )

    async def claim_metadata(
        self, *, thread_id: str, checkpoint_id: str, key: str, value: str, task_id: str | None
    ) -> bool:
        return await self._claim(
            thread_id=thread_id, checkpoint_id=checkpoint_id, key=key, value=value, task_id=task_id
        )

    # -- sync twins -------------------------------------------------------------

    def read_metadata_sync(self, *, thread_id: str, checkpoint_id: str, key: str) -> str | None:
        alias = router.db_for_read(_model())
        connection = connections[alias]
        check_row_ids(thread_id, checkpoint_id, key, vendor=connection.vendor)
        with self._cursor(connection) as cursor:
            cursor.execute(statements_for(alias).read, (thread_id, checkpoint_id, key))
            row = cursor.fetchone()
        return None if row is None else row[0]

    def write_metadata_sync(
        self, *, thread_id: str, checkpoint_id: str, key: str, value: str, task_id: str | None
    ) -> None:
        self._insert("write", thread_id, checkpoint_id, key, value, task_id)

    def claim_metadata_sync(
        self, *, thread_id: str, checkpoint_id: str, key: str, value: str, task_id: str | None
    ) -> bool:
        return self._insert("claim", thread_id, checkpoint_id, key, value, task_id) == 1

    # -- internals --------------------------------------------------------------

    def _insert(
        self,
        statement: str,
        thread_id: str,
        checkpoint_id: str,
        key: str,
        value: str,
        task_id: str | None,
    ) -> int:
        alias = router.db_for_write(_model())
        connection = connections[alias]
        check_write(
            thread_id,
            checkpoint_id,
            key,
            value,
            task_id,
            vendor=connection.vendor,
            max_bytes=conf.MAX_VALUE_BYTES,
        )
        now = connection.ops.adapt_datetimefield_value(timezone.now())
        params = (thread_id, checkpoint_id, key, value, task_id, now, now)
        sql = getattr(statements_for(alias), statement)
        with (
            self._savepoint_if_in_transaction(connection, alias),
            self._cursor(connection) as cursor,
        ):
            cursor.execute(sql, params)
            return int(cursor.rowcount)

    @staticmethod
    @contextmanager
    def _savepoint_if_in_transaction(connection: BaseDatabaseWrapper, alias: str) -> Iterator[None]:
        if connection.in_atomic_block:
            with transaction.atomic(using=alias):
                yield
        else:
            yield

    @staticmethod
    def _cursor(connection: BaseDatabaseWrapper) -> CursorWrapper:
        """Django's cursor, or on PostgreSQL one that prepares its statements."""
        if connection.vendor != "postgresql" or not conf.PREPARED_STATEMENTS:
            return connection.cursor()
        import psycopg

        connection.ensure_connection()
        connection.validate_thread_sharing()
        raw = _PreparingCursor(psycopg.Cursor(connection.connection))
        if connection.queries_logged:
            return connection.make_debug_cursor(raw)  # type: ignore[arg-type]
        return connection.make_cursor(raw)  # type: ignore[arg-type]
