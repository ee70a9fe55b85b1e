"""What a continuation does besides its statements: the state's interruptions are listed once.

The SDK copies every pending approval on each ``RunState.get_interruptions()``; the question's
check of each member and the run use one listing.
"""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from agents import RunState

from tests.contrib.openai_agents.agents import first_run, payments_agent, tool_runs
from tests.contrib.openai_agents.test_bridge import APPROVE
from turnstate_app.contrib.openai_agents import continue_run, pause_approvals
from turnstate_app.pauses import resume_pause

pytestmark = pytest.mark.django_db(transaction=True)


def test_a_continuation_lists_the_states_interruptions_once(monkeypatch: pytest.MonkeyPatch) -> None:
    agent = payments_agent()
    first = first_run(agent)
    pauses = pause_approvals(first, agent=agent, run_id=f"run-{uuid.uuid4().hex[:10]}", session_id=None)
    answered = [resume_pause(minted.token, APPROVE) for minted in pauses]
    listings: list[int] = []
    real = RunState.get_interruptions

    def listed(state: Any) -> Any:
        listings.append(1)
        return real(state)

    monkeypatch.setattr(RunState, "get_interruptions", listed)
    outcome = continue_run(agent, answered[-1])
    assert outcome.ran and tool_runs("pay") == ["2400 to acme"]
    assert len(listings) == 1
