"""The PydanticAI demo: a travel agent on ``FunctionModel`` (no model, no network).

Its one run asks the traveller a question (``CallDeferred(kind="question")``) and wants an
approval to book (``requires_approval=True``) at once. The run is saved in the database
(``DjangoConversationStore``) and both calls become one group of pauses: the traveller
answers the question, a staff member the approval, and the worker continues the run once,
from the latest saved conversation, when both are in.
"""

from __future__ import annotations

import os
import uuid
from typing import Any

from asgiref.sync import sync_to_async
from pydantic_ai import Agent
from pydantic_ai.conversation import Conversation
from pydantic_ai.exceptions import CallDeferred
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.tools import DeferredToolRequests, RunContext

from demo_agents.models import AgentRun, Booking
from turnstate_app.contrib.pydantic_ai import DjangoConversationStore, pause_deferred
from turnstate_app.pauses import MintedPause

PROMPT = "Book two seats to Lisbon for the offsite."


def _respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    returns = {
        part.tool_name: part.content
        for message in messages
        if isinstance(message, ModelRequest)
        for part in message.parts
        if isinstance(part, ToolReturnPart)
    }
    if not returns:
        return ModelResponse(
            parts=[
                ToolCallPart("ask_traveller", {"question": "Which day do you fly?"}, tool_call_id="call-day"),
                ToolCallPart("book_flight", {"destination": "Lisbon", "seats": 2}, tool_call_id="call-book"),
            ]
        )
    return ModelResponse(
        parts=[TextPart(f"Booked: {returns['book_flight']}, flying {returns['ask_traveller']}.")]
    )


def trip_agent() -> Agent[None, str | DeferredToolRequests]:
    """The agent; a booking finds its run by the conversation it runs in."""
    agent: Agent[None, str | DeferredToolRequests] = Agent(
        FunctionModel(_respond), output_type=[str, DeferredToolRequests], name="booking"
    )

    @agent.tool_plain
    async def ask_traveller(question: str) -> str:
        """Ask the traveller; the answer comes back days later."""
        raise CallDeferred(metadata={"question": question}, kind="question")

    @agent.tool(requires_approval=True)
    async def book_flight(ctx: RunContext[None], destination: str, seats: int) -> str:
        """Book seats (spends money: a staff member approves it first)."""
        await sync_to_async(book, thread_sensitive=True)(str(ctx.conversation_id), destination, seats)
        return f"{seats} seats to {destination}"

    return agent


agent = trip_agent()
"""The agent ``TURNSTATE["AGENTS"]["booking"]`` names: the task worker continues its pauses with it."""


def book(conversation_id: str, destination: str, seats: int) -> None:
    run_id = AgentRun.objects.values_list("run_id", flat=True).get(thread_id=conversation_id)
    Booking.objects.create(run_id=run_id, destination=destination, seats=seats, booked_by_pid=os.getpid())


def start_trip(owner: Any) -> tuple[str, list[MintedPause]]:
    """Run the agent until it stops for the question and the approval; save it; pause."""
    run_id = f"trip-run-{uuid.uuid4().hex[:12]}"
    conversation_id = f"trip-{uuid.uuid4().hex[:12]}"
    store = DjangoConversationStore()
    result = agent.run_sync(PROMPT, conversation=Conversation(conversation_id=conversation_id))
    store.save_sync(result)
    AgentRun.objects.create(
        run_id=run_id, thread_id=conversation_id, transcript=transcript(result.conversation)
    )
    pauses = pause_deferred(result, store=store, run_id=run_id, session_id="demo", owner=owner, agent=agent)
    return run_id, pauses


def transcript(conversation: Conversation) -> list[dict[str, Any]]:
    """What a chat UI would show: who said what, which tools were called and what they returned."""
    shown: list[dict[str, Any]] = []
    for message in conversation.messages:
        for part in message.parts:
            if isinstance(part, UserPromptPart):
                shown.append({"role": "user", "content": part.content})
            elif isinstance(part, TextPart):
                shown.append({"role": "assistant", "content": part.content})
            elif isinstance(part, ToolCallPart):
                shown.append(
                    {
                        "role": "assistant",
                        "tool_calls": [{"name": part.tool_name, "arguments": part.args_as_dict()}],
                    }
                )
            elif isinstance(part, ToolReturnPart):
                shown.append({"role": "tool", "content": str(part.content)})
    return shown
