"""Every pause knows its graph: an unnamed graph cannot pause, the wrong graph spends nothing.

Two compiled graphs in one project share the saver, so either can read the other's thread;
before the pause recorded its graph, a hand-off to the wrong one claimed (and so spent) the
continuation. The identity is ``graph.name``, recorded at pause time and checked before
anything is claimed.
"""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from langgraph.graph import START, StateGraph
from langgraph.types import Command, interrupt

from tests.contrib.langgraph.approvals import TripState, config, runs, single_question, trip_approvals
from turnstate_app.choices import ContinuationState
from turnstate_app.contrib.langgraph import (
    DjangoCheckpointSaver,
    UnnamedGraphError,
    acontinue_graph,
    apause_interrupts,
    continue_graph,
    pause_interrupts,
)
from turnstate_app.models import Pause
from turnstate_app.pauses import aresume_pause, resume_pause

pytestmark = pytest.mark.django_db(transaction=True)


def new_thread() -> str:
    return f"identity-{uuid.uuid4().hex[:12]}"


def unnamed(saver: Any) -> Any:
    builder = StateGraph(TripState)
    builder.add_node("ask", lambda state: {"log": [f"ask:{interrupt('Go ahead?')}"]})
    builder.add_edge(START, "ask")
    return builder.compile(checkpointer=saver)  # LangGraph names it "LangGraph"


def unclaimed(jti: str) -> bool:
    """The answer still waits for its continuation: ``queued``, no reason recorded, never ``running``."""
    pause = Pause.objects.get(jti=jti)
    return pause.continuation == ContinuationState.QUEUED and pause.continuation_reason is None


def test_a_graph_with_langgraphs_default_name_cannot_pause_and_is_told_how_to_name_it() -> None:
    graph, thread = unnamed(DjangoCheckpointSaver()), new_thread()
    graph.invoke({"log": []}, config(thread))
    assert graph.name == "LangGraph"

    with pytest.raises(UnnamedGraphError, match=r"compile\(name="):
        pause_interrupts(graph, config(thread), run_id="r", session_id="s")
    assert not Pause.objects.filter(thread_id=thread).exists()


async def test_apause_interrupts_refuses_an_unnamed_graph_too() -> None:
    graph, thread = unnamed(DjangoCheckpointSaver()), new_thread()
    await graph.ainvoke({"log": []}, config(thread))

    with pytest.raises(UnnamedGraphError, match=r"compile\(name="):
        await apause_interrupts(graph, config(thread), run_id="r", session_id="s")
    assert not await Pause.objects.filter(thread_id=thread).aexists()


def test_a_pause_records_its_graphs_name() -> None:
    graph, thread = single_question(DjangoCheckpointSaver()), new_thread()
    graph.invoke({"log": []}, config(thread))
    [minted] = pause_interrupts(graph, config(thread), run_id="r", session_id="s")
    assert Pause.objects.get(jti=minted.claims.jti).agent == "single-question"


def test_the_wrong_graph_is_refused_before_the_claim_and_the_right_one_still_continues() -> None:
    saver, thread = DjangoCheckpointSaver(), new_thread()
    right, wrong = single_question(saver), trip_approvals(saver)
    right.invoke({"log": []}, config(thread))
    [minted] = pause_interrupts(right, config(thread), run_id="r", session_id="s")
    resumed = resume_pause(minted.token, "yes")

    refused = continue_graph(wrong, resumed)

    assert refused.ran is False and refused.reason is not None
    assert "'single-question'" in refused.reason and "'trip-approvals'" in refused.reason
    assert unclaimed(minted.claims.jti)  # nothing was spent
    assert runs(thread, "ask") == 0

    done = continue_graph(right, resumed)

    assert done.ran and done.output["log"] == ["ask:yes", "booked"]
    assert runs(thread, "ask") == 1
    assert Pause.objects.get(jti=minted.claims.jti).continuation == ContinuationState.CONTINUED


async def test_acontinue_graph_refuses_the_wrong_graph_before_the_claim_too() -> None:
    saver, thread = DjangoCheckpointSaver(), new_thread()
    right, wrong = single_question(saver), trip_approvals(saver)
    await right.ainvoke({"log": []}, config(thread))
    [minted] = await apause_interrupts(right, config(thread), run_id="r", session_id="s")
    resumed = await aresume_pause(minted.token, "yes")

    refused = await acontinue_graph(wrong, resumed)

    assert refused.ran is False and "'trip-approvals'" in str(refused.reason)
    pause = await Pause.objects.aget(jti=minted.claims.jti)
    assert (pause.continuation, pause.continuation_reason) == (ContinuationState.QUEUED, None)
    assert (await acontinue_graph(right, resumed)).ran
    await pause.arefresh_from_db()
    assert pause.continuation == ContinuationState.CONTINUED


def test_an_interrupt_no_longer_pending_is_refused_with_what_the_head_holds() -> None:
    graph, thread = single_question(DjangoCheckpointSaver()), new_thread()
    graph.invoke({"log": []}, config(thread))
    [minted] = pause_interrupts(graph, config(thread), run_id="r", session_id="s")
    resumed = resume_pause(minted.token, "yes")
    graph.invoke(Command(resume={minted.claims.interrupt_id: "no"}), config(thread))  # not through turnstate
    head = graph.get_state(config(thread)).config["configurable"]["checkpoint_id"]

    result = continue_graph(graph, resumed)

    assert result.ran is False and result.reason is not None
    assert "elsewhere" not in result.reason and " or " not in result.reason  # a fact, not a guess
    assert f"checkpoint {head}" in result.reason and "waits on no interrupt" in result.reason
    pause = Pause.objects.get(jti=minted.claims.jti)
    assert (pause.continuation, pause.continuation_reason) == (ContinuationState.REFUSED, result.reason)


def test_an_interrupt_of_an_erased_thread_is_refused_saying_the_thread_has_no_checkpoint() -> None:
    saver, thread = DjangoCheckpointSaver(), new_thread()
    graph = single_question(saver)
    graph.invoke({"log": []}, config(thread))
    [minted] = pause_interrupts(graph, config(thread), run_id="r", session_id="s")
    resumed = resume_pause(minted.token, "yes")
    saver.delete_thread(thread)

    result = continue_graph(graph, resumed)

    assert result.ran is False and f"thread {thread!r} has no checkpoint" in str(result.reason)
    pause = Pause.objects.get(jti=minted.claims.jti)
    assert (pause.continuation, pause.continuation_reason) == (ContinuationState.REFUSED, result.reason)
