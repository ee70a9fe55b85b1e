"""The Google ADK demo: a payments agent on a scripted model (no model, no network, no Google account).

Its one invocation wants two confirmations at once: ``transfer`` (2400 to acme), gated with
``require_confirmation=True``, and ``refund`` (order A-17), which asks the person for structured
data with ``tool_context.request_confirmation(hint=..., payload=...)``: how much, to which
account. The session and its events live in the database (``DjangoSessionService``); both
confirmations become one group of pauses, and the task worker sends the answers back into the
same invocation once, when both are in.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import AsyncGenerator
from typing import Any

from asgiref.sync import sync_to_async
from google.adk.agents import LlmAgent
from google.adk.apps import App
from google.adk.events import Event
from google.adk.models.base_llm import BaseLlm
from google.adk.models.llm_request import LlmRequest
from google.adk.models.llm_response import LlmResponse
from google.adk.runners import Runner
from google.adk.tools import FunctionTool, ToolContext
from google.genai import types

from demo_agents.models import AgentRun, Payment
from turnstate_app.contrib.google_adk import DjangoSessionService, pause_confirmations
from turnstate_app.pauses import MintedPause

NAME = "adk_payments"
PROMPT = "Pay acme's invoice (2400) and refund order A-17."
REFUND_HINT = "Refund order A-17: how much, and to which account?"
REFUND_FORM = {"amount": 0, "account": ""}
"""What ``refund`` asks the person to fill in; its shape becomes the answer's schema."""


NO_TOKENS = types.GenerateContentResponseUsageMetadata(
    prompt_token_count=0, candidates_token_count=0, total_token_count=0
)
"""Usage a scripted reply reports: ADK warns on every reply that reports none."""


class ScriptedModel(BaseLlm):
    """Stands in for Gemini, answering from the request's contents alone: any process gets the
    same reply on any turn, so the worker that continues the invocation needs no script state."""

    model: str = "scripted"

    async def generate_content_async(
        self, llm_request: LlmRequest, stream: bool = False
    ) -> AsyncGenerator[LlmResponse, None]:
        results = {
            part.function_response.name: part.function_response.response
            for content in llm_request.contents
            for part in content.parts or []
            if part.function_response is not None
        }  # the latest result of each tool: the one after its confirmation
        if not results:
            parts = [
                call("transfer", {"amount": 2400, "to": "acme"}, "call-transfer"),
                call("refund", {"order": "A-17"}, "call-refund"),
            ]
        else:
            parts = [
                types.Part(text=f"Transfer: {results.get('transfer')}; refund: {results.get('refund')}.")
            ]
        yield LlmResponse(content=types.Content(role="model", parts=parts), usage_metadata=NO_TOKENS)


def call(name: str, args: dict[str, Any], call_id: str) -> types.Part:
    return types.Part(function_call=types.FunctionCall(name=name, args=args, id=call_id))


def record(run_id: str, tool: str, detail: str) -> None:
    Payment.objects.create(run_id=run_id, tool=tool, detail=detail, pid=os.getpid())


async def transfer(amount: int, to: str, tool_context: ToolContext) -> dict[str, Any]:
    """Send money (a person confirms it first: ``require_confirmation=True``)."""
    await sync_to_async(record, thread_sensitive=True)(
        tool_context.session.id, "transfer", f"{amount} to {to}"
    )
    return {"sent": f"{amount} to {to}"}


async def refund(order: str, tool_context: ToolContext) -> dict[str, Any]:
    """Refund an order: the person says how much and where, in the confirmation's payload."""
    confirmation = tool_context.tool_confirmation
    if confirmation is None:
        tool_context.request_confirmation(hint=REFUND_HINT, payload=REFUND_FORM)
        return {"status": "waiting for a person"}
    if not confirmation.confirmed:
        return {"status": "refund rejected"}
    form = dict(confirmation.payload or {})
    detail = f"{form['amount']} of {order} to {form['account']}"
    await sync_to_async(record, thread_sensitive=True)(tool_context.session.id, "refund", detail)
    return {"refunded": detail}


agent = LlmAgent(
    name=NAME,
    model=ScriptedModel(),
    instruction="Pay invoices and refund orders.",
    tools=[FunctionTool(transfer, require_confirmation=True), refund],
)
app = App(name=NAME, root_agent=agent)
"""The app ``TURNSTATE["AGENTS"]["adk_payments"]`` names: the task worker continues its pauses with it."""


def start_payment(owner: Any) -> tuple[str, str, list[MintedPause]]:
    """Run the agent until it asks for both confirmations; pause them. Its session id, invocation
    id and pauses (the session, and its events, are in the database)."""
    service = DjangoSessionService()
    session = service.create_session_sync(
        app_name=NAME, user_id=owner.username, session_id=f"adk-{uuid.uuid4().hex[:12]}"
    )
    runner = Runner(app=app, session_service=service)
    message = types.Content(role="user", parts=[types.Part(text=PROMPT)])
    events = list(runner.run(user_id=owner.username, session_id=session.id, new_message=message))
    invocation_id = events[-1].invocation_id
    AgentRun.objects.create(run_id=invocation_id, thread_id=session.id, transcript=transcript(events))
    pauses = pause_confirmations(
        events,
        agent=app,
        user_id=owner.username,
        session_id=session.id,
        invocation_id=invocation_id,
        owner=owner,
    )
    return session.id, invocation_id, pauses


def session_events(user_id: str, session_id: str) -> list[Event]:
    """The session's events as the database holds them now."""
    session = DjangoSessionService().get_session_sync(app_name=NAME, user_id=user_id, session_id=session_id)
    return list(session.events) if session is not None else []


def transcript(events: list[Event]) -> list[dict[str, Any]]:
    """What a chat UI would show, from the events (the shape ``demo_support.short`` prints)."""
    shown: list[dict[str, Any]] = []
    for event in events:
        role = "user" if event.author == "user" else "assistant"
        for part in event.content.parts or [] if event.content else []:
            if part.function_call is not None:
                arguments = dict(part.function_call.args or {})
                shown.append(
                    {"role": role, "tool_calls": [{"name": part.function_call.name, "arguments": arguments}]}
                )
            elif part.function_response is not None:
                content = f"{part.function_response.name}: {part.function_response.response}"
                shown.append({"role": "user" if role == "user" else "tool", "content": content})
            elif part.text:
                shown.append({"role": role, "content": part.text})
    return shown
