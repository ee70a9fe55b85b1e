"""The one unresumable query every operator face uses."""

from __future__ import annotations

import json
from datetime import timedelta
from io import StringIO
from typing import Any

import pytest
from django.core.management import call_command
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from tests.pause_helpers import legacy_request, lose_turn_state, lost, mint
from turnstate_app.checkpoints import payload_key
from turnstate_app.conf import conf
from turnstate_app.models import (
    UNRESUMABLE_NO_LEDGER,
    UNRESUMABLE_NO_TURN_STATE,
    CheckpointMetadata,
    Pause,
    RowKind,
    UnresumablePause,
)
from turnstate_app.pauses import MintedPause, resume_pause
from turnstate_app.ports import ModelCheckpointCommandPort
from turnstate_app.status import lifecycle_status

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
def test_listing_costs_two_queries_whatever_the_rows(rows: int) -> None:
    """Where the rows start (the oldest request row of a stranded pause), then the rows."""
    for n in range(rows):
        legacy_request(n)
        lost(n)
    with CaptureQueriesContext(connection) as queries:
        listed = [(row.key, row.jti, row.reason) for row in UnresumablePause.objects.order_by("created_at")]
    assert len(listed) == 2 * rows
    assert len(queries.captured_queries) == 2
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


# -- the window: a request row is listed while a pause for it could still be answered ----------


def ask_long_ago(row: CheckpointMetadata | MintedPause, seconds: int) -> None:
    """Move a request row's ``created_at`` ``seconds`` into the past (a pause's, or a legacy row)."""
    rows = CheckpointMetadata.objects.all()
    if isinstance(row, MintedPause):
        rows = rows.filter(thread_id=row.claims.thread_id, key=payload_key(row.claims))
    else:
        rows = rows.filter(pk=row.pk)
    assert rows.update(created_at=timezone.now() - timedelta(seconds=seconds)) == 1


def listed_everywhere(admin_client: Any) -> dict[str, set[tuple[str, str | None]]]:
    """(thread, jti) of each unresumable row as the manager, the admin page, REST and the command list it."""
    page = admin_client.get("/admin/turnstate_app/unresumablepause/")
    rest = admin_client.get("/api/turnstate/pauses/unresumable/")
    assert rest.status_code == 200 and rest.json()["next"] is None
    out = StringIO()
    call_command("turnstate_unresumable", "--json", stdout=out)
    return {
        "manager": {(row.thread_id, row.jti) for row in UnresumablePause.objects.all()},
        "admin": {(row.thread_id, row.jti) for row in page.context["cl"].result_list},
        "rest": {(row["thread_id"], row["jti"]) for row in rest.json()["results"]},
        "command": {(row["thread_id"], row["jti"]) for row in json.loads(out.getvalue())["results"]},
    }


def test_a_request_row_no_pause_owns_is_listed_only_while_a_token_for_it_could_verify(
    admin_client: Any,
) -> None:
    """Past ``TOKEN_MAX_AGE`` no token for an unowned request row can be answered: like an
    expired pause, it is not listed by any face; one inside that age is, and so are stranded
    pauses."""
    max_age = conf.TOKEN_MAX_AGE
    ask_long_ago(legacy_request(1), max_age + 3600)
    ask_long_ago(legacy_request(2), max_age - 3600)
    stranded = lost(3)
    expected = {("legacy-2", None), ("thread-3", stranded.claims.jti)}
    assert listed_everywhere(admin_client) == dict.fromkeys(("manager", "admin", "rest", "command"), expected)


def test_a_stranded_pause_is_listed_whatever_the_age_of_its_request_row(
    admin_client: Any, turnstate_settings: dict[str, Any]
) -> None:
    """Its request row can be older than ``TOKEN_MAX_AGE``: written for an earlier pause of the
    same tool call (a retry rewrites the row, its ``created_at`` stays), or the setting was
    lowered after the mint. While the pause is answerable, it is listed."""
    first = mint(1)
    resume_pause(first.token, "x")
    ask_long_ago(first, 30 * 24 * 3600)  # the first ask, a month ago
    retry = lost(1)  # same thread, checkpoint and tool call: the same request row
    earlier = lost(2)
    turnstate_settings["TOKEN_MAX_AGE"] = 60  # lowered since: `earlier` keeps its expires_at
    ask_long_ago(earlier, 3600)
    expected = {("thread-1", retry.claims.jti), ("thread-2", earlier.claims.jti)}
    assert listed_everywhere(admin_client) == dict.fromkeys(("manager", "admin", "rest", "command"), expected)
    assert lifecycle_status().unresumable == 2  # the figure counts the same ledger pauses
