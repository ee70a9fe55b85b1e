"""Interrupts become pauses; answered pauses continue the graph once, in turn, with their owner.

Every test runs a real graph on the Django saver (no model, no network) and the real
lifecycle: pauses minted, answered with ``resume_pause``, continued with ``continue_graph``.
"""

from __future__ import annotations

import multiprocessing
import uuid
from collections import Counter
from datetime import datetime
from io import StringIO
from typing import Any

import pytest
from django.core.management import call_command
from django.db import connection
from langgraph.types import Command, interrupt
from pydantic import BaseModel, TypeAdapter, field_validator

from tests.contrib.langgraph import approvals
from tests.contrib.langgraph.approvals import HOTEL_SCHEMA, Approval, config, runs, start, trip_approvals
from tests.contrib.langgraph.processes import continue_elsewhere
from tests.factories import UserFactory
from turnstate_app.choices import ContinuationState
from turnstate_app.contrib.langgraph import (
    DjangoCheckpointSaver,
    InterruptValueError,
    continue_graph,
    pause_interrupts,
)
from turnstate_app.contrib.langgraph.models import Checkpoint
from turnstate_app.errors import AnswerValidationError
from turnstate_app.models import Pause
from turnstate_app.pauses import MintedPause, resume_pause
from turnstate_app.ports import get_default_store
from turnstate_app.status import lifecycle_status

pytestmark = pytest.mark.django_db(transaction=True)
SPAWN = multiprocessing.get_context("spawn")


def new_thread() -> str:
    return f"trip-{uuid.uuid4().hex[:12]}"


def paused_trip(owner: Any = None) -> tuple[Any, str, dict[str, MintedPause]]:
    """The trip graph run to its two parallel approvals, each a pause, by node name."""
    thread = new_thread()
    graph = trip_approvals(DjangoCheckpointSaver())
    start(graph, thread)
    minted = pause_interrupts(graph, config(thread), run_id="run-1", session_id="session-1", owner=owner)
    return graph, thread, {m.claims.name or "": m for m in minted}


def pending_ids(graph: Any, thread: str) -> list[str]:
    return [i.id for i in graph.get_state(config(thread)).interrupts]


def no_fork(thread: str) -> None:
    """No two checkpoints of the thread share a parent: the thread never forked."""
    parents = Counter(
        Checkpoint.objects.filter(thread_id=thread, checkpoint_ns="").values_list(
            "parent_checkpoint_id", flat=True
        )
    )
    assert all(count == 1 for count in parents.values()), parents


# -- pausing ------------------------------------------------------------------------------


def test_each_parallel_interrupt_becomes_one_pause_with_its_id_schema_and_transcript() -> None:
    graph, thread, minted = paused_trip()
    head = graph.get_state(config(thread))
    assert sorted(str(m.claims.interrupt_id) for m in minted.values()) == sorted(pending_ids(graph, thread))
    flights, hotel = minted["flights"], minted["hotel"]
    assert flights.resumable and hotel.resumable
    assert flights.claims.tool_call_id == "call-flights" and hotel.claims.tool_call_id is None
    assert (
        {flights.claims.checkpoint_id}
        == {hotel.claims.checkpoint_id}
        == {head.config["configurable"]["checkpoint_id"]}
    )
    rows = {p.name: p for p in Pause.objects.filter(thread_id=thread)}
    assert rows["flights"].answer_schema == TypeAdapter(Approval).json_schema()
    assert rows["hotel"].answer_schema == HOTEL_SCHEMA
    turn = get_default_store().find_sync(flights.claims)
    assert turn is not None and turn.prompt == "Approve the flights, EUR 640?"
    assert turn.messages == [
        {"role": "human", "content": "Book my trip to Lisbon.", "id": turn.messages[0]["id"]}
    ]


def test_pausing_again_mints_nothing_for_interrupts_that_have_a_pause() -> None:
    graph, thread, _ = paused_trip()
    assert pause_interrupts(graph, config(thread), run_id="run-1", session_id="session-1") == []
    assert Pause.objects.filter(thread_id=thread).count() == 2


