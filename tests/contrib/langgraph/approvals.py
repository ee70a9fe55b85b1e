"""The graph the bridge's tests pause and continue: no model, no network.

Two parallel approvals (``flights`` with a pydantic ``response_schema`` and a tool call id,
``hotel`` with a JSON Schema dict), then ``details``, which asks twice, then ``book``.
Each node that got its answer leaves one row in the database (:func:`runs`), so tests
count how often a node ran past its question, across processes.
"""

from __future__ import annotations

import operator
import threading
import uuid
from typing import Annotated, Any

from langchain_core.messages import AIMessage, AnyMessage
from langchain_core.runnables import RunnableConfig
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from langgraph.types import interrupt
from pydantic import BaseModel
from typing_extensions import TypedDict

RUNS = "node-runs"


class Approval(BaseModel):
    approved: bool
    note: str = ""


HOTEL_SCHEMA = {
    "type": "object",
    "properties": {"approved": {"type": "boolean"}},
    "required": ["approved"],
    "additionalProperties": False,
}


class TripState(TypedDict, total=False):
    messages: Annotated[list[AnyMessage], add_messages]
    log: Annotated[list[str], operator.add]


def record(config: RunnableConfig, node: str) -> None:
    """One row per node run past its question: how tests count runs across processes.

    Nodes run on LangGraph's executor threads; a connection opened there is closed again
    (Django never would), as the saver does with its own.
    """
    from django.db import connection

    from turnstate_app.models import CheckpointMetadata

    opened_here = connection.connection is None and threading.current_thread() is not threading.main_thread()
    try:
        CheckpointMetadata.objects.create(
            thread_id=config["configurable"]["thread_id"],
            checkpoint_id=RUNS,
            key=f"{node}:{uuid.uuid4().hex}",
            value="ran",
        )
    finally:
        if opened_here and not connection.in_atomic_block:
            connection.close()


def runs(thread_id: str, node: str | None = None) -> int:
    from turnstate_app.models import CheckpointMetadata

    rows = CheckpointMetadata.objects.filter(thread_id=thread_id, checkpoint_id=RUNS)
    return rows.filter(key__startswith=f"{node}:").count() if node else rows.count()


def _flights(state: TripState, config: RunnableConfig) -> dict[str, Any]:
    answer = interrupt(
        {"question": "Approve the flights, EUR 640?", "tool_call_id": "call-flights"},
        response_schema=Approval,
    )
    record(config, "flights")
    return {
        "log": [f"flights:{answer.approved}"],
        "messages": [AIMessage(f"flights approved={answer.approved}")],
    }


def _hotel(state: TripState, config: RunnableConfig) -> dict[str, Any]:
    answer = interrupt({"question": "Approve the hotel, EUR 380?"}, response_schema=HOTEL_SCHEMA)
    record(config, "hotel")
    return {
        "log": [f"hotel:{answer['approved']}"],
        "messages": [AIMessage(f"hotel approved={answer['approved']}")],
    }


def _details(state: TripState, config: RunnableConfig) -> dict[str, Any]:
    seat = interrupt("Window or aisle?")
    meal = interrupt("Any meal preference?")
    record(config, "details")
    return {"log": [f"details:{seat},{meal}"], "messages": [AIMessage(f"seat {seat}, meal {meal}")]}


def _book(state: TripState, config: RunnableConfig) -> dict[str, Any]:
    record(config, "book")
    return {"log": ["booked"], "messages": [AIMessage("Booked.")]}


def trip_approvals(saver: Any) -> Any:
    builder = StateGraph(TripState)
    builder.add_node("flights", _flights)
    builder.add_node("hotel", _hotel)
    builder.add_node("details", _details)
    builder.add_node("book", _book)
    builder.add_edge(START, "flights")
    builder.add_edge(START, "hotel")
    builder.add_edge(["flights", "hotel"], "details")
    builder.add_edge("details", "book")
    builder.add_edge("book", END)
    return builder.compile(checkpointer=saver, name="trip-approvals")


def single_question(saver: Any) -> Any:
    """``ask`` -> ``book``: one question, for the single-pause races."""
    builder = StateGraph(TripState)

    def ask(state: TripState, config: RunnableConfig) -> dict[str, Any]:
        answer = interrupt({"question": "Go ahead?"})
        record(config, "ask")
        return {"log": [f"ask:{answer}"]}

    builder.add_node("ask", ask)
    builder.add_node("book", _book)
    builder.add_edge(START, "ask")
    builder.add_edge("ask", "book")
    builder.add_edge("book", END)
    return builder.compile(checkpointer=saver, name="single-question")


def start(graph: Any, thread_id: str) -> Any:
    return graph.invoke({"messages": [("user", "Book my trip to Lisbon.")], "log": []}, config(thread_id))


def config(thread_id: str) -> RunnableConfig:
    return {"configurable": {"thread_id": thread_id}}
