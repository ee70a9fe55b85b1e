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


def trip_graph(saver: DjangoCheckpointSaver, *, name: str | None = None) -> Any:
    """plan -> ask (interrupts) -> book (``name``: LangGraph's default when None)."""
    builder = StateGraph(TripState)
    builder.add_node("plan", _plan)
    builder.add_node("ask", _ask)
    builder.add_node("book", _book)
    builder.add_edge(START, "plan")
    builder.add_edge("plan", "ask")
    builder.add_edge("ask", "book")
    builder.add_edge("book", END)
    return builder.compile(checkpointer=saver, name=name)


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


def _price(state: PydanticTripState) -> dict[str, Any]:
    # Writes a model instance into the state: that is what the checkpoint then stores.
    return {
        "itinerary": Itinerary(city=state.itinerary.city, nights=state.itinerary.nights),
        "note": "priced",
    }


def _confirm(state: PydanticTripState) -> dict[str, Any]:
    answer = interrupt({"question": f"Confirm {state.itinerary.city}?"})
    # Attribute access: fails if the state came back as plain dicts.
    return {"itinerary": state.itinerary.model_copy(update={"confirmed": answer == "yes"}), "note": answer}


def pydantic_graph(saver: DjangoCheckpointSaver) -> Any:
    builder = StateGraph(PydanticTripState)
    builder.add_node("price", _price)
    builder.add_node("confirm", _confirm)
    builder.add_edge(START, "price")
    builder.add_edge("price", "confirm")
    builder.add_edge("confirm", END)
    return builder.compile(checkpointer=saver)


class TranscriptState(TypedDict):
    messages: list[str]


def _speaker(step: int) -> Any:
    def speak(state: TranscriptState) -> dict[str, Any]:
        return {"messages": [*state["messages"], f"step {step}: " + "x" * 1000]}

    return speak


def _wait(state: TranscriptState) -> dict[str, Any]:
    answer = interrupt({"question": "Go on?"})
    return {"messages": [*state["messages"], f"answer: {answer}"]}


def transcript_graph(saver: DjangoCheckpointSaver, steps: int = 5) -> Any:
    """``steps`` nodes, each changing the whole transcript channel, then a pause."""
    builder = StateGraph(TranscriptState)
    previous = START
    for step in range(steps):
        builder.add_node(f"step{step}", _speaker(step))
        builder.add_edge(previous, f"step{step}")
        previous = f"step{step}"
    builder.add_node("wait", _wait)
    builder.add_edge(previous, "wait")
    builder.add_edge("wait", END)
    return builder.compile(checkpointer=saver)


class ListState(TypedDict):
    items: Annotated[list[str], operator.add]


def _appender(step: int) -> Any:
    def append(state: ListState) -> dict[str, Any]:
        return {"items": [f"{step}:" + "x" * 200]}

    return append


def linear_graph(saver: DjangoCheckpointSaver, nodes: int = 10) -> Any:
    """``nodes`` nodes one after the other, each appending to a list channel: a checkpoint per step."""
    builder = StateGraph(ListState)
    previous = START
    for step in range(nodes):
        builder.add_node(f"node{step}", _appender(step))
        builder.add_edge(previous, f"node{step}")
        previous = f"node{step}"
    builder.add_edge(previous, END)
    return builder.compile(checkpointer=saver)
