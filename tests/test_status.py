"""``turnstate_status`` and ``GET status/``: the figures an operator is paged on, each one bounded query."""

from __future__ import annotations

import json
from datetime import timedelta
from io import StringIO
from typing import Any

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from tests.api_support import client_for
from tests.factories import UserFactory
from tests.pause_helpers import answered, lost, mint
from turnstate_app.models import CheckpointMetadata, Pause
from turnstate_app.pauses import Continuation, ContinuationRefused, continue_once, resume_pause
from turnstate_app.status import lifecycle_status

pytestmark = pytest.mark.django_db

STATUS = "/api/turnstate/status/"


def crashed_continuation(hours_ago: float) -> str:
    """An answered pause whose continuation was claimed ``hours_ago`` and never returned."""
    resumed = resume_pause(mint().token, "yes")

    def crash(continuation: Continuation) -> None:
        raise RuntimeError("the worker died mid-run")

    with pytest.raises(RuntimeError):
        continue_once(resumed, crash)
    Pause.objects.filter(jti=resumed.claims.jti).update(
        continuation_claimed_at=timezone.now() - timedelta(hours=hours_ago)
    )
    return resumed.claims.jti


def refused_continuation(group: str | None = None) -> str:
    resumed = resume_pause(mint(group=group).token, "yes")

    def refuse(continuation: Continuation) -> None:
        raise ContinuationRefused("the interrupt moved on")

    assert continue_once(resumed, refuse).ran is False
    return resumed.claims.jti


def a_day_of_pauses(turnstate_settings: Any) -> None:
    """Three pending (one an hour old, one of them unresumable), one overdue, two answered and
    never handed off, one stalled continuation, one refused continuation of a group."""
    turnstate_settings["STALLED_AFTER"] = 600
    mint()
    old = mint()
    Pause.objects.filter(jti=old.claims.jti).update(created_at=timezone.now() - timedelta(hours=1))
    lost()
    overdue = mint()
    Pause.objects.filter(jti=overdue.claims.jti).update(expires_at=timezone.now() - timedelta(seconds=1))
    answered()
    crashed_continuation(hours_ago=1)
    refused_continuation(group="trip")
    Pause.objects.filter(status="answered").exclude(group="trip").update(handed_off_at=None)
    Pause.objects.filter(group="trip").update(handed_off_at=timezone.now())


def test_the_figures_of_a_day(turnstate_settings: Any) -> None:
    a_day_of_pauses(turnstate_settings)
    status = lifecycle_status()
    assert status.as_dict() | {"at": None, "oldest_pending_age_seconds": None} == {
        "pending": 3,
        "oldest_pending_age_seconds": None,
        "awaiting_handoff": 2,
        "stalled": 1,
        "unresumable": 1,
        "failed_groups": 1,
        "failed_continuations": 1,
        "count_limit": 10_000,
        "capped": [],
        "at": None,
    }
    assert 3595 <= (status.oldest_pending_age_seconds or 0) <= 3700


def test_nothing_waits_on_an_empty_ledger() -> None:
    figures = lifecycle_status().as_dict()
    assert figures["oldest_pending_age_seconds"] is None
    assert [figures[name] for name in ("pending", "awaiting_handoff", "stalled", "unresumable")] == [0] * 4


def test_a_count_stops_at_its_limit_and_says_so() -> None:
    for _ in range(5):
        mint()
    status = lifecycle_status(limit=3)
    assert (status.pending, status.capped) == (3, ("pending",))


def seed_ledger(n: int) -> None:
    """``n`` pauses answered and handed off long ago, and a few of every kind that waits."""
    now = timezone.now()
    Pause.objects.bulk_create(
        Pause(
            jti=f"old-{i}",
            run_id="r",
            session_id="s",
            thread_id=f"old-{i}",
            checkpoint_id="cp",
            scope_hash="h",
            request_key=f"ask_user_request:call-{i}",
            resumable=True,
            status="answered",
            answered_at=now,
            handed_off_at=now,
            continued_at=now,
            expires_at=now + timedelta(days=7),
        )
        for i in range(n)
    )


@pytest.mark.parametrize("rows", [10, 10_000])
def test_the_figures_take_the_same_queries_whatever_the_ledger_holds(
    turnstate_settings: Any, rows: int
) -> None:
    a_day_of_pauses(turnstate_settings)
    seed_ledger(rows)
    with CaptureQueriesContext(connection) as queries:
        status = lifecycle_status()
    assert len(queries) == 7
    assert (status.pending, status.awaiting_handoff, status.stalled) == (3, 2, 1)


