from __future__ import annotations

from io import StringIO
from types import SimpleNamespace

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


@pytest.mark.django_db
def test_the_claims_open_at_migration_time_get_their_claim_rows_time() -> None:
    """0009 backfills ``continuation_claimed_at`` from the claim rows, so a continuation that had
    stalled before the upgrade is still counted after it; an answer nobody claimed stays empty."""
    from importlib import import_module

    from django.apps import apps

    from tests.pause_helpers import mint
    from tests.test_status import crashed_continuation
    from turnstate_app.keys import continuation_key
    from turnstate_app.models import CheckpointMetadata, Pause
    from turnstate_app.pauses import resume_pause

    stalled = crashed_continuation(hours_ago=0)
    unclaimed = resume_pause(mint(tool_call_id="call-unclaimed").token, "yes").claims.jti
    Pause.objects.update(continuation_claimed_at=None)  # as every row was before 0009
    claim_row = CheckpointMetadata.objects.get(key=continuation_key(stalled))

    migration = import_module("turnstate_app.migrations.0009_pause_continuation_claimed_at")
    # RunPython hands it a schema editor; it only asks the editor's connection which database.
    migration.record_open_claims(apps, SimpleNamespace(connection=connection))

    claimed = dict(Pause.objects.values_list("jti", "continuation_claimed_at"))
    assert claimed == {stalled: claim_row.created_at, unclaimed: None}
