"""The one unresumable query every operator face uses."""

from __future__ import annotations

from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from tests.pause_helpers import legacy_request, lose_turn_state, lost, mint
from turnstate_app.models import (
    UNRESUMABLE_NO_LEDGER,
    UNRESUMABLE_NO_TURN_STATE,
    CheckpointMetadata,
    Pause,
    RowKind,
    UnresumablePause,
)
from turnstate_app.pauses import resume_pause
from turnstate_app.ports import ModelCheckpointCommandPort

pytestmark = pytest.mark.django_db(transaction=True)


def test_kind_is_computed_by_the_database() -> None:
    port = ModelCheckpointCommandPort()
    for key in (
        "ask_user_request:a",
        "interrupt_payload:b",
        "turn_state:c",
        "answer:d",
        "other",
        "ASK_USER_REQUEST:x",
    ):
        port.write_metadata_sync(thread_id="t", checkpoint_id="c", key=key, value="v", task_id=None)
    kinds = dict(CheckpointMetadata.objects.values_list("key", "kind"))
    assert kinds == {
        "ask_user_request:a": RowKind.REQUEST,
        "interrupt_payload:b": RowKind.REQUEST,
        "turn_state:c": RowKind.TURN_STATE,
        "answer:d": RowKind.ANSWER,
        "other": RowKind.OTHER,
        "ASK_USER_REQUEST:x": RowKind.OTHER,
    }


def test_both_kinds_are_listed_and_nothing_else(turnstate_settings: dict[str, Any]) -> None:
    resumable = mint(1)
    answered = mint(2)
    resume_pause(answered.token, "x")
    lost = mint(3)
    lose_turn_state(lost)
    lost_but_answered = mint(4)
    lose_turn_state(lost_but_answered)
    resume_pause(lost_but_answered.token, "x")
    turnstate_settings["PORT"] = "tests.pause_helpers.TurnStateFailsPort"
    failed = mint(5)
    legacy_request(6)

    rows = {(row.thread_id, row.jti, row.reason) for row in UnresumablePause.objects.all()}
    assert rows == {
        ("thread-3", lost.claims.jti, UNRESUMABLE_NO_TURN_STATE),
        ("thread-5", failed.claims.jti, UNRESUMABLE_NO_TURN_STATE),
        ("legacy-6", None, UNRESUMABLE_NO_LEDGER),
    }
    assert resumable.claims.jti not in {jti for _, jti, _ in rows}


def test_a_retried_call_sharing_a_request_key_is_judged_by_its_pending_pause() -> None:
    first = mint(1)
    resume_pause(first.token, "x")
    retry = mint(1)  # same thread, checkpoint and tool call: the same request row
    assert not UnresumablePause.objects.exists()
    lose_turn_state(retry)
    [row] = UnresumablePause.objects.all()
    assert row.jti == retry.claims.jti


@pytest.mark.parametrize("rows", [3, 30])
def test_listing_costs_one_query_whatever_the_rows(rows: int) -> None:
    for n in range(rows):
        legacy_request(n)
        lost(n)
    with CaptureQueriesContext(connection) as queries:
        listed = [(row.key, row.jti, row.reason) for row in UnresumablePause.objects.order_by("created_at")]
    assert len(listed) == 2 * rows
    assert len(queries.captured_queries) == 1
    assert Pause.objects.count() == rows


def test_a_reason_stored_on_the_ledger_row_lists_the_pause_with_that_reason(admin_client: Any) -> None:
    """What an integration records when it deleted a pending pause's checkpoints (the LangGraph
    saver's delete_thread): the turn state is still there, the pause is listed all the same."""
    stranded, answered, other = mint(1), mint(2), mint(3)
    resume_pause(answered.token, "x")
    reason = "checkpoints deleted (a test): the run cannot be continued from this store"
    marked = Pause.objects.filter(jti__in=[stranded.claims.jti, answered.claims.jti]).mark_unresumable(reason)
    assert marked == 1  # only a pending pause; its first reason stays
    assert Pause.objects.filter(jti=stranded.claims.jti).mark_unresumable("later") == 0

    [row] = UnresumablePause.objects.all()
    assert (row.jti, row.reason, row.stored_reason) == (stranded.claims.jti, reason, reason)
    lose_turn_state(other)
    assert {row.jti: row.reason for row in UnresumablePause.objects.all()} == {
        stranded.claims.jti: reason,
        other.claims.jti: UNRESUMABLE_NO_TURN_STATE,
    }

    page = admin_client.get("/admin/turnstate_app/unresumablepause/", {"reason": "stored"})
    assert [r.jti for r in page.context["cl"].result_list] == [stranded.claims.jti]
    assert b"checkpoints deleted" in page.content
    page = admin_client.get("/admin/turnstate_app/unresumablepause/", {"reason": "no_turn_state"})
    assert [r.jti for r in page.context["cl"].result_list] == [other.claims.jti]
    pause = Pause.objects.get(jti=stranded.claims.jti)
    change = admin_client.get(f"/admin/turnstate_app/pause/{pause.pk}/change/")
    assert reason.encode() in change.content
