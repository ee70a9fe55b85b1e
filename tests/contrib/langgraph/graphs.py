"""Real LangGraph graphs for the saver's tests: plain nodes, no model, no network."""

from __future__ import annotations

import operator
from typing import Annotated, Any

from langchain_core.runnables import RunnableConfig
from langgraph.graph import END, START, StateGraph
from langgraph.types import interrupt
from pydantic import BaseModel
from typing_extensions import TypedDict

from turnstate_app.contrib.langgraph import DjangoCheckpointSaver


class TripState(TypedDict, total=False):
    transcript: Annotated[list[str], operator.add]
    answer: str


def _plan(state: TripState) -> dict[str, Any]:
    return {"transcript": ["planned"]}


def _ask(state: TripState) -> dict[str, Any]:
    answer = interrupt({"question": "Which date suits you?"})
    return {"answer": answer, "transcript": [f"answered {answer}"]}


def _book(state: TripState) -> dict[str, Any]:
    return {"transcript": [f"booked for {state['answer']}"]}


def trip_graph(saver: DjangoCheckpointSaver) -> Any:
    """plan -> ask (interrupts) -> book."""
    builder = StateGraph(TripState)
    builder.add_node("plan", _plan)
    builder.add_node("ask", _ask)
    builder.add_node("book", _book)
    builder.add_edge(START, "plan")
    builder.add_edge("plan", "ask")
    builder.add_edge("ask", "book")
    builder.add_edge("book", END)
    return builder.compile(checkpointer=saver)


def config(thread_id: str) -> RunnableConfig:
    return {"configurable": {"thread_id": thread_id}}


class Itinerary(BaseModel):
    """The project's own pydantic state, as a host would write it."""

    city: str
    nights: int
    confirmed: bool = False


class PydanticTripState(BaseModel):
    itinerary: Itinerary
    note: str = ""


def _confirm(state: PydanticTripState) -> dict[str, Any]:
    answer = interrupt({"question": f"Confirm {state.itinerary.city}?"})
    # Attribute access: fails if the state came back as plain dicts.
    return {"itinerary": state.itinerary.model_copy(update={"confirmed": answer == "yes"}), "note": answer}


def pydantic_graph(saver: DjangoCheckpointSaver) -> Any:
    builder = StateGraph(PydanticTripState)
    builder.add_node("confirm", _confirm)
    builder.add_edge(START, "confirm")
    builder.add_edge("confirm", END)
    return builder.compile(checkpointer=saver)
