"""``turnstate_status`` and ``GET status/``: the figures an operator is paged on, each one bounded query.

Every pause here gets its state through the lifecycle: answered with a ``RESUME_HANDLER`` that
accepts or raises, continued by ``continue_once`` with runs that return, raise or refuse, failed
by ``continue_pause``, or claimed (``Pause.objects.claim``) by a worker that then died. The
hand-off runs on a worker thread after commit, so these tests commit for real
(``transaction=True``): the worker must see the answered rows.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import datetime, timedelta
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
from tests.pause_helpers import expire, lost, mint
from turnstate_app.choices import ContinuationState
from turnstate_app.models import CheckpointMetadata, Pause
from turnstate_app.pauses import Continuation, ContinuationRefused, ResumedPause, continue_once, resume_pause
from turnstate_app.status import COUNTS, lifecycle_status
from turnstate_app.tasks import continue_pause

pytestmark = pytest.mark.django_db(transaction=True)

STATUS = "/api/turnstate/status/"
STALLED_AFTER = 600

AFTER_ANSWER = ("awaiting_handoff", "queued", "running", "stalled", "failed_continuations")
"""The figures that split the answered pauses not yet continued: each such pause is in exactly one."""


# -- pauses in every state, through the lifecycle --------------------------------------------


def accept(resumed: ResumedPause) -> None:
    """A ``RESUME_HANDLER`` that accepts every answer (a queue that took it)."""


def refuse_handoff(resumed: ResumedPause) -> None:
    """A ``RESUME_HANDLER`` whose queue is down."""
    raise RuntimeError("queue unavailable")


def answer(turnstate_settings: Any, *, handler: str | None = None, **mint_fields: Any) -> ResumedPause:
    """A new pause answered "yes", handed to ``handler`` (a name in this module; None: no handler)."""
    turnstate_settings["RESUME_HANDLER"] = None if handler is None else f"tests.test_status.{handler}"
    try:
        return resume_pause(mint(**mint_fields).token, "yes")
    finally:
        turnstate_settings["RESUME_HANDLER"] = None


def awaiting_handoff(turnstate_settings: Any) -> str:
    """Answered; ``RESUME_HANDLER`` raised, so nothing accepted the answer."""
    jti = answer(turnstate_settings, handler="refuse_handoff").claims.jti
    assert not Pause.objects.filter(jti=jti, handed_off_at__isnull=False).exists()
    return jti


def handed_off(turnstate_settings: Any) -> str:
    """Answered and accepted by ``RESUME_HANDLER``; no worker took it yet."""
    jti = answer(turnstate_settings, handler="accept").claims.jti
    assert Pause.objects.filter(jti=jti, handed_off_at__isnull=False).exists()
    return jti


def continued(turnstate_settings: Any) -> str:
    """Answered and continued: the run returned."""
    resumed = answer(turnstate_settings, handler="accept")
    assert continue_once(resumed, lambda continuation: "done").ran
    return resumed.claims.jti


def crashed(turnstate_settings: Any) -> str:
    """Answered (no ``RESUME_HANDLER``: the host continues it from its own code); the run raised
    after it started."""
    resumed = answer(turnstate_settings)

    def crash(continuation: Continuation) -> None:
        raise RuntimeError("the tool call failed mid-run")

    with pytest.raises(RuntimeError, match="mid-run"):
        continue_once(resumed, crash)
    return resumed.claims.jti


def refused(turnstate_settings: Any, group: str | None = None) -> str:
    """Answered (no ``RESUME_HANDLER``); the run refused to go on from this answer."""
    resumed = answer(turnstate_settings, group=group)

    def refuse(continuation: Continuation) -> None:
        raise ContinuationRefused("the interrupt moved on")

    assert continue_once(resumed, refuse).reason == "the interrupt moved on"
    return resumed.claims.jti


def failed(turnstate_settings: Any) -> str:
    """Answered; ``continue_pause`` found no ``AGENTS`` entry for its agent, so nothing ran."""
    jti = answer(turnstate_settings, handler="accept", agent="nowhere").claims.jti
    assert continue_pause.call(jti)["ran"] is False
    return jti


def claimed_by_a_worker_that_died(turnstate_settings: Any, *, ago: timedelta) -> str:
    """Answered, handed off, and claimed ``ago`` by a worker killed before its run ended."""
    jti = handed_off(turnstate_settings)
    assert Pause.objects.claim(Pause.objects.get(jti=jti).pk, now=timezone.now() - ago)
    return jti


FAILURES: dict[str, Callable[[Any], str]] = {"failed": failed, "crashed": crashed, "refused": refused}


def state_of(jti: str) -> str | None:
    return Pause.objects.get(jti=jti).continuation


def a_day_of_pauses(turnstate_settings: Any) -> None:
    """Three pending (one an hour old, one of them unresumable), one overdue; after the answer:
    one awaiting its hand-off, one queued, one running, one stalled, one crashed, one refused
    member of a group, one continued."""
    turnstate_settings["STALLED_AFTER"] = STALLED_AFTER
    mint()
    old = mint()
    Pause.objects.filter(jti=old.claims.jti).update(created_at=timezone.now() - timedelta(hours=1))
    lost()
    overdue = mint()
    Pause.objects.filter(jti=overdue.claims.jti).update(expires_at=timezone.now() - timedelta(seconds=1))
    awaiting_handoff(turnstate_settings)
    handed_off(turnstate_settings)
    claimed_by_a_worker_that_died(turnstate_settings, ago=timedelta(seconds=5))  # running, for all we know
    claimed_by_a_worker_that_died(turnstate_settings, ago=timedelta(hours=1))  # stalled
    crashed(turnstate_settings)
    refused(turnstate_settings, group="trip")
    continued(turnstate_settings)


DAY = {
    "pending": 3,
    "awaiting_handoff": 1,
    "queued": 1,
    "running": 1,
    "stalled": 1,
    "unresumable": 1,
    "failed_groups": 1,
    "failed_continuations": 2,
}
"""The counts of :func:`a_day_of_pauses`."""


def test_the_figures_of_a_day(turnstate_settings: Any) -> None:
    a_day_of_pauses(turnstate_settings)
    status = lifecycle_status()
    assert status.as_dict() | {"at": None, "oldest_pending_age_seconds": None} == {
        **DAY,
        "oldest_pending_age_seconds": None,
        "count_limit": 10_000,
        "capped": [],
        "at": None,
    }
    assert 3595 <= (status.oldest_pending_age_seconds or 0) <= 3700


def test_nothing_waits_on_an_empty_ledger() -> None:
    figures = lifecycle_status().as_dict()
    assert figures["oldest_pending_age_seconds"] is None
    assert {name: figures[name] for name in COUNTS} == dict.fromkeys(COUNTS, 0)


def test_a_count_stops_at_its_limit_and_says_so() -> None:
    for _ in range(5):
        mint()
    status = lifecycle_status(limit=3)
    assert (status.pending, status.capped) == (3, ("pending",))


# -- every answered pause not yet continued, counted once -------------------------------------


@pytest.mark.parametrize("failure", sorted(FAILURES))
def test_every_answered_pause_not_yet_continued_is_counted_exactly_once(
    turnstate_settings: Any, failure: str
) -> None:
    """One pause in each after-answer state (the failed one ``failure``), plus a continued, a
    pending and an expired one that no figure counts; read while one run is in progress."""
    turnstate_settings["STALLED_AFTER"] = STALLED_AFTER
    mint()
    expire(mint(), days=0)
    done = continued(turnstate_settings)
    expected = {
        "awaiting_handoff": awaiting_handoff(turnstate_settings),
        "queued": handed_off(turnstate_settings),
        "stalled": claimed_by_a_worker_that_died(turnstate_settings, ago=timedelta(hours=1)),
        "failed_continuations": FAILURES[failure](turnstate_settings),
    }
    in_progress = answer(turnstate_settings)  # no RESUME_HANDLER: continued from the host's code
    expected["running"] = in_progress.claims.jti
    during: dict[str, Any] = {}

    def run(continuation: Continuation) -> None:  # the figures while this run is in progress
        now = timezone.now()
        during["figures"] = lifecycle_status(now=now).as_dict()
        during["command"] = json.loads(status_command("--json")[0])
        during["members"] = members_by_figure(now)
        during["open"] = open_answers()

    assert continue_once(in_progress, run).ran

    figures = during["figures"]
    assert {name: figures[name] for name in AFTER_ANSWER} == dict.fromkeys(AFTER_ANSWER, 1)
    assert sum(figures[name] for name in AFTER_ANSWER) == len(during["open"]) == 5
    assert {name: during["command"][name] for name in AFTER_ANSWER} == dict.fromkeys(AFTER_ANSWER, 1)
    assert during["members"] == {name: {jti} for name, jti in expected.items()}
    assert set(during["open"]) == set(expected.values())
    assert state_of(expected["failed_continuations"]) == failure
    assert (state_of(done), state_of(expected["running"])) == ("continued", "continued")

    after = lifecycle_status().as_dict()  # the run returned: no figure counts it any more
    assert {name: after[name] for name in AFTER_ANSWER} == dict.fromkeys(AFTER_ANSWER, 1) | {"running": 0}
    assert sum(after[name] for name in AFTER_ANSWER) == len(open_answers()) == 4


def after_answer_rows(now: datetime) -> dict[str, Any]:
    """The ledger's own condition behind each after-answer figure, at ``now``."""
    ledger = Pause.objects
    return {
        "awaiting_handoff": ledger.awaiting_handoff(),
        "queued": ledger.queued(),
        "running": ledger.running(now),
        "stalled": ledger.stalled(now),
        "failed_continuations": ledger.continuation_failed(),
    }


