"""Statements per pause and per continuation, counted on every thread (LangGraph writes on its own)."""

from __future__ import annotations

import threading
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from django.db import connections
from django.db.backends.signals import connection_created

from tests.contrib.langgraph.approvals import config, start, trip_approvals
from turnstate_app.contrib.langgraph import DjangoCheckpointSaver, continue_graph, pause_interrupts
from turnstate_app.pauses import resume_pause

pytestmark = pytest.mark.django_db(transaction=True)

# What docs/langgraph.md reports; a change that adds statements shows up here first.
MOST = {"pause_interrupts (2 pauses)": 30, "continue (no next pause)": 20, "continue (1 next pause)": 35}


class Statements:
    """Counts every statement on every connection, of any thread, while active."""

    def __init__(self) -> None:
        self.counts: Counter[str] = Counter()
        self.lock = threading.Lock()
        self.label = ""

    def __call__(self, execute: Callable[..., Any], sql: str, params: Any, many: bool, context: Any) -> Any:
        with self.lock:
            self.counts[self.label] += 1
        return execute(sql, params, many, context)

    def attach(self, connection: Any, **_: Any) -> None:
        if self not in connection.execute_wrappers:
            connection.execute_wrappers.append(self)

    @contextmanager
    def counting(self, label: str) -> Iterator[None]:
        self.label = label
        yield
        self.label = ""


@pytest.fixture
def statements() -> Iterator[Statements]:
    counter = Statements()
    connection_created.connect(counter.attach)
    for connection in connections.all(initialized_only=True):
        counter.attach(connection)
    try:
        yield counter
    finally:
        connection_created.disconnect(counter.attach)
        for connection in connections.all(initialized_only=True):
            if counter in connection.execute_wrappers:
                connection.execute_wrappers.remove(counter)


def test_statements_per_pause_and_per_continuation(statements: Statements) -> None:
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
