"""Running the saver's statements, on Django's cursor as the core runs its own.

``fetch`` and ``write`` are the core's :mod:`turnstate_app.ports.execution`; what is the
saver's own is how a batch of writes lands together.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from django.db import transaction
from django.db.backends.base.base import BaseDatabaseWrapper

from turnstate_app.ports.execution import fetch_all as fetch
from turnstate_app.ports.execution import run_statement

__all__ = ["fetch", "run_writes"]


def run_writes(connection: BaseDatabaseWrapper, batch: Sequence[tuple[str, Sequence[Any]]]) -> None:
    """Statements that land together: one alone in autocommit, else in a transaction (or a
    savepoint of the caller's, so a refused write leaves the caller's transaction usable)."""
    if len(batch) == 1 and not connection.in_atomic_block:
        run_statement(connection, *batch[0], first_row=False)
        return
    with transaction.atomic(using=connection.alias):
        for sql, params in batch:
            run_statement(connection, sql, params, first_row=False)
