"""Statements per LangGraph continuation, on every connection and thread (the saver writes from
LangGraph's executor threads, on a connection of their own).

A continuation is the core's (the claim, the turn taken and given back, the completion), one
read of the pause for the question it recorded, and LangGraph's own: one read of the head (the
question's check and the run share it) and the run's writes. The head is not read again after a
run that stopped at no interrupt.
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from asgiref.sync import sync_to_async

from tests.contrib.langgraph.approvals import config as approvals_config
from tests.contrib.langgraph.approvals import start, trip_approvals
from tests.contrib.langgraph.graphs import config, trip_graph
from tests.contrib.langgraph.test_hitl import started
from tests.statements_counted import Counted, counting
from turnstate_app.contrib.langgraph import (
    DjangoCheckpointSaver,
    acontinue_graph,
    continue_graph,
    pause_interrupts,
)
from turnstate_app.contrib.langgraph.connections import release_saver_connections
from turnstate_app.contrib.langgraph.models import Checkpoint, CheckpointWrite
from turnstate_app.models import Pause
from turnstate_app.pauses import ResumedPause, resume_pause

pytestmark = pytest.mark.django_db(transaction=True)

SINGLE_INTERRUPT = 10
"""Issue 42's target: the core's 4, the pause read for its question, the head read once, and the
run's four writes (its pending write and checkpoint, twice)."""
BATCHED_REVIEW = 14
"""The same for LangChain's batched tool review: the run writes eight rows."""

CHECKPOINTS = Checkpoint._meta.db_table
LEDGER = Pause._meta.db_table


@contextmanager
def counted_run() -> Iterator[Counted]:
    """:func:`counting`, the saver connection closed first so that it opens again, counted."""
    release_saver_connections()
    with counting() as counted:
        yield counted
    release_saver_connections()


def head_reads(counted: Counted) -> int:
    return len(counted.of(CHECKPOINTS, "SELECT"))


def single_interrupt() -> tuple[Any, ResumedPause]:
    graph = trip_graph(DjangoCheckpointSaver(), name="trip")
    thread = f"single-{uuid.uuid4().hex[:12]}"
    graph.invoke({"transcript": []}, config(thread))
    [minted] = pause_interrupts(graph, config(thread), run_id="r", session_id="s")
    return graph, resume_pause(minted.token, "May 3rd")


def test_a_single_interrupt_continues_in_ten_statements() -> None:
    graph, resumed = single_interrupt()
    with counted_run() as counted:
        result = continue_graph(graph, resumed)
    assert result.ran and result.minted == []
    assert len(counted) <= SINGLE_INTERRUPT, counted.listing()
    assert head_reads(counted) == 1, counted.listing()
    assert len(counted.of(LEDGER, "SELECT")) == 1, counted.listing()
    # LangGraph's writes were counted where they ran: on its own threads.
    writers = {s.thread for s in counted.of(CheckpointWrite._meta.db_table, "INSERT")}
    assert writers and threading.main_thread().name not in writers, counted.listing()


async def test_the_async_twin_sends_no_more() -> None:
    graph, resumed = await sync_to_async(single_interrupt, thread_sensitive=True)()
    await sync_to_async(release_saver_connections, thread_sensitive=True)()
    with counting() as counted:
        await sync_to_async(counted.attach_open, thread_sensitive=True)()
        result = await acontinue_graph(graph, resumed)
        await sync_to_async(counted.detach_open, thread_sensitive=True)()
    assert result.ran
    assert len(counted) <= SINGLE_INTERRUPT, counted.listing()
    assert head_reads(counted) == 1, counted.listing()


def test_a_batched_review_continues_in_fourteen_statements() -> None:
    graph, review = started("batched")
    [minted] = pause_interrupts(graph, review, run_id="r", session_id="s")
    answer = {"decisions": [{"type": "approve"}, {"type": "reject", "message": "keep it"}]}
    resumed = resume_pause(minted.token, answer)
    with counted_run() as counted:
        result = continue_graph(graph, resumed)
    assert result.ran and result.minted == []
    assert len(counted) <= BATCHED_REVIEW, counted.listing()
    assert head_reads(counted) == 1, counted.listing()


def test_a_run_that_stops_again_reads_the_new_head_for_its_next_pause() -> None:
    """Answering one of two parallel approvals: the run stops at the other again (it has its
    pause), and the new head is read to find that out."""
    graph = trip_approvals(DjangoCheckpointSaver())
    thread = f"pair-{uuid.uuid4().hex[:12]}"
    start(graph, thread)
    minted = {
        m.claims.name: m
        for m in pause_interrupts(graph, approvals_config(thread), run_id="r", session_id="s")
    }
    resumed = resume_pause(minted["flights"].token, {"approved": True})
    with counted_run() as counted:
        result = continue_graph(graph, resumed)
    assert result.ran and result.minted == []  # the hotel's interrupt has its pause already
    assert head_reads(counted) == 2, counted.listing()
