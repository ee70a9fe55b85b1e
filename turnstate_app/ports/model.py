"""The durable port: rows in :class:`~turnstate_app.models.CheckpointMetadata`.

Each write is one statement (an upsert, or an insert-if-absent whose rowcount names
the single winner), so concurrent writers in any number of processes never lose a
write or both win a claim. Each row carries its MAC (:mod:`turnstate_app.ports.sealing`),
written in the same statement as its value and verified on every read before the value
is used. The sync twins exist so sync Django code pays no
``async_to_sync`` bridge; each async method is exactly one thread hop over its twin.

Inside a caller's open transaction each write runs in its own savepoint, so a
refused write leaves that transaction usable. Such a write has landed only once the
caller commits. The lifecycle's own transactions, which roll back whole when any of
their writes fails, opt out of that savepoint (:func:`whole_transaction_writes`).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from asgiref.sync import sync_to_async
from django.db import connections, router, transaction
from django.utils import timezone

from turnstate_app.conf import conf
from turnstate_app.ports.execution import run_statement
from turnstate_app.ports.limits import require_row_ids, require_write
from turnstate_app.ports.packets import require_fits_packet, to_wire
from turnstate_app.ports.sealing import read_row, stored_row
from turnstate_app.ports.statements import statements_for

_read_primary: ContextVar[bool] = ContextVar("turnstate_read_primary", default=False)
_whole_transaction: ContextVar[bool] = ContextVar("turnstate_whole_transaction", default=False)


@contextmanager
def reading_primary() -> Iterator[None]:
    """Within this block the model port reads the database it writes to, not the router's read alias.

    For decisions that must not meet a lagging replica: a resume that read an empty replica
    would report a recorded pause as lost. The port's protocol is unchanged.
    """
    token = _read_primary.set(True)
    try:
        yield
    finally:
        _read_primary.reset(token)


@contextmanager
def whole_transaction_writes() -> Iterator[None]:
    """Within this block the model port writes without a savepoint of its own.

    Only for a transaction that its owner rolls back whole when any write in it fails (the
    lifecycle's mint and resume): there the savepoint would keep nothing usable and costs
    two statements (two round trips on a network database).
    """
    token = _whole_transaction.set(True)
    try:
        yield
    finally:
        _whole_transaction.reset(token)


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

    def write_alias(self) -> str:
        """The database this port writes to, as the router picks it."""
        return router.db_for_write(_model())

    # -- sync twins -------------------------------------------------------------

    def read_metadata_sync(self, *, thread_id: str, checkpoint_id: str, key: str) -> str | None:
        alias = router.db_for_write(_model()) if _read_primary.get() else router.db_for_read(_model())
        connection = connections[alias]
        require_row_ids(thread_id, checkpoint_id, key, vendor=connection.vendor)
        _, row = run_statement(connection, statements_for(alias).read, (thread_id, checkpoint_id, key))
        if row is None:
            return None
        return read_row(thread_id, checkpoint_id, key, str(row[0]), row[1], row[2])

    def write_metadata_sync(
        self, *, thread_id: str, checkpoint_id: str, key: str, value: str, task_id: str | None
    ) -> None:
        self._insert("write", thread_id, checkpoint_id, key, value, task_id)

    def claim_metadata_sync(
        self, *, thread_id: str, checkpoint_id: str, key: str, value: str, task_id: str | None
    ) -> bool:
        return self._insert("claim", thread_id, checkpoint_id, key, value, task_id) == 1

    def release_metadata_sync(self, *, thread_id: str, checkpoint_id: str, key: str, value: str) -> bool:
        """Delete the row at this place only while it still holds ``value``: True when this call did.

        Not part of the contract's port: how a claim (a thread's turn, a continuation) is given
        back, or taken over from a holder that is gone, without deleting a newer holder's row.
        """
        alias = router.db_for_write(_model())
        require_row_ids(thread_id, checkpoint_id, key, vendor=connections[alias].vendor)
        rows = _model().objects.using(alias).filter(thread_id=thread_id, checkpoint_id=checkpoint_id, key=key)
        deleted: int = rows.filter(value=value).delete()[0]
        return deleted > 0

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
        vendor = connection.vendor
        require_write(
            thread_id, checkpoint_id, key, value, task_id, vendor=vendor, max_bytes=conf.MAX_VALUE_BYTES
        )
        now = connection.ops.adapt_datetimefield_value(timezone.now())
        sql = getattr(statements_for(alias), statement)
        value, key_id, mac = stored_row(thread_id, checkpoint_id, key, value)
        if vendor == "mysql":  # as base64, which escaping cannot grow past the packet
            params = (thread_id, checkpoint_id, key, to_wire(value), key_id, mac, task_id, now, now)
            require_fits_packet(connection, sql, params)
        else:
            params = (thread_id, checkpoint_id, key, value, key_id, mac, task_id, now, now)
        if not connection.in_atomic_block or _whole_transaction.get():
            return run_statement(connection, sql, params, first_row=False)[0]
        # Inside the caller's transaction: a savepoint, so a refused write leaves it usable.
        with transaction.atomic(using=alias):
            return run_statement(connection, sql, params, first_row=False)[0]


_DEFINED_WRITE = ModelCheckpointCommandPort.write_metadata_sync


def writes_as_defined(port: object) -> bool:
    """Whether ``port``'s sync write is this module's own, not a subclass's or a patched one.

    A statement that writes a row on the port's behalf (the resume's consume-and-answer on
    PostgreSQL) is taken only then, so an override of the write always runs.
    """
    return getattr(type(port), "write_metadata_sync", None) is _DEFINED_WRITE
