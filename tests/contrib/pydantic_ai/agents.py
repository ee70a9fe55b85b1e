"""A travel agent on ``FunctionModel`` (no network): one run asks a question and wants an approval.

Its first turn calls ``ask_date`` (a question: ``CallDeferred(kind="question")``) and
``book_flight`` (``requires_approval=True``) together. Told the results, it says what
happened; with ``follow_up`` it first wants one more approval (``buy_insurance``).
Every execution of a tool is a row in the database, so a test in any process can count them.
"""

from __future__ import annotations

import uuid
from typing import Any

from asgiref.sync import sync_to_async
from pydantic_ai import Agent
from pydantic_ai.exceptions import CallDeferred
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.tools import DeferredToolRequests

RUNS_THREAD = "tool-runs"


def record_tool_run(name: str, detail: str) -> None:
    from turnstate_app.models import CheckpointMetadata

    CheckpointMetadata.objects.create(
        thread_id=RUNS_THREAD, checkpoint_id=name, key=uuid.uuid4().hex, value=detail
    )


def tool_runs(name: str) -> int:
    from turnstate_app.models import CheckpointMetadata

    return CheckpointMetadata.objects.filter(thread_id=RUNS_THREAD, checkpoint_id=name).count()


def _returns(messages: list[ModelMessage]) -> list[ToolReturnPart]:
    return [
        part
        for message in messages
        if isinstance(message, ModelRequest)
        for part in message.parts
        if isinstance(part, ToolReturnPart)
    ]


def travel_agent(
    *, follow_up: bool = False, name: str | None = "travel"
) -> Agent[None, str | DeferredToolRequests]:
    def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        returns = {part.tool_name: part.content for part in _returns(messages)}
        if not returns:
            return ModelResponse(
                parts=[
                    ToolCallPart("ask_date", {"question": "Which date?"}, tool_call_id="call-date"),
                    ToolCallPart(
                        "book_flight", {"destination": "Lisbon", "seats": 2}, tool_call_id="call-book"
                    ),
                ]
            )
        if follow_up and "buy_insurance" not in returns:
            return ModelResponse(
                parts=[ToolCallPart("buy_insurance", {"trip": "Lisbon"}, tool_call_id="call-ins")]
            )
        said = "; ".join(f"{name}: {content}" for name, content in sorted(returns.items()))
        return ModelResponse(parts=[TextPart(f"done. {said}")])

    agent: Agent[None, str | DeferredToolRequests] = Agent(
        FunctionModel(respond), output_type=[str, DeferredToolRequests], name=name
    )

    @agent.tool_plain
    async def ask_date(question: str) -> str:
        """Ask the traveller a question."""
        raise CallDeferred(metadata={"question": question}, kind="question")

    @agent.tool_plain(requires_approval=True)
    async def book_flight(destination: str, seats: int) -> str:
        """Book seats on a flight (a person approves it first)."""
        await sync_to_async(record_tool_run, thread_sensitive=True)("book_flight", f"{destination} x{seats}")
        return f"booked {seats} to {destination}"

    @agent.tool_plain(requires_approval=True)
    async def buy_insurance(trip: str) -> str:
        """Insure a trip (a person approves it first)."""
        await sync_to_async(record_tool_run, thread_sensitive=True)("buy_insurance", trip)
        return f"insured {trip}"

    return agent


def first_run(agent: Any, conversation_id: str) -> Any:
    """The run that stops for the two deferred calls."""
    from pydantic_ai.conversation import Conversation

    return agent.run_sync(
        "Book me two seats to Lisbon.", conversation=Conversation(conversation_id=conversation_id)
    )