def test_a_value_that_is_not_json_is_refused_before_any_pause_is_minted() -> None:
    from langgraph.graph import START, StateGraph

    builder = StateGraph(approvals.TripState)
    builder.add_node("odd", lambda state: {"log": [interrupt({"when": datetime(2026, 5, 11)})]})
    builder.add_edge(START, "odd")
    graph = builder.compile(checkpointer=DjangoCheckpointSaver(), name="odd-value")
    thread = new_thread()
    graph.invoke({"log": []}, config(thread))

    with pytest.raises(InterruptValueError, match="not JSON-representable"):
        pause_interrupts(graph, config(thread), run_id="r", session_id="s")
    assert not Pause.objects.filter(thread_id=thread).exists()


def test_a_pause_minted_from_a_stale_head_is_not_resumable() -> None:
    from turnstate_app.contrib.langgraph.bridge import _mint_unpaused
    from turnstate_app.pauses import mint_pause

    thread = new_thread()
    graph = approvals.single_question(DjangoCheckpointSaver())
    graph.invoke({"log": []}, config(thread))
    stale = graph.get_state(config(thread))
    [pending] = stale.interrupts
    graph.invoke(Command(resume={pending.id: "yes"}), config(thread))  # answered outside turnstate

    [minted] = _mint_unpaused(
        graph, config(thread), stale, lambda **kw: mint_pause(run_id="r", session_id="s", **kw)
    )
    assert minted.resumable is False


# -- continuing ---------------------------------------------------------------------------


def test_a_partial_answer_continues_one_branch_and_never_mints_the_other_again() -> None:
    owner = UserFactory.create()
    graph, thread, minted = paused_trip(owner)
    resumed = resume_pause(minted["flights"].token, {"approved": True}, user=owner)

    result = continue_graph(graph, resumed)

    assert result.ran and result.minted == []
    assert pending_ids(graph, thread) == [minted["hotel"].claims.interrupt_id]
    assert Pause.objects.filter(thread_id=thread).count() == 2
    assert runs(thread, "flights") == 1 and runs(thread, "hotel") == 0


def test_the_whole_trip_continues_pause_by_pause_and_every_next_pause_keeps_its_owner() -> None:
    owner = UserFactory.create()
    graph, thread, minted = paused_trip(owner)
    continue_graph(graph, resume_pause(minted["flights"].token, {"approved": True}, user=owner))
    after_hotel = continue_graph(graph, resume_pause(minted["hotel"].token, {"approved": False}, user=owner))
    [seat] = after_hotel.minted
    assert seat.claims.name == "details" and seat.claims.run_id == "run-1"
    assert seat.claims.session_id == "session-1"

    [meal] = continue_graph(graph, resume_pause(seat.token, "aisle", user=owner)).minted
    done = continue_graph(graph, resume_pause(meal.token, "vegetarian", user=owner))

    assert done.ran and done.minted == []
    assert done.output["log"] == ["flights:True", "hotel:False", "details:aisle,vegetarian", "booked"]
    assert set(Pause.objects.filter(thread_id=thread).values_list("owner", flat=True)) == {owner.pk}
    assert runs(thread) == 4
    no_fork(thread)


def test_a_redelivery_after_completion_runs_nothing_and_answers_nothing_else() -> None:
    graph, thread, minted = paused_trip()
    continue_graph(graph, resume_pause(minted["flights"].token, {"approved": True}))
    [seat] = continue_graph(graph, resume_pause(minted["hotel"].token, {"approved": True})).minted
    resumed = resume_pause(seat.token, "window")
    [meal] = continue_graph(graph, resumed).minted
    checkpoints = Checkpoint.objects.filter(thread_id=thread).count()

    again = continue_graph(graph, resumed)

    assert (again.ran, again.reason) == (False, "already continued")
    assert pending_ids(graph, thread) == [meal.claims.interrupt_id]  # the next question is still open
    assert Checkpoint.objects.filter(thread_id=thread).count() == checkpoints
    assert Pause.objects.get(jti=meal.claims.jti).status == "pending"
    assert runs(thread, "details") == 0


