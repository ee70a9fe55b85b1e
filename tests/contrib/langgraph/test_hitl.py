"""LangChain's HumanInTheLoopMiddleware on ``create_agent``: per-call and batched reviews as pauses.

A real agent on the Django saver, with a scripted chat model (no network): it asks for two
tool calls, one gated with every decision allowed, one with approve or reject only.
"""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain.agents.middleware import HumanInTheLoopMiddleware
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import tool

from turnstate_app.contrib.langgraph import (
    DjangoCheckpointSaver,
    UnnamedGraphError,
    continue_graph,
    pause_interrupts,
)
from turnstate_app.errors import AnswerValidationError
from turnstate_app.models import Pause
from turnstate_app.pauses import resume_pause

pytestmark = pytest.mark.django_db(transaction=True)
SENT: list[str] = []


class ScriptedModel(GenericFakeChatModel):
    def bind_tools(self, tools: Any, **kwargs: Any) -> Any:
        return self


@tool
def send_email(to: str, body: str) -> str:
    """Send an email."""
    SENT.append(to)
    return f"sent to {to}"


@tool
def delete_file(path: str) -> str:
    """Delete a file."""
    return f"deleted {path}"


def agent(mode: str, name: str | None = "mailer") -> Any:
    model = ScriptedModel(
        messages=iter(
            [
                AIMessage(
                    "",
                    tool_calls=[
                        {
                            "name": "send_email",
                            "args": {"to": "ana@example.com", "body": "hi"},
                            "id": "call-1",
                        },
                        {"name": "delete_file", "args": {"path": "/tmp/old"}, "id": "call-2"},
                    ],
                ),
                AIMessage("All done."),
            ]
        )
    )
    gate = HumanInTheLoopMiddleware(
        interrupt_on={"send_email": True, "delete_file": {"allowed_decisions": ["approve", "reject"]}},
        interrupt_mode=mode,  # type: ignore[arg-type]
    )
    return create_agent(
        model,
        tools=[send_email, delete_file],
        checkpointer=DjangoCheckpointSaver(),
        middleware=[gate],
        name=name,
    )


def started(mode: str, name: str | None = "mailer") -> tuple[Any, RunnableConfig]:
    config: RunnableConfig = {"configurable": {"thread_id": f"hitl-{uuid.uuid4().hex[:12]}"}}
    graph = agent(mode, name)
    graph.invoke({"messages": [("user", "Email Ana and clean up.")]}, config)
    return graph, config


def test_per_call_reviews_are_one_pause_per_tool_call_checked_by_their_schema() -> None:
    SENT.clear()
    graph, config = started("per_call")
    minted = {m.claims.tool_call_id: m for m in pause_interrupts(graph, config, run_id="r", session_id="s")}
    assert set(minted) == {"call-1", "call-2"}
    with pytest.raises(AnswerValidationError):  # edit is not allowed for delete_file
        resume_pause(minted["call-2"].token, {"type": "edit", "edited_action": {"name": "x", "args": {}}})

    first = continue_graph(graph, resume_pause(minted["call-1"].token, {"type": "approve"}))
    last = continue_graph(
        graph, resume_pause(minted["call-2"].token, {"type": "reject", "message": "keep it"})
    )

    assert first.ran and last.ran and first.minted == last.minted == []
    assert SENT == ["ana@example.com"]
    assert last.output["messages"][-1].content == "All done."


def test_a_batched_review_is_one_pause_whose_decisions_are_checked_for_count_and_type() -> None:
    SENT.clear()
    graph, config = started("batched")
    [minted] = pause_interrupts(graph, config, run_id="r", session_id="s")
    schema = Pause.objects.get(jti=minted.claims.jti).answer_schema
    assert schema is not None and schema["properties"]["decisions"]["maxItems"] == 2

    for wrong in (
        {"decisions": [{"type": "approve"}]},  # one decision for two calls
        {"decisions": [{"type": "approve"}, {"type": "edit", "edited_action": {"name": "x", "args": {}}}]},
        {"decisions": [{"type": "respond"}, {"type": "approve"}]},  # respond needs its message
    ):
        with pytest.raises(AnswerValidationError):
            resume_pause(minted.token, wrong)
    assert Pause.objects.get(jti=minted.claims.jti).status == "pending"

    answer = {"decisions": [{"type": "approve"}, {"type": "reject", "message": "keep it"}]}
    result = continue_graph(graph, resume_pause(minted.token, answer))

    assert result.ran and result.minted == []
    assert SENT == ["ana@example.com"]
    assert result.output["messages"][-1].content == "All done."


def test_an_agent_created_without_a_name_cannot_pause_and_is_told_how_to_name_it() -> None:
    graph, config = started("per_call", name=None)
    with pytest.raises(UnnamedGraphError, match=r"create_agent\(\.\.\., name="):
        pause_interrupts(graph, config, run_id="r", session_id="s")
    assert not Pause.objects.filter(thread_id=config["configurable"]["thread_id"]).exists()


def test_a_review_pause_records_the_agents_name() -> None:
    graph, config = started("batched")
    [minted] = pause_interrupts(graph, config, run_id="r", session_id="s")
    assert Pause.objects.get(jti=minted.claims.jti).agent == "mailer"