def members_by_figure(now: datetime) -> dict[str, set[str]]:
    """The jtis behind each after-answer figure."""
    return {name: set(rows.values_list("jti", flat=True)) for name, rows in after_answer_rows(now).items()}


def open_answers() -> list[str]:
    """The answered pauses whose run has not continued from them."""
    return list(
        Pause.objects.filter(status="answered")
        .exclude(continuation=ContinuationState.CONTINUED)
        .values_list("jti", flat=True)
    )


def test_a_claimed_run_is_running_until_stalled_after_then_stalled(turnstate_settings: Any) -> None:
    turnstate_settings["STALLED_AFTER"] = STALLED_AFTER
    jti = claimed_by_a_worker_that_died(turnstate_settings, ago=timedelta(0))
    now = timezone.now()
    assert (lifecycle_status(now=now).running, lifecycle_status(now=now).stalled) == (1, 0)
    later = now + timedelta(seconds=STALLED_AFTER + 1)
    assert (lifecycle_status(now=later).running, lifecycle_status(now=later).stalled) == (0, 1)
    assert not Pause.objects.stalled(now).exists()  # claimed a moment ago: still running, maybe
    assert list(Pause.objects.stalled(later).values_list("jti", flat=True)) == [jti]


def test_each_failed_continuation_keeps_its_reason(turnstate_settings: Any) -> None:
    reasons = {
        failure: Pause.objects.get(jti=make(turnstate_settings)).continuation_reason
        for failure, make in FAILURES.items()
    }
    assert lifecycle_status().failed_continuations == 3
    assert reasons["crashed"] == "RuntimeError: the tool call failed mid-run"
    assert reasons["refused"] == "the interrupt moved on"
    assert "no TURNSTATE['AGENTS'] entry for 'nowhere'" in (reasons["failed"] or "")