def test_an_interrupt_answered_elsewhere_is_refused_and_answers_nothing_else() -> None:
    graph, thread, minted = paused_trip()
    resumed = resume_pause(minted["flights"].token, {"approved": True})
    interrupt_id = minted["flights"].claims.interrupt_id
    graph.invoke(Command(resume={interrupt_id: {"approved": False}}), config(thread))  # not through turnstate

    result = continue_graph(graph, resumed)

    assert not result.ran and result.reason is not None
    assert "no longer pending" in result.reason
    pause = Pause.objects.get(jti=resumed.claims.jti)
    assert (pause.continuation, pause.continuation_reason) == (ContinuationState.REFUSED, result.reason)
    assert pending_ids(graph, thread) == [minted["hotel"].claims.interrupt_id]
    assert graph.get_state(config(thread)).values["log"] == ["flights:False"]
    assert runs(thread, "flights") == 1


def test_an_answer_off_the_schema_is_refused_before_the_token_is_spent() -> None:
    graph, thread, minted = paused_trip()
    with pytest.raises(AnswerValidationError):
        resume_pause(minted["flights"].token, {"approved": "maybe"})
    with pytest.raises(AnswerValidationError):
        resume_pause(minted["hotel"].token, {"approved": True, "extra": 1})  # a dict schema LangGraph ignores

    assert set(Pause.objects.filter(thread_id=thread).values_list("status", flat=True)) == {"pending"}
    assert resume_pause(minted["flights"].token, {"approved": True}).answer == {"approved": True}


class EvenNights(BaseModel):
    nights: int

    @field_validator("nights")
    @classmethod
    def even(cls, value: int) -> int:
        if value % 2:
            raise ValueError("nights must be even")
        return value


def test_an_answer_the_graph_still_refuses_is_listed_as_a_failed_continuation() -> None:
    from langgraph.graph import START, StateGraph

    from turnstate_app.contrib.langgraph.operators import unpaused_interrupts

    builder = StateGraph(approvals.TripState)
    builder.add_node(
        "nights", lambda state: {"log": [str(interrupt("How many nights?", response_schema=EvenNights))]}
    )
    builder.add_edge(START, "nights")
    graph = builder.compile(checkpointer=DjangoCheckpointSaver(), name="even-nights")
    thread = new_thread()
    graph.invoke({"log": []}, config(thread))
    [minted] = pause_interrupts(graph, config(thread), run_id="r", session_id="s")
    resumed = resume_pause(minted.token, {"nights": 3})  # the JSON Schema cannot say "even"

    result = continue_graph(graph, resumed)

    assert not result.ran and result.reason is not None
    assert result.reason.startswith("answer refused by the graph: ")
    pause = Pause.objects.get(jti=minted.claims.jti)
    assert (pause.continuation, pause.continuation_reason) == (ContinuationState.REFUSED, result.reason)
    assert list(Pause.objects.continuation_failed().values_list("jti", flat=True)) == [minted.claims.jti]
    assert lifecycle_status().failed_continuations == 1
    assert pending_ids(graph, thread) == [minted.claims.interrupt_id]
    assert [o.interrupt_id for o in unpaused_interrupts() if o.thread_id == thread] == [
        minted.claims.interrupt_id
    ]


# -- across processes ---------------------------------------------------------------------


def race(graph: str, jtis: list[str]) -> list[dict[str, Any]]:
    """Each jti continued by a process of its own, all released at once; outcomes in jti order."""
    barrier = SPAWN.Barrier(len(jtis))
    results = SPAWN.Queue()
    settings_dict = dict(connection.settings_dict)
    racers = [
        SPAWN.Process(target=continue_elsewhere, args=(settings_dict, graph, jti, barrier, results, n))
        for n, jti in enumerate(jtis)
    ]
    for racer in racers:
        racer.start()
    outcomes = dict(results.get(timeout=120) for _ in racers)
    for racer in racers:
        racer.join(timeout=30)
    return [outcomes[n] for n in range(len(jtis))]


