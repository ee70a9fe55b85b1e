"""Statements per pause and per continuation, counted on every thread (LangGraph writes on its own)."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest

from tests.contrib.langgraph.approvals import config, start, trip_approvals
from tests.contrib.langgraph.statements_seen import SeenStatements, watching
from turnstate_app.contrib.langgraph import DjangoCheckpointSaver, continue_graph, pause_interrupts
from turnstate_app.pauses import resume_pause

pytestmark = pytest.mark.django_db(transaction=True)

# What docs/langgraph.md reports; a change that adds statements shows up here first.
MOST = {"pause_interrupts (2 pauses)": 30, "continue (no next pause)": 20, "continue (1 next pause)": 35}


@pytest.fixture
def statements() -> Iterator[SeenStatements]:
    with watching() as seen:
        yield seen


def test_statements_per_pause_and_per_continuation(statements: SeenStatements) -> None:
    thread = f"count-{uuid.uuid4().hex[:12]}"
    graph = trip_approvals(DjangoCheckpointSaver())
    start(graph, thread)
    with statements.counting("pause_interrupts (2 pauses)"):
        paused = pause_interrupts(graph, config(thread), run_id="r", session_id="s")
    minted = {m.claims.name: m for m in paused}
    flights = resume_pause(minted["flights"].token, {"approved": True})
    hotel = resume_pause(minted["hotel"].token, {"approved": True})
    with statements.counting("continue (no next pause)"):
        assert continue_graph(graph, flights).minted == []
    with statements.counting("continue (1 next pause)"):
        assert len(continue_graph(graph, hotel).minted) == 1

    print({label: statements.counts[label] for label in MOST})  # noqa: T201 - the docs page's figures
    for label, most in MOST.items():
        assert 0 < statements.counts[label] <= most, (label, statements.counts[label])