# -- the command -----------------------------------------------------------------------------


def status_command(*args: str) -> tuple[str, int]:
    out = StringIO()
    try:
        call_command("turnstate_status", *args, stdout=out)
    except CommandError as error:
        return out.getvalue(), error.returncode
    return out.getvalue(), 0


def test_the_command_prints_the_figures_as_json(turnstate_settings: Any) -> None:
    a_day_of_pauses(turnstate_settings)
    text, code = status_command("--json")
    figures = json.loads(text)
    assert code == 0 and figures["passed"] == []
    assert {key: figures[key] for key in ("pending", "stalled", "unresumable", "failed_groups")} == {
        "pending": 3,
        "stalled": 1,
        "unresumable": 1,
        "failed_groups": 1,
    }
    assert figures["oldest_pending_age_seconds"] >= 3595


def test_a_passed_threshold_exits_1_and_names_the_figure(turnstate_settings: Any) -> None:
    a_day_of_pauses(turnstate_settings)
    text, code = status_command("--max-pending-age", "1800", "--max-stalled", "1", "--max-pending", "10")
    assert code == 1
    lines = {line.split()[0] + " " + line.split()[1]: line for line in text.splitlines()}
    assert lines["oldest pending"].endswith("(max 1800)  PASSED")
    assert lines["stalled 1"].endswith("(max 1)")
    assert lines["pending 3"].endswith("(max 10)")
    with pytest.raises(CommandError, match=r"threshold passed: oldest_pending_age_seconds \d+ > 1800"):
        call_command("turnstate_status", "--max-pending-age", "1800", stdout=StringIO())


def test_thresholds_not_passed_exit_0(turnstate_settings: Any) -> None:
    a_day_of_pauses(turnstate_settings)
    text, code = status_command("--json", "--max-pending-age", "7200", "--max-unresumable", "1")
    assert code == 0 and json.loads(text)["passed"] == []


def test_a_threshold_above_the_count_limit_is_still_judged() -> None:
    for _ in range(4):
        mint()
    text, code = status_command("--json", "--count-limit", "2", "--max-pending", "3")
    figures = json.loads(text)
    assert code == 1 and figures["pending"] == 4 and figures["passed"] == ["pending"]


def test_a_negative_threshold_is_refused() -> None:
    with pytest.raises(CommandError, match="--max-stalled"):
        call_command("turnstate_status", "--max-stalled", "-1")


# -- REST ------------------------------------------------------------------------------------


def test_staff_read_the_figures_over_rest(turnstate_settings: Any) -> None:
    a_day_of_pauses(turnstate_settings)
    response = client_for(UserFactory.create(is_staff=True)).get(STATUS)
    assert response.status_code == 200
    body = response.json()
    assert (body["pending"], body["stalled"], body["failed_continuations"]) == (3, 1, 1)
    assert body["oldest_pending_age_seconds"] >= 3595 and body["capped"] == []


def test_others_get_a_json_refusal() -> None:
    response = client_for(UserFactory.create()).get(STATUS)
    assert response.status_code == 403 and response.json()["code"] == "permission_denied"
    anonymous = client_for(None).get(STATUS)
    assert anonymous.status_code in (401, 403) and "code" in anonymous.json()


def test_status_takes_no_writes() -> None:
    response = client_for(UserFactory.create(is_staff=True)).post(STATUS, {}, format="json")
    assert response.status_code == 405 and "code" in response.json()


def test_the_stalled_figure_reads_the_ledger_alone() -> None:
    """The answered pauses a host continued its own way (never through ``continue_once``) are
    never probed: stalled is a condition on the ledger's own columns, served by its index."""
    sql = str(Pause.objects.stalled(timezone.now()).query)
    assert CheckpointMetadata._meta.db_table not in sql


def test_a_stalled_continuation_is_found_by_its_claim_time(turnstate_settings: Any) -> None:
    turnstate_settings["STALLED_AFTER"] = 600
    jti = crashed_continuation(hours_ago=0)
    now = timezone.now()
    assert not Pause.objects.stalled(now).exists()  # claimed a moment ago: still running, maybe
    assert list(Pause.objects.stalled(now + timedelta(seconds=601)).values_list("jti", flat=True)) == [jti]