# -- the cost ----------------------------------------------------------------------------------


def seed_ledger(n: int) -> None:
    """``n`` pauses answered, handed off and continued long ago: history no figure reads.

    Written in one statement: ten thousand continuations run one by one would take minutes.
    """
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
            continuation=ContinuationState.CONTINUED,
            continuation_since=now,
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
    assert len(queries) == len(COUNTS) + 1 == 9  # one count per figure, and the oldest pending
    assert {name: getattr(status, name) for name in COUNTS} == DAY


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
    assert code == 0 and figures["breached"] == figures["passed"] == []
    assert {key: figures[key] for key in COUNTS} == DAY
    assert figures["oldest_pending_age_seconds"] >= 3595


def test_the_command_prints_every_figure_as_text(turnstate_settings: Any) -> None:
    a_day_of_pauses(turnstate_settings)
    text, code = status_command()
    shown = {line[:28].strip(): line[28:].split()[0] for line in text.splitlines()}
    assert code == 0
    assert {name: shown[name.replace("_", " ")] for name in COUNTS} == {
        name: str(count) for name, count in DAY.items()
    }


def test_a_passed_threshold_exits_1_and_names_the_figure(turnstate_settings: Any) -> None:
    a_day_of_pauses(turnstate_settings)
    text, code = status_command("--max-pending-age", "1800", "--max-stalled", "1", "--max-pending", "2")
    assert code == 1
    lines = {line.split()[0] + " " + line.split()[1]: line for line in text.splitlines()}
    assert lines["oldest pending"].endswith("(max 1800)  OVER LIMIT")
    assert lines["stalled 1"].endswith("(max 1)")
    assert lines["pending 3"].endswith("(max 2)  OVER LIMIT")
    assert "PASSED" not in text
    with pytest.raises(CommandError, match=r"over limit: oldest_pending_age_seconds \d+ > 1800"):
        call_command("turnstate_status", "--max-pending-age", "1800", stdout=StringIO())


