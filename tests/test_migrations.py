from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import call_command
from django.db import connection


@pytest.mark.django_db
def test_makemigrations_check_is_clean() -> None:
    out = StringIO()
    call_command("makemigrations", "--check", "--dry-run", stdout=out)
    assert "No changes detected" in out.getvalue()


@pytest.mark.django_db
def test_unique_constraint_is_explicitly_named() -> None:
    from turnstate_app.models import CheckpointMetadata

    if connection.vendor == "sqlite":
        # Django's SQLite introspection cannot parse the generated column's definition.
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT sql FROM sqlite_master WHERE type = 'table' AND name = %s",
                ["turnstate_app_checkpointmetadata"],
            )
            [(sql,)] = cursor.fetchall()
        assert (
            'CONSTRAINT "turnstate_checkpoint_key_uniq" UNIQUE ("thread_id", "checkpoint_id", "key")' in sql
        )
        return
    with connection.cursor() as cursor:
        constraints = connection.introspection.get_constraints(cursor, CheckpointMetadata._meta.db_table)
    unique = {name: c["columns"] for name, c in constraints.items() if c["unique"] and not c["primary_key"]}
    assert unique.get("turnstate_checkpoint_key_uniq") == ["thread_id", "checkpoint_id", "key"]
