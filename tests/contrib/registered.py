"""A graph and an agent at module level, as ``TURNSTATE["AGENTS"]`` names them in the task tests."""

from __future__ import annotations

from typing import Any

from langgraph.graph import END, START, StateGraph

from tests.contrib.langgraph.graphs import TripState, _ask, _book, _plan
from tests.contrib.pydantic_ai.agents import travel_agent
from turnstate_app.contrib.langgraph import DjangoCheckpointSaver


def named_trip(name: str) -> Any:
    """plan -> ask (interrupts) -> book, compiled with ``name``."""
    builder = StateGraph(TripState)
    builder.add_node("plan", _plan)
    builder.add_node("ask", _ask)
    builder.add_node("book", _book)
    builder.add_edge(START, "plan")
    builder.add_edge("plan", "ask")
    builder.add_edge("ask", "book")
    builder.add_edge("book", END)
    return builder.compile(checkpointer=DjangoCheckpointSaver(), name=name)


trip = named_trip("task-trip")
travel = travel_agent(name="travel")
AGENTS = {"task-trip": "tests.contrib.registered.trip", "travel": "tests.contrib.registered.travel"}
