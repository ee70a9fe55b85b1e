"""What ``compat`` assumes about LangGraph, checked against LangGraph's own behaviour.

Each probe in ``turnstate_app.contrib.langgraph.compat`` stands in for something LangGraph
does not export by name. These tests drive LangGraph through its public API only, so an
upstream change (a renamed key, another environment variable) fails here, not in production.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest
from django.core.checks import Warning
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.errors import UnknownInterruptError
from langgraph.graph import START, StateGraph
from langgraph.types import Command, interrupt
from pydantic import BaseModel
from typing_extensions import TypedDict

from turnstate_app.contrib.langgraph import compat
from turnstate_app.contrib.langgraph.checks import check_serde_policy
from turnstate_app.contrib.langgraph.strict import strict

ROOT = Path(__file__).resolve().parents[3]

# In a fresh interpreter (LangGraph reads the variable once, at import): does LangGraph's
# default serializer load a type outside its safe list, and what does compat say?
PROBE = """
import http, json
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer
from turnstate_app.contrib.langgraph import compat
serde = JsonPlusSerializer()
loaded = serde.loads_typed(serde.dumps_typed(http.HTTPStatus.OK))
refused = not isinstance(loaded, http.HTTPStatus)
print(json.dumps({"refused": refused, "compat": compat.langgraph_strict_msgpack()}))
"""


def probe(value: str | None) -> dict[str, bool]:
    env = {k: v for k, v in os.environ.items() if k != compat.STRICT_MSGPACK_ENVIRON}
    if value is not None:
        env[compat.STRICT_MSGPACK_ENVIRON] = value
    done = subprocess.run(
        [sys.executable, "-c", PROBE], cwd=ROOT, env=env, capture_output=True, text=True, check=True
    )
    result: dict[str, bool] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


@pytest.mark.parametrize(
    ("value", "strict_mode"),
    [("true", True), ("1", True), ("YES", True), ("false", False), ("", False), ("on", False), (None, False)],
)
def test_compat_reads_the_environment_as_langgraphs_serializer_does(
    value: str | None, strict_mode: bool
) -> None:
    assert probe(value) == {"refused": strict_mode, "compat": strict_mode}


def test_w003_follows_langgraphs_environment_variable(settings: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    settings.TURNSTATE = {}
    monkeypatch.setenv(compat.STRICT_MSGPACK_ENVIRON, "false")
    [warning] = check_serde_policy()
    assert isinstance(warning, Warning) and warning.id == "turnstate.W003"
    assert compat.STRICT_MSGPACK_ENVIRON in (warning.hint or "")
    monkeypatch.setenv(compat.STRICT_MSGPACK_ENVIRON, "true")
    assert check_serde_policy() == []


# -- strict resume -------------------------------------------------------------------------


class Seat(TypedDict):
    log: list[str]


def asks_twice() -> Any:
    def details(state: Seat) -> dict[str, Any]:
        return {"log": [f"{interrupt('Window or aisle?')},{interrupt('Any meal preference?')}"]}

    builder = StateGraph(Seat)
    builder.add_node("details", details)
    builder.add_edge(START, "details")
    return builder.compile(checkpointer=InMemorySaver(), name="asks-twice")


def answered_once(graph: Any) -> tuple[RunnableConfig, str]:
    """A thread whose first question is answered and whose second is pending."""
    config: RunnableConfig = {"configurable": {"thread_id": str(uuid.uuid4())}}
    graph.invoke({"log": []}, config)
    [asked] = graph.get_state(config).interrupts
    graph.invoke(Command(resume={asked.id: "window"}), config)
    return config, asked.id


def test_this_langgraph_has_strict_resume() -> None:
    assert compat.strict_resume_config_key() == compat.STRICT_RESUME_CONFIG_KEY
    assert compat.unknown_interrupt_error() is UnknownInterruptError


def test_the_strict_resume_key_makes_langgraph_refuse_an_answer_already_consumed() -> None:
    graph = asks_twice()
    lenient, first_lenient = answered_once(graph)
    careful, first_careful = answered_once(graph)

    graph.invoke(Command(resume={first_lenient: "window"}), lenient)  # re-sent: answers the next question
    with pytest.raises(UnknownInterruptError) as refused:
        graph.invoke(Command(resume={first_careful: "window"}), strict(careful))

    assert refused.value.reason == "not_pending"
    assert graph.get_state(lenient).values["log"] == ["window,window"]
    assert len(graph.get_state(careful).interrupts) == 1  # still waiting for its own answer


class Count(BaseModel):
    count: int


def test_a_refused_answer_is_told_apart_from_any_other_error() -> None:
    def asks_for_a_count(state: Seat) -> dict[str, Any]:
        answer = interrupt("How many?", response_schema=Count)
        return {"log": [str(answer.count)]}

    builder = StateGraph(Seat)
    builder.add_node("count", asks_for_a_count)
    builder.add_edge(START, "count")
    graph: Any = builder.compile(checkpointer=InMemorySaver(), name="counts")
    config: RunnableConfig = {"configurable": {"thread_id": str(uuid.uuid4())}}
    graph.invoke({"log": []}, config)
    [asked] = graph.get_state(config).interrupts

    with pytest.raises(Exception) as refused:
        graph.invoke(Command(resume={asked.id: {"count": "many"}}), config)

    assert compat.is_invalid_resume(refused.value)
    assert not compat.is_invalid_resume(ValueError("another failure"))