def test_two_processes_continuing_one_pause_run_the_node_once() -> None:
    thread = new_thread()
    graph = approvals.single_question(DjangoCheckpointSaver())
    graph.invoke({"log": []}, config(thread))
    [minted] = pause_interrupts(graph, config(thread), run_id="r", session_id="s")
    resume_pause(minted.token, "yes")

    outcomes = race("single_question", [minted.claims.jti, minted.claims.jti])

    assert sorted(str(o.get("ran", o.get("error"))) for o in outcomes) == ["False", "True"], outcomes
    [lost] = [o for o in outcomes if not o["ran"]]
    assert lost["reason"] in ("already continued", "continuation claimed elsewhere")
    assert runs(thread, "ask") == 1 and runs(thread, "book") == 1
    no_fork(thread)


def test_two_processes_continuing_both_halves_of_a_parallel_pair_apply_both_answers_in_turn() -> None:
    graph, thread, minted = paused_trip()
    resume_pause(minted["flights"].token, {"approved": True})
    resume_pause(minted["hotel"].token, {"approved": True})

    outcomes = race("trip_approvals", [minted["flights"].claims.jti, minted["hotel"].claims.jti])

    assert [o.get("ran", o.get("error")) for o in outcomes] == [True, True], outcomes
    assert sum(len(o["minted"]) for o in outcomes) == 1  # the next question, asked once
    assert runs(thread, "flights") == 1 and runs(thread, "hotel") == 1
    assert sorted(graph.get_state(config(thread)).values["log"]) == ["flights:True", "hotel:True"]
    no_fork(thread)


# -- strict resume ------------------------------------------------------------------------


def asks_twice(saver: Any) -> Any:
    from langgraph.graph import START, StateGraph

    def details(state: approvals.TripState) -> dict[str, Any]:
        return {"log": [f"{interrupt('Window or aisle?')},{interrupt('Any meal preference?')}"]}

    builder = StateGraph(approvals.TripState)
    builder.add_node("details", details)
    builder.add_edge(START, "details")
    return builder.compile(checkpointer=saver, name="asks-twice")


def test_strict_resume_refuses_a_resent_answer_that_default_mode_gives_the_next_question() -> None:
    from langgraph.errors import UnknownInterruptError

    from turnstate_app.contrib.langgraph.strict import strict, strict_resume_key

    assert strict_resume_key() == "__pregel_strict_resume"
    graph = asks_twice(DjangoCheckpointSaver())
    lenient, careful = new_thread(), new_thread()
    first: dict[str, str] = {}
    for thread in (lenient, careful):
        graph.invoke({"log": []}, config(thread))
        [asked] = graph.get_state(config(thread)).interrupts
        first[thread] = asked.id
        graph.invoke(Command(resume={asked.id: "window"}), config(thread))

    graph.invoke(Command(resume={first[lenient]: "window"}), config(lenient))  # the same answer, re-sent
    with pytest.raises(UnknownInterruptError):
        graph.invoke(Command(resume={first[careful]: "window"}), strict(config(careful)))

    assert graph.get_state(config(lenient)).values["log"] == ["window,window"]  # the hazard
    assert len(pending_ids(graph, careful)) == 1


