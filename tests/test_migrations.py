from __future__ import annotations

from datetime import UTC, datetime, timedelta
from io import StringIO
from typing import Any

import pytest
from django.core.management import call_command
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from turnstate_app.status import lifecycle_status


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


# -- 0011: the after-answer columns and claim rows become one state --------------------------

BEFORE = [("turnstate_app", "0010_encryption_key_id")]
STATE = [("turnstate_app", "0011_pause_continuation_state")]
CLAIM_PREFIX = "continuation:"  # the claim rows' keys before 0011


def migrate_to(targets: list[tuple[str, str]]) -> tuple[Any, Any]:
    """Migrate the test database to ``targets`` (forwards or backwards); the historical models
    of Pause and CheckpointMetadata there."""
    MigrationExecutor(connection).migrate(targets)
    apps = MigrationExecutor(connection).loader.project_state(targets).apps
    return apps.get_model("turnstate_app", "Pause"), apps.get_model("turnstate_app", "CheckpointMetadata")


def migrate_to_latest() -> None:
    executor = MigrationExecutor(connection)
    executor.migrate(executor.loader.graph.leaf_nodes())
    executor = MigrationExecutor(connection)
    assert executor.migration_plan(executor.loader.graph.leaf_nodes()) == []


T0 = datetime.now(UTC).replace(microsecond=0) - timedelta(days=2)
ANSWERED = T0 + timedelta(minutes=1)
HANDED = T0 + timedelta(minutes=2)
CLAIMED = T0 + timedelta(minutes=3)
CONTINUED = T0 + timedelta(minutes=4)
REASON = "the question changed since it was asked"

OLD_COMBINATIONS: dict[str, dict[str, Any]] = {
    "answered": {},
    "handed": {"handed_off_at": HANDED},
    "claimed": {"continuation_claimed_at": CLAIMED},
    "claimed_handed": {"continuation_claimed_at": CLAIMED, "handed_off_at": HANDED},
    "claim_row": {},  # only a continuation:<jti> row says it was claimed, no claimed_at
    "claim_row_handed": {"handed_off_at": HANDED},  # the same, handed off
    "claimed_and_claim_row": {"continuation_claimed_at": CLAIMED},  # both: the column wins
    "continued": {"continued_at": CONTINUED, "handed_off_at": HANDED},
    "continued_claimed": {"continued_at": CONTINUED, "continuation_claimed_at": CLAIMED},
    "continued_claim_row": {"continued_at": CONTINUED, "continuation_claimed_at": CLAIMED},
    "failure": {"continuation_failure": REASON},
    "failure_claimed": {"continuation_failure": REASON, "continuation_claimed_at": CLAIMED},
}
"""Every combination of the old after-answer columns an answered pause could hold."""
WITH_CLAIM_ROW = ("claim_row", "claim_row_handed", "claimed_and_claim_row", "continued_claim_row")

NEW_ONLY: dict[str, dict[str, Any]] = {
    "failed": {"continuation": "failed", "continuation_reason": "no TURNSTATE['AGENTS'] entry"},
    "failed_no_reason": {"continuation": "failed"},
    "crashed": {"continuation": "crashed", "continuation_reason": "RuntimeError: boom"},
}
"""States no old column could tell apart: written after 0011, then migrated back."""


def ledger_row(pause_model: Any, jti: str, *, status: str = "answered", **fields: Any) -> None:
    """A ledger row as the build of ``pause_model``'s migration wrote it."""
    pause_model.objects.create(
        jti=jti,
        run_id=f"run-{jti}",
        session_id="s",
        thread_id=f"thread-{jti}",
        checkpoint_id="cp",
        scope_hash="h",
        request_key=f"ask_user_request:call-{jti}",
        resumable=True,
        status=status,
        answered_at=ANSWERED if status == "answered" else None,
        expires_at=T0 + timedelta(days=7),
        **fields,
    )


def store_row(row_model: Any, jti: str, key: str) -> None:
    row_model.objects.create(thread_id=f"thread-{jti}", checkpoint_id="cp", key=key, value="{}")


def columns(pause_model: Any, *names: str) -> dict[str, tuple[Any, ...]]:
    return {jti: tuple(rest) for jti, *rest in pause_model.objects.values_list("jti", *names)}


AFTER_ANSWER = ("awaiting_handoff", "queued", "running", "stalled", "failed_continuations")
STATE_COLUMNS = ("continuation", "continuation_since", "continuation_reason", "continuation_attempts")
OLD_COLUMNS = ("continued_at", "continuation_failure", "continuation_claimed_at")


