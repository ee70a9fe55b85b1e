"""Statements per continuation of the core, counted on every connection and every thread.

A continuation of a lone answered pause is four writes and no read: the claim (queued ->
running, one conditional UPDATE that checks everything itself), the thread's turn taken, the
completion (running -> continued) and the turn given back. The pause's row is read once, and
only when something asks for it: the owner of a pause minted next, the question ``still_shown``
checks, the answer's trace for a span that records. A group reads its members first (finding
them needs the row). ``mint_pause`` and ``resume_pause`` send no more than they did.

The answer's time and trace come with the answer (``ResumedPause``), so a span that records
reads nothing more; a continuation rebuilt without them reads the pause's row once for them.
"""

from __future__ import annotations

from typing import Any

import pytest
from asgiref.sync import sync_to_async
from django.db import connection

from tests.factories import UserFactory
from tests.pause_helpers import mint, mint_fields
from tests.statements_counted import counting
from tests.test_telemetry import installed
from turnstate_app import telemetry
from turnstate_app.models import CheckpointMetadata, Pause
from turnstate_app.pauses import Continuation, acontinue_once, continue_once, mint_pause, resume_pause

pytestmark = pytest.mark.django_db(transaction=True)

LEDGER = Pause._meta.db_table
STORE = CheckpointMetadata._meta.db_table

CONTINUATION = ["UPDATE", "INSERT", "UPDATE", "DELETE"]
"""The claim, the turn taken, the completion, the turn given back."""

MINT_STATEMENTS = {"postgresql": 5, "sqlite": 5, "mysql": 5}
RESUME_STATEMENTS = {"postgresql": 2, "sqlite": 3, "mysql": 3}
"""What ``mint_pause`` and ``resume_pause`` sent before continuations were cut (savepoints
included): they must not grow."""


def traced() -> bool:
    """Whether a span started now records (a tracer is configured in this process)."""
    with telemetry.span("turnstate.probe") as span:
        return span is not None and bool(span.is_recording())


def test_a_lone_pause_continues_in_four_statements_and_reads_nothing() -> None:
    resumed = resume_pause(mint().token, "yes")
    with counting() as counted:
        assert continue_once(resumed, lambda continuation: "done").ran
    assert counted.verbs() == CONTINUATION, counted.listing()
    assert len(counted.of(LEDGER, "UPDATE")) == 2 and len(counted.of(STORE)) == 2, counted.listing()
    assert Pause.objects.get(jti=resumed.claims.jti).continuation == "continued"


async def test_the_async_twin_sends_the_same_four() -> None:
    resumed = await sync_to_async(lambda: resume_pause(mint().token, "yes"), thread_sensitive=True)()
    with counting() as counted:
        # Its statements run on the thread-sensitive thread, on the connection open there.
        await sync_to_async(counted.attach_open, thread_sensitive=True)()
        assert (await acontinue_once(resumed, lambda continuation: "done")).ran
        await sync_to_async(counted.detach_open, thread_sensitive=True)()
    assert counted.verbs() == CONTINUATION, counted.listing()


def test_a_recording_span_reads_nothing_more_when_the_answer_came_through_this_process() -> None:
    """The resume hands the answer's time and trace on in ``ResumedPause``: linking the span to
    the answer's trace needs no read of the pause."""
    installed()
    assert traced()
    resumed = resume_pause(mint().token, "yes")
    with counting() as counted:
        assert continue_once(resumed, lambda continuation: "done").ran
    assert counted.verbs() == CONTINUATION, counted.listing()


def test_a_claim_that_changes_nothing_reads_the_ledger_once_to_say_why() -> None:
    resumed = resume_pause(mint().token, "yes")
    assert continue_once(resumed, lambda continuation: "done").ran
    with counting() as counted:
        again = continue_once(resumed, lambda continuation: "twice")
    assert (again.ran, again.reason) == (False, "already continued")
    assert counted.verbs() == ["UPDATE", "SELECT"], counted.listing()


def test_the_pause_is_read_once_for_the_owner_of_the_pauses_minted_next() -> None:
    owner = UserFactory.create()
    resumed = resume_pause(mint(owner=owner).token, "yes", user=owner)

    def run(continuation: Continuation) -> Any:
        fields = mint_fields(thread_id=resumed.claims.thread_id)
        for carried in ("owner", "session_id", "run_id", "thread_id"):
            fields.pop(carried)
        return [continuation.mint_next(**fields), continuation.mint_next(**fields)]

    with counting() as counted:
        result = continue_once(resumed, run)
    assert result.ran and len(result.minted) == 2
    assert len(counted.of(LEDGER, "SELECT")) == 1, counted.listing()
    minted = Pause.objects.filter(jti__in=[m.claims.jti for m in result.minted])
    assert {pause.owner_id for pause in minted} == {owner.pk}


def test_still_shown_reads_the_pause_once_for_the_question_it_recorded() -> None:
    resumed = resume_pause(mint().token, "yes")
    asked: list[str] = []

    def still_shown(member: Any) -> Any:
        asked.append(member.claims.jti)
        return {"question": "Which date?"}  # what mint() asks

    with counting() as counted:
        assert continue_once(resumed, lambda continuation: "done", still_shown=still_shown).ran
    assert asked == [resumed.claims.jti]
    assert counted.verbs() == ["UPDATE", "INSERT", "SELECT", "UPDATE", "DELETE"], counted.listing()


def test_a_group_of_two_reads_its_members_once_and_claims_them_in_one_update() -> None:
    """The claim tried on the pause alone (it has a group: nothing changes), its group read with
    it, the other member's answer and turn state, every member claimed at once, the turn, the
    completion, the turn given back."""
    first = mint_pause(**mint_fields(group="pair", thread_id="thread-pair", tool_call_id="call-a"))
    second = mint_pause(**mint_fields(group="pair", thread_id="thread-pair", tool_call_id="call-b"))
    resume_pause(first.token, "one")
    last = resume_pause(second.token, "two")
    runs: list[list[Any]] = []
    with counting() as counted:
        result = continue_once(
            last, lambda continuation: runs.append([m.answer for m in continuation.members])
        )
    assert result.ran and runs == [["one", "two"]]
    assert counted.verbs() == [
        "UPDATE",
        "SELECT",
        "SELECT",
        "SELECT",
        "UPDATE",
        "INSERT",
        "UPDATE",
        "DELETE",
    ], counted.listing()
    assert set(Pause.objects.filter(group="pair").values_list("continuation", flat=True)) == {"continued"}


def test_mint_and_resume_send_no_more_than_before() -> None:
    resume_pause(mint().token, "yes")  # the session's own set-up statements are not the lifecycle's
    fields = mint_fields()
    with counting() as minting:
        minted = mint_pause(**fields)
    with counting() as resuming:
        resume_pause(minted.token, "yes")
    assert len(minting) <= MINT_STATEMENTS[connection.vendor], minting.listing()
    assert len(resuming) <= RESUME_STATEMENTS[connection.vendor], resuming.listing()


@pytest.mark.skipif(connection.vendor != "postgresql", reason="one statement where the database allows it")
def test_on_postgresql_the_answer_and_the_consume_are_one_statement() -> None:
    minted = mint()
    with counting() as resuming:
        resume_pause(minted.token, "yes")
    consuming = resuming.of(LEDGER, "WITH") + resuming.of(LEDGER, "UPDATE")
    assert len(consuming) == 1, resuming.listing()
    assert f'INSERT INTO "{STORE}"' in consuming[0].sql, consuming[0].sql
