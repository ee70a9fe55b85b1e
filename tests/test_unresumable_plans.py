"""A list of one kind of stranded pause starts from those pauses, not from the request rows.

The admin's reason filters ``stored`` and ``no_turn_state`` list pauses the ledger holds as
answerable; the store's recent request rows (thousands a day on a busy store, nearly all of them
resumable) are not theirs to read. Planned on PostgreSQL with sequential scans disabled, as
``tests/test_state_plans.py`` plans every figure and list.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from datetime import timedelta
from typing import Any, cast

import pytest
from django.db import connection
from django.test import Client
from django.utils import timezone

from tests.factories import PauseFactory
from tests.test_state_plans import LEDGER_TABLES, READ_AND_DROPPED, statements_of, unbounded_reads
from turnstate_app.choices import ContinuationState, PauseStatus
from turnstate_app.keys import TURN_STATE_KEY_PREFIX
from turnstate_app.managers import UNRESUMABLE_KINDS, CheckpointMetadataQuerySet
from turnstate_app.models import (
    UNRESUMABLE_NO_LEDGER,
    UNRESUMABLE_NO_TURN_STATE,
    CheckpointMetadata,
    Pause,
    UnresumablePause,
)

pytestmark = pytest.mark.django_db

RECENT = 4 * READ_AND_DROPPED
"""Pauses asked today and answered, each with its request and turn-state rows: the rows of the
window a reason filter of stranded pauses must not read."""
STORED_REASON = "checkpoints deleted (a test): the run cannot be continued from this store"


def seed() -> dict[str, str | None]:
    """Many resumable pauses of today around one of each unresumable kind; thread -> jti listed."""
    now = timezone.now()
    answered = [
        PauseFactory.build(
            status=PauseStatus.ANSWERED,
            answered_at=now,
            handed_off_at=now,
            continuation=ContinuationState.CONTINUED,
            continuation_since=now,
        )
        for _ in range(RECENT)
    ]
    lost = PauseFactory.build(thread_id="stranded-lost")
    stored = PauseFactory.build(thread_id="stranded-stored", unresumable_reason=STORED_REASON)
    Pause.objects.bulk_create([*answered, lost, stored])
    rows = [
        CheckpointMetadata(thread_id=p.thread_id, checkpoint_id=p.checkpoint_id, key=key, value="{}")
        for p in [*answered, lost, stored]
        for key in (p.request_key, f"{TURN_STATE_KEY_PREFIX}{p.jti}")
        if not (p is lost and key.startswith(TURN_STATE_KEY_PREFIX))
    ]
    rows.append(
        CheckpointMetadata(thread_id="legacy", checkpoint_id="cp", key="interrupt_payload:1", value="{}")
    )
    CheckpointMetadata.objects.bulk_create(rows)
    listed: dict[str, str | None] = {"stranded-lost": lost.jti, "stranded-stored": stored.jti, "legacy": None}
    if connection.vendor != "postgresql":  # the statistics the plan test needs
        return listed
    with connection.cursor() as cursor:
        for table in LEDGER_TABLES:
            cursor.execute(f"ANALYZE {connection.ops.quote_name(table)}")
    return listed


def shown(kind: str | None = None) -> set[tuple[str, str | None, str]]:
    """(thread, jti, reason) of each row of the list of ``kind`` (None: the whole list), as the
    admin's reason filter makes it."""
    rows = cast(
        "Iterable[UnresumablePause]", CheckpointMetadataQuerySet(UnresumablePause).unresumable(reason=kind)
    )
    return {(row.thread_id, row.jti, row.reason) for row in rows}


def test_each_kind_lists_its_rows_and_the_whole_list_all_three() -> None:
    listed = seed()
    by_kind = {kind: shown(kind) for kind in UNRESUMABLE_KINDS}
    assert by_kind == {
        "no_ledger": {("legacy", None, UNRESUMABLE_NO_LEDGER)},
        "no_turn_state": {("stranded-lost", listed["stranded-lost"], UNRESUMABLE_NO_TURN_STATE)},
        "stored": {("stranded-stored", listed["stranded-stored"], STORED_REASON)},
    }
    assert shown() == set().union(*by_kind.values())
    with pytest.raises(ValueError, match="unknown unresumable kind"):
        shown("other")


@pytest.mark.parametrize(
    ("kind", "thread"), [("stored", "stranded-stored"), ("no_turn_state", "stranded-lost")]
)
def test_the_admin_s_reason_filter_lists_the_kind(admin_client: Client, kind: str, thread: str) -> None:
    listed = seed()
    page = admin_client.get("/admin/turnstate_app/unresumablepause/", {"reason": kind})
    assert [(row.thread_id, row.jti) for row in page.context["cl"].result_list] == [(thread, listed[thread])]
    searched = admin_client.get("/admin/turnstate_app/unresumablepause/", {"reason": kind, "q": "legacy"})
    assert list(searched.context["cl"].result_list) == []
    for age, rows in (("1h", [(thread, listed[thread])]), ("gt7d", [])):  # the other filter still applies
        page = admin_client.get("/admin/turnstate_app/unresumablepause/", {"reason": kind, "age": age})
        assert [(row.thread_id, row.jti) for row in page.context["cl"].result_list] == rows


@pytest.mark.skipif(connection.vendor != "postgresql", reason="the plans are PostgreSQL's")
@pytest.mark.parametrize("kind", ["stored", "no_turn_state"])
def test_a_stranded_kind_reads_its_pauses_not_the_window_s_request_rows(
    admin_client: Client, kind: str
) -> None:
    seed()
    statements = statements_of(
        lambda: admin_client.get("/admin/turnstate_app/unresumablepause/", {"reason": kind})
    )
    assert statements, "the page ran no statement on the ledger or the store"
    found: dict[str, Any] = {}
    for sql, params in statements:
        reads = unbounded_reads(sql, params)
        if reads:
            found[sql[:200]] = reads
    assert not found, json.dumps(found, indent=1)


def test_the_request_rows_of_today_are_in_the_window() -> None:
    """The seed's request rows are the window's (else the plan test above would prove nothing)."""
    seed()
    today = CheckpointMetadata.objects.requests().filter(created_at__gte=timezone.now() - timedelta(hours=1))
    assert today.count() == RECENT + 3
