"""A host's own tests of a LangGraph bridge, on Django's default in-memory SQLite test database.

Not collected by the suite (the name does not start with ``test_``): it runs only under
``tests.settings_memory``, where every thread's connection opens the one shared-cache
in-memory database (``make test-sqlite-memory``, and ``tests/test_sqlite_memory.py``). A sync
graph's ``put`` and ``put_writes`` run on LangGraph's executor threads; each used to open its
own connection there, and a lock held by another connection failed it at once with
``database table is locked``: always inside a test's transaction (pytest-django's
``django_db``, Django's ``TestCase``), now and then between two parallel branches.
"""

from __future__ import annotations

import operator
import uuid
from typing import Annotated, Any

import pytest
from django.db import connection
from django.test import TestCase
from langgraph.graph import END, START, StateGraph
from langgraph.types import interrupt
from typing_extensions import TypedDict

from tests.contrib.langgraph.approvals import config
from tests.factories import UserFactory
from turnstate_app.contrib.langgraph import DjangoCheckpointSaver, continue_graph, pause_interrupts
from turnstate_app.contrib.langgraph.connections import in_memory
from turnstate_app.models import Pause
from turnstate_app.pauses import resume_pause


@pytest.fixture(autouse=True)
def _in_memory(django_db_setup: Any) -> None:
    """Only where it means something: the test database in memory (tests.settings_memory)."""
    assert in_memory(connection), connection.settings_dict["NAME"]


class Trip(TypedDict, total=False):
    log: Annotated[list[str], operator.add]


def _asking(name: str) -> Any:
    def node(state: Trip) -> dict[str, Any]:
        return {"log": [f"{name}:{interrupt({'question': f'Approve the {name}?'})}"]}

    return node


def parallel_questions() -> Any:
    """Two questions asked by parallel branches (nodes without any SQL of their own), then a third."""
    builder = StateGraph(Trip)
    builder.add_node("flights", _asking("flights"))
    builder.add_node("hotel", _asking("hotel"))
    builder.add_node("seat", _asking("seat"))
    builder.add_edge(START, "flights")
    builder.add_edge(START, "hotel")
    builder.add_edge(["flights", "hotel"], "seat")
    builder.add_edge("seat", END)
    return builder.compile(checkpointer=DjangoCheckpointSaver(), name="in-memory-trip")


def paused_and_continued(owner: Any = None) -> dict[str, Any]:
    """The graph paused at its parallel questions, answered and continued to its end."""
    thread = f"memory-{uuid.uuid4().hex[:12]}"
    graph = parallel_questions()
    graph.invoke({"log": []}, config(thread))
    minted = pause_interrupts(graph, config(thread), run_id="r", session_id="s", owner=owner)
    assert len(minted) == 2
    results = [continue_graph(graph, resume_pause(m.token, "yes")) for m in minted]
    assert [r.ran for r in results] == [True, True]
    [seat] = results[0].minted + results[1].minted
    output = continue_graph(graph, resume_pause(seat.token, "aisle")).output
    assert sorted(output["log"]) == ["flights:yes", "hotel:yes", "seat:aisle"]
    return dict(output)


@pytest.mark.django_db
def test_inside_the_tests_transaction_after_a_write() -> None:
    """pytest-django's default: the test's transaction holds a write lock before the graph runs."""
    owner = UserFactory.create()
    paused_and_continued(owner)
    assert Pause.objects.filter(owner_id=owner.pk).count() == 3


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("turn", range(5))
def test_in_autocommit_parallel_branches_write_at_once(turn: int) -> None:
    paused_and_continued()


class HostTestCase(TestCase):
    """The same in a ``django.test.TestCase``, as a Django project writes its tests."""

    def test_the_bridge(self) -> None:
        owner = UserFactory.create()
        paused_and_continued(owner)
        self.assertEqual(Pause.objects.filter(owner_id=owner.pk).count(), 3)