def test_the_json_names_the_breached_figures_and_keeps_passed_as_their_alias(turnstate_settings: Any) -> None:
    a_day_of_pauses(turnstate_settings)
    text, code = status_command("--json", "--max-pending", "2", "--max-stalled", "1")
    figures = json.loads(text)
    assert code == 1 and figures["breached"] == ["pending"]
    assert figures["passed"] == figures["breached"]  # the earlier name, kept for one minor version


def test_the_age_threshold_does_not_raise_where_counts_stop() -> None:
    for _ in range(3):
        mint()
    text, code = status_command("--json", "--count-limit", "2", "--max-pending-age", "86400")
    figures = json.loads(text)
    assert code == 0 and figures["count_limit"] == 2 and figures["capped"] == ["pending"]


def test_failed_continuations_past_their_threshold_exit_1(turnstate_settings: Any) -> None:
    a_day_of_pauses(turnstate_settings)
    text, code = status_command("--json", "--max-failed-continuations", "1", "--max-awaiting-handoff", "1")
    assert code == 1 and json.loads(text)["breached"] == ["failed_continuations"]


def test_thresholds_not_passed_exit_0(turnstate_settings: Any) -> None:
    a_day_of_pauses(turnstate_settings)
    text, code = status_command("--json", "--max-pending-age", "7200", "--max-unresumable", "1")
    assert code == 0 and json.loads(text)["breached"] == []


def test_a_threshold_above_the_count_limit_is_still_judged() -> None:
    for _ in range(4):
        mint()
    text, code = status_command("--json", "--count-limit", "2", "--max-pending", "3")
    figures = json.loads(text)
    assert code == 1 and figures["pending"] == 4 and figures["breached"] == ["pending"]


def test_a_negative_threshold_is_refused() -> None:
    with pytest.raises(CommandError, match="--max-stalled"):
        call_command("turnstate_status", "--max-stalled", "-1")


# -- REST ------------------------------------------------------------------------------------


def test_staff_read_the_figures_over_rest(turnstate_settings: Any) -> None:
    a_day_of_pauses(turnstate_settings)
    response = client_for(UserFactory.create(is_staff=True)).get(STATUS)
    assert response.status_code == 200
    body = response.json()
    assert {name: body[name] for name in COUNTS} == DAY
    assert body["oldest_pending_age_seconds"] >= 3595 and body["capped"] == []


def test_others_get_a_json_refusal() -> None:
    response = client_for(UserFactory.create()).get(STATUS)
    assert response.status_code == 403 and response.json()["code"] == "permission_denied"
    anonymous = client_for(None).get(STATUS)
    assert anonymous.status_code in (401, 403) and "code" in anonymous.json()


def test_status_takes_no_writes() -> None:
    response = client_for(UserFactory.create(is_staff=True)).post(STATUS, {}, format="json")
    assert response.status_code == 405 and "code" in response.json()


def test_the_after_answer_figures_read_the_ledger_alone() -> None:
    """The answered pauses a host continued its own way (never through ``continue_once``) are
    never probed: each after-answer figure is a condition on the ledger's own columns, served by
    its index, never a look at the store's rows."""
    for name, rows in after_answer_rows(timezone.now()).items():
        assert CheckpointMetadata._meta.db_table not in str(rows.query), name
