"""Operators see interrupts no pause asks for, and pending pauses whose interrupt is gone."""

from __future__ import annotations

import json
import uuid
from io import StringIO
from typing import Any

import pytest
from django.core.management import call_command
from langgraph.types import Command

from tests.contrib.langgraph.approvals import config, single_question, start, trip_approvals
from tests.pause_helpers import mint
from turnstate_app.contrib.langgraph import DjangoCheckpointSaver, continue_graph, pause_interrupts
from turnstate_app.contrib.langgraph.operators import orphans, stranded_pauses, unpaused_interrupts
from turnstate_app.pauses import resume_pause

pytestmark = pytest.mark.django_db(transaction=True)


def new_thread() -> str:
    return f"orphan-{uuid.uuid4().hex[:12]}"


def listed(rows: list[Any], thread: str) -> list[tuple[str, str]]:
    return sorted((row.kind, row.interrupt_id) for row in rows if row.thread_id == thread)


def test_interrupts_left_without_a_pause_are_listed_until_they_are_paused() -> None:
    thread = new_thread()
    graph = trip_approvals(DjangoCheckpointSaver())
    start(graph, thread)  # ... and the process died before pause_interrupts
    waiting = sorted(i.id for i in graph.get_state(config(thread)).interrupts)

    assert listed(unpaused_interrupts(), thread) == [("unpaused_interrupt", i) for i in waiting]

    pause_interrupts(graph, config(thread), run_id="r", session_id="s")
    assert listed(orphans(), thread) == []


def test_the_second_question_of_a_node_is_seen_as_waiting() -> None:
    thread = new_thread()
    graph = trip_approvals(DjangoCheckpointSaver())
    start(graph, thread)
    for pending in graph.get_state(config(thread)).interrupts:
        graph.invoke(Command(resume={pending.id: {"approved": True}}), config(thread))
    [first] = graph.get_state(config(thread)).interrupts
    graph.invoke(Command(resume={first.id: "aisle"}), config(thread))
    [second] = graph.get_state(config(thread)).interrupts

    assert listed(unpaused_interrupts(), thread) == [("unpaused_interrupt", second.id)]


def test_a_pending_pause_whose_thread_was_erased_or_answered_elsewhere_is_listed() -> None:
    saver = DjangoCheckpointSaver()
    erased, elsewhere = new_thread(), new_thread()
    graph = single_question(saver)
    for thread in (erased, elsewhere):
        graph.invoke({"log": []}, config(thread))
    [gone] = pause_interrupts(graph, config(erased), run_id="r", session_id="s")
    [answered] = pause_interrupts(graph, config(elsewhere), run_id="r", session_id="s")
    saver.delete_thread(erased)
    graph.invoke(Command(resume={answered.claims.interrupt_id: "yes"}), config(elsewhere))
    mint(interrupt_id="not-langgraph", tool_call_id=None)  # another integration's pause: not ours to judge

    stranded = {row.jti: row for row in stranded_pauses()}

    assert set(stranded) == {gone.claims.jti, answered.claims.jti}
    assert stranded[gone.claims.jti].interrupt_id == gone.claims.interrupt_id


def test_a_pause_answered_and_continued_is_no_orphan() -> None:
    thread = new_thread()
    graph = single_question(DjangoCheckpointSaver())
    graph.invoke({"log": []}, config(thread))
    [minted] = pause_interrupts(graph, config(thread), run_id="r", session_id="s")
    assert continue_graph(graph, resume_pause(minted.token, "yes")).ran
    assert listed(orphans(), thread) == []


def test_the_command_prints_both_lists_as_a_table_or_json() -> None:
    unpaused, erased = new_thread(), new_thread()
    saver = DjangoCheckpointSaver()
    graph = single_question(saver)
    graph.invoke({"log": []}, config(unpaused))
    graph.invoke({"log": []}, config(erased))
    [gone] = pause_interrupts(graph, config(erased), run_id="r", session_id="s")
    saver.delete_thread(erased)

    out = StringIO()
    call_command("turnstate_langgraph_orphans", "--json", stdout=out)
    rows = {row["thread_id"]: row for row in json.loads(out.getvalue())["results"]}
    assert rows[unpaused]["kind"] == "unpaused_interrupt" and rows[unpaused]["jti"] is None
    assert rows[erased]["kind"] == "stranded_pause" and rows[erased]["jti"] == gone.claims.jti
    assert rows[erased]["age_seconds"] >= 0

    out = StringIO()
    call_command("turnstate_langgraph_orphans", stdout=out)
    text = out.getvalue()
    assert unpaused in text and gone.claims.jti in text
    assert "no pause:" in text and "interrupt gone:" in text
