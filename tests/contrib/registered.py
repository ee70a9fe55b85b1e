"""A graph and an agent at module level, as ``TURNSTATE["AGENTS"]`` names them in the task tests."""

from __future__ import annotations

from typing import Any

from tests.contrib.langgraph.graphs import trip_graph
from tests.contrib.openai_agents.agents import payments_agent
from tests.contrib.pydantic_ai.agents import travel_agent
from turnstate_app.contrib.langgraph import DjangoCheckpointSaver


def named_trip(name: str) -> Any:
    """plan -> ask (interrupts) -> book, compiled with ``name``."""
    return trip_graph(DjangoCheckpointSaver(), name=name)


trip = named_trip("task-trip")
travel = travel_agent(name="travel")
payments = payments_agent(name="payments")
AGENTS = {
    "task-trip": "tests.contrib.registered.trip",
    "travel": "tests.contrib.registered.travel",
    "payments": "tests.contrib.registered.payments",
}
