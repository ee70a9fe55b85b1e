"""A LangGraph graph with no model and no network: the trip the LangGraph demo books.

Two approvals asked in parallel (flights, hotel), then ``details``, which asks twice, then
``book``. Each node that got past its question leaves a :class:`~demo_agents.models.NodeRun`
row with the process that ran it, so the demo shows which process continued what, and
that nothing ran twice.
"""

from __future__ import annotations

import operator
import os
import threading
from typing import Annotated, Any

from langchain_core.messages import AIMessage, AnyMessage
from langchain_core.runnables import RunnableConfig
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from langgraph.types import interrupt
from pydantic import BaseModel
from typing_extensions import TypedDict

from turnstate_app.contrib.langgraph import DjangoCheckpointSaver


class Approval(BaseModel):
    """What an approval answer must look like (validated before the token is spent)."""

    approved: bool
    note: str = ""


class TripState(TypedDict, total=False):
    messages: Annotated[list[AnyMessage], add_messages]
    log: Annotated[list[str], operator.add]


def ran(config: RunnableConfig, node: str) -> None:
    """Record the run. Nodes run on LangGraph's executor threads, whose connections Django never
    closes: one opened here is closed again (as the saver does with its own)."""
    from django.db import connection

    from demo_agents.models import NodeRun

    opened_here = connection.connection is None and threading.current_thread() is not threading.main_thread()
    try:
        NodeRun.objects.create(thread_id=config["configurable"]["thread_id"], node=node, pid=os.getpid())
    finally:
        if opened_here and not connection.in_atomic_block:
            connection.close()


def flights(state: TripState, config: RunnableConfig) -> dict[str, Any]:
    answer = interrupt({"question": "Approve the flights to Lisbon, EUR 640?"}, response_schema=Approval)
    ran(config, "flights")
    return {"log": [f"flights approved={answer.approved}"], "messages": [AIMessage("Flights decided.")]}


def hotel(state: TripState, config: RunnableConfig) -> dict[str, Any]:
    answer = interrupt({"question": "Approve the hotel, 3 nights, EUR 380?"}, response_schema=Approval)
    ran(config, "hotel")
    return {"log": [f"hotel approved={answer.approved}"], "messages": [AIMessage("Hotel decided.")]}


def details(state: TripState, config: RunnableConfig) -> dict[str, Any]:
    seat = interrupt({"question": "Window or aisle?"}, response_schema={"enum": ["window", "aisle"]})
    meal = interrupt({"question": "Any meal preference?"}, response_schema={"type": "string"})
    ran(config, "details")
    return {"log": [f"seat={seat} meal={meal}"], "messages": [AIMessage(f"Seat {seat}, meal {meal}.")]}


def book(state: TripState, config: RunnableConfig) -> dict[str, Any]:
    ran(config, "book")
    return {"log": ["booked"], "messages": [AIMessage("Booked. Have a good trip!")]}


def trip_graph() -> Any:
    """The compiled graph, on the project's database (any process builds the same one)."""
    builder = StateGraph(TripState)
    for node in (flights, hotel, details, book):
        builder.add_node(node.__name__, node)
    builder.add_edge(START, "flights")
    builder.add_edge(START, "hotel")
    builder.add_edge(["flights", "hotel"], "details")
    builder.add_edge("details", "book")
    builder.add_edge("book", END)
    return builder.compile(checkpointer=DjangoCheckpointSaver(), name="trip")


graph = trip_graph()
"""The graph ``TURNSTATE["AGENTS"]["trip"]`` names: the task worker continues the trip's pauses with it."""