@pytest.mark.django_db(transaction=True)
def test_0011_moves_every_old_combination_to_one_state_and_back() -> None:
    """The real migrations, forwards and back: every combination of the old columns and claim
    rows lands in one state (claimed and unfinished: running since the claim, so a dead one shows
    as stalled), the claim rows go and the store's other rows stay, ``handed_off_at`` is kept;
    backwards, the old columns say again what the state said."""
    try:
        pause_model, row_model = migrate_to(BEFORE)
        ledger_row(pause_model, "pending", status="pending")
        ledger_row(pause_model, "expired", status="expired")
        for jti, fields in OLD_COMBINATIONS.items():
            ledger_row(pause_model, jti, **fields)
            store_row(row_model, jti, f"answer:{jti}")
        for jti in WITH_CLAIM_ROW:
            store_row(row_model, jti, CLAIM_PREFIX + jti)
        claimed_at = {
            key.removeprefix(CLAIM_PREFIX): created
            for key, created in row_model.objects.filter(key__startswith=CLAIM_PREFIX).values_list(
                "key", "created_at"
            )
        }
        other_rows = set(
            row_model.objects.exclude(key__startswith=CLAIM_PREFIX).values_list("key", flat=True)
        )
        assert claimed_at.keys() == set(WITH_CLAIM_ROW) and len(other_rows) == len(OLD_COMBINATIONS)

        pause_model, row_model = migrate_to(STATE)
        moved = {
            "pending": (None, None, None, 0, None),
            "expired": (None, None, None, 0, None),
            "answered": ("queued", ANSWERED, None, 0, None),
            "handed": ("queued", ANSWERED, None, 0, HANDED),
            "claimed": ("running", CLAIMED, None, 1, None),
            "claimed_handed": ("running", CLAIMED, None, 1, HANDED),
            "claim_row": ("running", claimed_at["claim_row"], None, 1, None),
            "claim_row_handed": ("running", claimed_at["claim_row_handed"], None, 1, HANDED),
            "claimed_and_claim_row": ("running", CLAIMED, None, 1, None),
            "continued": ("continued", CONTINUED, None, 0, HANDED),
            "continued_claimed": ("continued", CONTINUED, None, 0, None),
            "continued_claim_row": ("continued", CONTINUED, None, 0, None),
            "failure": ("refused", ANSWERED, REASON, 0, None),
            "failure_claimed": ("refused", CLAIMED, REASON, 0, None),
        }
        assert columns(pause_model, *STATE_COLUMNS, "handed_off_at") == moved
        assert not pause_model.objects.filter(continuation_retry_at__isnull=False).exists()
        assert not row_model.objects.filter(key__startswith=CLAIM_PREFIX).exists()
        assert set(row_model.objects.values_list("key", flat=True)) == other_rows
        for jti, fields in NEW_ONLY.items():
            ledger_row(pause_model, jti, continuation_since=CLAIMED, continuation_attempts=1, **fields)

        pause_model, row_model = migrate_to(BEFORE)
        assert columns(pause_model, *OLD_COLUMNS, "handed_off_at") == {
            "pending": (None, None, None, None),
            "expired": (None, None, None, None),
            "answered": (None, None, None, None),
            "handed": (None, None, None, HANDED),
            "claimed": (None, None, CLAIMED, None),
            "claimed_handed": (None, None, CLAIMED, HANDED),
            "claim_row": (None, None, claimed_at["claim_row"], None),
            "claim_row_handed": (None, None, claimed_at["claim_row_handed"], HANDED),
            "claimed_and_claim_row": (None, None, CLAIMED, None),
            "continued": (CONTINUED, None, None, HANDED),
            "continued_claimed": (CONTINUED, None, None, None),
            "continued_claim_row": (CONTINUED, None, None, None),
            "failure": (None, REASON, None, None),
            "failure_claimed": (None, REASON, None, None),
            # nothing of a failed one ran, but no old column says "retry": it is held, never rerun
            "failed": (None, "no TURNSTATE['AGENTS'] entry", None, None),
            "failed_no_reason": (None, "failed", None, None),
            "crashed": (None, "RuntimeError: boom", None, None),
        }

        pause_model, row_model = migrate_to(STATE)  # and forwards again: the same states
        again = columns(pause_model, *STATE_COLUMNS, "handed_off_at")
        # (a refused one's claim time was not kept: it is refused since its answer now)
        assert {jti: again[jti] for jti in moved} == moved | {
            "failure_claimed": ("refused", ANSWERED, REASON, 0, None)
        }
        assert {jti: again[jti][:3] for jti in NEW_ONLY} == {
            "failed": ("refused", ANSWERED, "no TURNSTATE['AGENTS'] entry"),
            "failed_no_reason": ("refused", ANSWERED, "failed"),
            "crashed": ("refused", ANSWERED, "RuntimeError: boom"),
        }

        migrate_to_latest()  # what operators read of them now: a claim that never ended is stalled
        figures = lifecycle_status().as_dict()
        assert {name: figures[name] for name in AFTER_ANSWER} == {
            "awaiting_handoff": 1,  # answered
            "queued": 1,  # handed
            "running": 2,  # claim_row, claim_row_handed: their claim rows were written a moment ago
            "stalled": 3,  # claimed, claimed_handed, claimed_and_claim_row: claimed two days ago
            "failed_continuations": 5,  # failure, failure_claimed, and the three refused on the way back
        }
    finally:
        migrate_to_latest()
