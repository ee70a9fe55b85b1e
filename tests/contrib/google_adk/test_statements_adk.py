"""Statements of one ADK confirmation cycle (two confirmations, one group), on every connection and
thread; the test app's tools recording their runs are left out.

Pausing writes only the lifecycle's rows: the invocation's events are already in the session, so
the group is minted in one transaction with nothing read back. Continuing is the core's part for a
group, the session read once for the binding check, and what ADK's resumed invocation costs the
session service (it reads the session again and appends its events).
"""

from __future__ import annotations

import pytest
from asgiref.sync import async_to_sync

from tests.contrib.google_adk.agents import RUNS_THREAD, afirst_run, payments_app, runner_for
from tests.contrib.google_adk.paused import BOOK_ANSWER, CONFIRM
from tests.pause_helpers import mint
from tests.statements_counted import counting
from turnstate_app.contrib.google_adk import DjangoSessionService, continue_invocation, pause_confirmations
from turnstate_app.contrib.google_adk.models import (
    StoredAppState,
    StoredEvent,
    StoredSession,
    StoredUserState,
)
from turnstate_app.pauses import resume_pause

pytestmark = pytest.mark.django_db(transaction=True)

PAUSE_TWO = 16
"""Each mint's eight (the group check, its savepoint in the pausing transaction, its three writes, the
turn state's own savepoint); no session statement."""
CONTINUE_TWO = 8
"""The core's part of continuing a group, beside the session's."""
SESSION_READS = 2
"""Reads of the session's events: the binding check's, then ADK's own at resume (each after one read
of the session row with its app and user state)."""
EVENTS = StoredEvent._meta.db_table
SESSION_TABLES = [
    model._meta.db_table for model in (StoredSession, StoredEvent, StoredAppState, StoredUserState)
]


def session_statements(seen: list) -> list:
    return [statement for statement in seen if any(statement.touches(table) for table in SESSION_TABLES)]


def test_a_confirmation_cycle_pauses_and_continues_in_a_bounded_number_of_statements() -> None:
    mint()  # the session's own first statements (MariaDB reads its packet size once) are not the cycle's
    runner = runner_for(payments_app(), DjangoSessionService())
    session_id, events = async_to_sync(afirst_run)(runner)
    with counting(excluded=RUNS_THREAD) as pausing:
        pauses = pause_confirmations(
            events,
            agent=runner.app,
            user_id="alice",
            session_id=session_id,
            invocation_id=events[-1].invocation_id,
        )
    assert len(pauses) == 2
    assert session_statements(pausing.seen) == [], pausing.listing()
    assert len(pausing) <= PAUSE_TWO, pausing.listing()
    answers = {"pay": CONFIRM, "book": BOOK_ANSWER}
    answered = [resume_pause(minted.token, answers[minted.claims.name or ""]) for minted in pauses]
    with counting(excluded=RUNS_THREAD) as continuing:
        outcome = continue_invocation(runner, answered[-1])
    assert outcome.ran
    session = session_statements(continuing.seen)
    reads = [statement for statement in session if statement.verb == "SELECT" and statement.touches(EVENTS)]
    core = [statement for statement in continuing.seen if statement not in session]
    print(
        f"\npausing two confirmations: {len(pausing)} statements; continuing the group: {len(continuing)} "
        f"({len(core)} the lifecycle's, {len(session)} the session service's: {len(reads)} reads of the "
        f"events, {len(outcome.output) + 1} events appended)"
    )
    assert len(core) <= CONTINUE_TWO, continuing.listing()
    assert len(reads) <= SESSION_READS, continuing.listing()
