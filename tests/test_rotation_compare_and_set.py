"""Rotation's compare-and-set: a row is re-encrypted only while it holds what the batch read.

The row's MAC stands for its value as read (every write stores both in one statement), so the
``UPDATE`` sends 64 characters per row instead of the whole old token. A row written meanwhile is
left as its writer wrote it (``tests/test_encryption.py``).
"""

from __future__ import annotations

import io
from typing import Any

import pytest
from django.core.management import call_command
from django.db import connection

from tests.encryption_support import KEY_A, KEY_B
from tests.pause_helpers import mint
from turnstate_app.models import CheckpointMetadata, RowKind

STORE = CheckpointMetadata._meta.db_table


def rotate(*args: str) -> str:
    out = io.StringIO()
    call_command("turnstate_rotate_keys", *args, stdout=out)
    return out.getvalue()


@pytest.mark.django_db
def test_each_rows_update_is_conditioned_on_its_mac_not_on_its_old_token(
    turnstate_settings: dict[str, Any],
) -> None:
    turnstate_settings["ENCRYPTION_KEYS"] = [KEY_A]
    for _ in range(3):
        mint()
    sealed = CheckpointMetadata.objects.exclude(kind=RowKind.OTHER)
    old = {row.pk: (row.value, row.value_mac) for row in sealed}
    turnstate_settings["ENCRYPTION_KEYS"] = [KEY_B, KEY_A]
    sent: list[tuple[Any, ...]] = []

    def record(execute: Any, sql: str, params: Any, many: bool, context: Any) -> Any:
        if many and sql.startswith("UPDATE") and STORE in sql:
            params = [tuple(row) for row in params]
            sent.extend(params)
        return execute(sql, params, many, context)

    with connection.execute_wrapper(record):
        out = rotate()
    assert f"{len(old)} row(s) re-encrypted" in out
    assert len(sent) == len(old)
    for params in sent:
        token, mac = old[params[3]]  # new value, key id, MAC, then the pk and the row as read
        assert mac in params and token not in params
