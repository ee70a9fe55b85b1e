"""Statements of one OpenAI Agents approval cycle (two approvals), on every connection and
thread; the test agent's tools recording their runs are left out.

Pausing stores the run's state and mints the group in one transaction: the state row needs no
savepoint of its own (a failure rolls the whole back) and is not read back to earn
``resumable`` (it is this transaction's own row). Continuing is the core's part for a group
(8) and the SDK state's: one read and one compare-and-set UPDATE.
"""

from __future__ import annotations

import uuid

import pytest

from tests.contrib.openai_agents.agents import RUNS_THREAD, first_run, payments_agent
from tests.contrib.openai_agents.test_bridge import APPROVE
from tests.pause_helpers import mint
from tests.statements_counted import counting
from turnstate_app.contrib.openai_agents import continue_run, pause_approvals
from turnstate_app.contrib.openai_agents.models import StoredRunState
from turnstate_app.pauses import resume_pause

pytestmark = pytest.mark.django_db(transaction=True)

PAUSE_TWO = 17
"""Was 21: the state row's savepoint and each pause's read of that row are gone; each mint's
own statements (the group check, its savepoint in the caller's transaction, its three writes)
are the lifecycle's."""
CONTINUE_TWO = 10
"""Was 11: the core's 8 for a group and the SDK state's read and compare-and-set."""

STATES = StoredRunState._meta.db_table


def test_an_approval_cycle_pauses_in_seventeen_and_continues_in_ten_statements() -> None:
    mint()  # the session's own first statements (MariaDB reads its packet size once) are not the cycle's
    agent = payments_agent()
    result = first_run(agent)
    with counting(excluded=RUNS_THREAD) as pausing:
        pauses = pause_approvals(result, agent=agent, run_id=f"run-{uuid.uuid4().hex[:10]}", session_id=None)
    assert len(pauses) == 2
    assert len(pausing) <= PAUSE_TWO, pausing.listing()
    assert pausing.of(STATES, "SELECT") == [], pausing.listing()  # the row just inserted: not read back
    answered = [resume_pause(minted.token, APPROVE) for minted in pauses]
    with counting(excluded=RUNS_THREAD) as continuing:
        outcome = continue_run(agent, answered[-1])
    assert outcome.ran
    assert len(continuing) <= CONTINUE_TWO, continuing.listing()
    assert len(continuing.of(STATES, "SELECT")) == 1 and len(continuing.of(STATES, "UPDATE")) == 1
