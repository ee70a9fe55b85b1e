"""Every pause knows its agent when given one: an unnamed agent cannot pause, the wrong one spends nothing.

``pause_deferred(..., agent=agent)`` records ``agent.name``; ``continue_agent`` then refuses
another agent before anything is claimed, so the right agent can still continue the run.
Without ``agent=`` nothing is recorded and nothing checked, as before.
"""

from __future__ import annotations

from typing import Any

import pytest
from pydantic_ai.conversation import Conversation

from tests.contrib.pydantic_ai.agents import first_run, tool_runs, travel_agent
from tests.contrib.pydantic_ai.conversations import sync
from turnstate_app.choices import ContinuationState
from turnstate_app.contrib.pydantic_ai import (
    DjangoConversationStore,
    UnnamedAgentError,
    acontinue_agent,
    apause_deferred,
    continue_agent,
    pause_deferred,
)
from turnstate_app.models import Pause
from turnstate_app.pauses import MintedPause, ResumedPause, aresume_pause, resume_pause

pytestmark = pytest.mark.django_db

APPROVE = {"approved": True}


def saved_run(agent: Any, conversation_id: str) -> tuple[DjangoConversationStore, Any]:
    store = DjangoConversationStore()
    result = first_run(agent, conversation_id)
    sync(store.save, result)
    return store, result


def answered(minted: list[MintedPause]) -> ResumedPause:
    """Both pauses of the group answered; the last one's answer, as a hand-off gets it."""
    by_call = {pause.claims.tool_call_id: pause for pause in minted}
    resume_pause(by_call["call-date"].token, "May 3rd")
    return resume_pause(by_call["call-book"].token, APPROVE)


def test_an_agent_without_a_name_cannot_pause_and_is_told_how_to_name_it() -> None:
    agent = travel_agent(name=None)
    store = DjangoConversationStore()
    # PydanticAI names an unnamed agent after the variable it is first run from, unless told not to.
    result = agent.run_sync(
        "Book.", conversation=Conversation(conversation_id="identity-1"), infer_name=False
    )
    sync(store.save, result)
    assert agent.name is None

    with pytest.raises(UnnamedAgentError, match=r"Agent\(\.\.\., name="):
        pause_deferred(result, store=store, run_id="r", session_id="s", agent=agent)
    assert not Pause.objects.exists()


def test_a_pause_records_its_agents_name_and_the_next_group_keeps_it() -> None:
    agent = travel_agent(follow_up=True)
    store, result = saved_run(agent, "identity-2")
    minted = pause_deferred(result, store=store, run_id="r", session_id="s", agent=agent)
    assert {Pause.objects.get(jti=m.claims.jti).agent for m in minted} == {"travel"}

    [insurance] = continue_agent(agent, answered(minted), store=store).minted

    assert Pause.objects.get(jti=insurance.claims.jti).agent == "travel"


def test_the_wrong_agent_is_refused_before_the_claim_and_the_right_one_still_continues() -> None:
    right, wrong = travel_agent(), travel_agent(name="billing")
    store, result = saved_run(right, "identity-3")
    last = answered(pause_deferred(result, store=store, run_id="r", session_id="s", agent=right))

    refused = continue_agent(wrong, last, store=store)

    assert refused.ran is False and refused.reason is not None
    assert "'travel'" in refused.reason and "'billing'" in refused.reason
    states = set(Pause.objects.values_list("continuation", "continuation_reason"))
    assert states == {(ContinuationState.QUEUED, None)}  # nothing spent: both answers still queued
    assert tool_runs("book_flight") == 0

    done = continue_agent(right, last, store=store)

    assert done.ran and done.output == "done. ask_date: May 3rd; book_flight: booked 2 to Lisbon"
    assert tool_runs("book_flight") == 1
    assert set(Pause.objects.values_list("continuation", flat=True)) == {ContinuationState.CONTINUED}


def test_an_unnamed_agent_cannot_continue_a_pause_that_recorded_a_name() -> None:
    right = travel_agent()
    store, result = saved_run(right, "identity-4")
    last = answered(pause_deferred(result, store=store, run_id="r", session_id="s", agent=right))

    refused = continue_agent(travel_agent(name=None), last, store=store)

    assert refused.ran is False and "'travel'" in str(refused.reason) and "no name" in str(refused.reason)
    assert continue_agent(right, last, store=store).ran


def test_without_agent_no_identity_is_recorded_and_none_is_checked() -> None:
    store, result = saved_run(travel_agent(), "identity-5")
    minted = pause_deferred(result, store=store, run_id="r", session_id="s")
    assert {Pause.objects.get(jti=m.claims.jti).agent for m in minted} == {None}

    done = continue_agent(travel_agent(name="billing"), answered(minted), store=store)

    assert done.ran and tool_runs("book_flight") == 1


@pytest.mark.django_db(transaction=True)
async def test_the_async_twins_record_and_check_the_agent_too() -> None:
    right, wrong = travel_agent(), travel_agent(name="billing")
    store = DjangoConversationStore()
    result = await right.run("Book me two seats.", conversation=Conversation(conversation_id="identity-6"))
    await store.save(result)
    with pytest.raises(UnnamedAgentError):
        await apause_deferred(result, store=store, run_id="r", session_id="s", agent=travel_agent(name=None))
    minted = await apause_deferred(result, store=store, run_id="r", session_id="s", agent=right)
    by_call = {pause.claims.tool_call_id: pause for pause in minted}
    await aresume_pause(by_call["call-date"].token, "July")
    last = await aresume_pause(by_call["call-book"].token, APPROVE)

    refused = await acontinue_agent(wrong, last, store=store)

    assert refused.ran is False and "'billing'" in str(refused.reason)
    states = {state async for state in Pause.objects.values_list("continuation", "continuation_reason")}
    assert states == {(ContinuationState.QUEUED, None)}  # nothing spent
    assert (await acontinue_agent(right, last, store=store)).ran
    assert await Pause.objects.filter(continuation=ContinuationState.CONTINUED).acount() == 2