def test_without_strict_resume_the_pending_check_still_refuses_an_interrupt_answered_elsewhere(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from turnstate_app.contrib.langgraph import strict

    monkeypatch.setattr(strict, "strict_resume_key", lambda: None)  # a LangGraph without the key
    thread = new_thread()
    graph = asks_twice(DjangoCheckpointSaver())
    graph.invoke({"log": []}, config(thread))
    [minted] = pause_interrupts(graph, config(thread), run_id="r", session_id="s")
    resumed = resume_pause(minted.token, "window")
    graph.invoke(Command(resume={minted.claims.interrupt_id: "aisle"}), config(thread))  # elsewhere
    [second] = pending_ids(graph, thread)

    result = continue_graph(graph, resumed)

    assert not result.ran and "no longer pending" in str(result.reason)
    assert pending_ids(graph, thread) == [second]  # the next question was not answered "window"


def test_an_interrupt_inside_a_subgraph_pauses_and_continues_through_the_parent_thread() -> None:
    from langgraph.graph import START, StateGraph

    from turnstate_app.contrib.langgraph.operators import unpaused_interrupts

    inner = StateGraph(approvals.TripState)
    inner.add_node("inner", lambda state: {"log": [f"inner:{interrupt('Inside the subgraph?')}"]})
    inner.add_edge(START, "inner")
    outer = StateGraph(approvals.TripState)
    outer.add_node("sub", inner.compile())
    outer.add_edge(START, "sub")
    graph = outer.compile(checkpointer=DjangoCheckpointSaver(), name="with-subgraph")
    thread = new_thread()
    graph.invoke({"log": []}, config(thread))
    assert [o.thread_id for o in unpaused_interrupts() if o.thread_id == thread] == [thread]

    [minted] = pause_interrupts(graph, config(thread), run_id="r", session_id="s")
    result = continue_graph(graph, resume_pause(minted.token, "yes"))

    assert minted.resumable and minted.claims.name == "sub"
    assert result.ran and result.output["log"] == ["inner:yes"]


FRAGILE: dict[str, Any] = {}
"""The fragile graph of the test below, whether its booking service is down, what its handler got."""


def fragile_graph(saver: Any) -> Any:
    """ask (interrupts) -> book, which raises after the answer while ``FRAGILE["down"]``."""
    from langgraph.graph import START, StateGraph

    def fragile(state: approvals.TripState) -> dict[str, Any]:
        answer = interrupt("Go ahead?")
        if FRAGILE["down"]:
            raise RuntimeError(f"the booking service is down (answer {answer!r})")
        return {"log": [f"booked:{answer}"]}

    builder = StateGraph(approvals.TripState)
    builder.add_node("fragile", fragile)
    builder.add_edge(START, "fragile")
    return builder.compile(checkpointer=saver, name="fragile")


def continue_fragile(resumed: Any) -> None:
    """``RESUME_HANDLER`` of the fragile graph."""
    FRAGILE["results"].append(continue_graph(FRAGILE["graph"], resumed))


def test_a_node_that_fails_after_its_answer_is_crashed_at_once_naming_the_exception_never_a_dropped_answer(
    turnstate_settings: Any,
) -> None:
    from datetime import timedelta

    from django.utils import timezone

    graph = fragile_graph(DjangoCheckpointSaver())
    FRAGILE.update(down=True, results=[], graph=graph)
    thread = new_thread()
    graph.invoke({"log": []}, config(thread))
    [minted] = pause_interrupts(graph, config(thread), run_id="r", session_id="s")
    jti = minted.claims.jti
    resumed = resume_pause(minted.token, "yes")

    with pytest.raises(RuntimeError, match="booking service is down"):
        continue_graph(graph, resumed)

    pause = Pause.objects.get(jti=jti)
    assert pause.continuation == ContinuationState.CRASHED  # at once, not stalled much later
    assert pause.continuation_reason == "RuntimeError: the booking service is down (answer 'yes')"
    now = lifecycle_status()
    assert (now.failed_continuations, now.running, now.stalled) == (1, 0, 0)
    assert lifecycle_status(now=timezone.now() + timedelta(hours=1)).stalled == 0
    again = continue_graph(graph, resumed)  # a redelivery runs nothing: what ran may not run twice
    assert not again.ran and again.reason is not None
    assert again.reason.startswith("the run raised before: RuntimeError: the booking service is down")
    assert "turnstate_redeliver --jti" in again.reason
    assert pending_ids(graph, thread) == [minted.claims.interrupt_id]  # the interrupt still waits

    FRAGILE["down"] = False  # the service is back: an operator hands the answer again
    turnstate_settings["RESUME_HANDLER"] = f"{__name__}.continue_fragile"
    call_command("turnstate_redeliver", "--older-than", "0", stdout=StringIO())
    assert FRAGILE["results"] == []  # never by itself
    call_command("turnstate_redeliver", f"--jti={jti}", stdout=StringIO())

    [result] = FRAGILE["results"]
    assert result.ran and result.output["log"] == ["booked:yes"]  # the answer was never dropped
    assert Pause.objects.get(jti=jti).continuation == ContinuationState.CONTINUED
    assert pending_ids(graph, thread) == [] and lifecycle_status().failed_continuations == 0
