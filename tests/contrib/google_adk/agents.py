"""A payments app on ADK with a scripted model (no network), choosing its answer from the request.

Its first turn calls ``pay`` (gated with ``require_confirmation``) and ``book`` (which asks for
confirmation itself, with a hint and a payload: the day and seats it wants confirmed) together.
Once both have answered, it says what happened; when the user's message mentions a refund it
first calls ``refund`` (gated too). Each step is chosen from what the request already holds, so
any process, on any turn, gets the same script. Every execution of a tool is a row in the
database, so a test in any process can count them.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncGenerator
from typing import Any

from asgiref.sync import sync_to_async
from google.adk.agents import LlmAgent
from google.adk.apps import App, ResumabilityConfig
from google.adk.models.base_llm import BaseLlm
from google.adk.models.llm_request import LlmRequest
from google.adk.models.llm_response import LlmResponse
from google.adk.runners import Runner
from google.adk.tools.function_tool import FunctionTool
from google.adk.tools.tool_context import ToolContext
from google.genai import types

RUNS_THREAD = "adk-tool-runs"
APP_NAME = "adk_payments"
PAY = {"amount": 2400, "to": "acme"}
BOOK = {"room": "A"}
ASKED = {"day": "monday", "seats": 2}
"""What ``book`` asks the person to confirm (and, confirming, may change)."""
FIRST = "Pay acme 2400 and book room A."


def record_tool_run(name: str, detail: str) -> None:
    from turnstate_app.models import CheckpointMetadata

    CheckpointMetadata.objects.create(
        thread_id=RUNS_THREAD, checkpoint_id=name, key=uuid.uuid4().hex, value=detail
    )


def tool_runs(name: str) -> list[str]:
    """What each run of tool ``name`` was called with, in order."""
    from turnstate_app.models import CheckpointMetadata

    rows = CheckpointMetadata.objects.filter(thread_id=RUNS_THREAD, checkpoint_id=name).order_by("pk")
    return list(rows.values_list("value", flat=True))


def call(name: str, args: dict[str, Any], call_id: str) -> types.Part:
    return types.Part(function_call=types.FunctionCall(name=name, args=args, id=call_id))


class ScriptedModel(BaseLlm):
    """Answers each request from its contents: the user's first words and the tool results so far."""

    model: str = "scripted"

    def step(self, request: LlmRequest) -> list[types.Part]:
        said = " ".join(
            part.text or ""
            for content in request.contents
            if content.role == "user"
            for part in content.parts or []
        )
        results = {
            part.function_response.name: part.function_response.response
            for content in request.contents
            for part in content.parts or []
            if part.function_response is not None
        }
        if "pay" not in results:
            return [call("pay", PAY, "c-pay"), call("book", BOOK, "c-book")]
        if "refund" in said and "refund" not in results:
            return [call("refund", {"amount": 100}, "c-refund")]
        return [types.Part(text="done. " + json.dumps(results, sort_keys=True))]

    async def generate_content_async(
        self, llm_request: LlmRequest, stream: bool = False
    ) -> AsyncGenerator[LlmResponse, None]:
        yield LlmResponse(content=types.Content(role="model", parts=self.step(llm_request)))


async def pay(amount: int, to: str) -> str:
    """Pay someone (a person confirms it first)."""
    await sync_to_async(record_tool_run, thread_sensitive=True)("pay", f"{amount} to {to}")
    return f"paid {amount} to {to}"


async def refund(amount: int) -> str:
    """Refund (a person confirms it first)."""
    await sync_to_async(record_tool_run, thread_sensitive=True)("refund", str(amount))
    return f"refunded {amount}"


async def book(room: str, tool_context: ToolContext) -> dict[str, Any]:
    """Book a room; a person confirms the day and the seats first."""
    confirmation = tool_context.tool_confirmation
    if confirmation is None:
        tool_context.request_confirmation(hint="Confirm the day and the seats.", payload=ASKED)
        return {"status": "waiting for confirmation"}
    if not confirmation.confirmed:
        return {"status": "not booked"}
    chosen: dict[str, Any] = confirmation.payload or {}
    detail = json.dumps({"room": room, **chosen}, sort_keys=True)
    await sync_to_async(record_tool_run, thread_sensitive=True)("book", detail)
    return {"status": "booked", **chosen}


def payments_agent(*, name: str = "payments_agent") -> LlmAgent:
    return LlmAgent(
        name=name,
        model=ScriptedModel(),
        tools=[
            FunctionTool(pay, require_confirmation=True),
            book,
            FunctionTool(refund, require_confirmation=True),
        ],
    )


def payments_app(*, name: str = APP_NAME) -> App:
    """The payments agent in a resumable app (ADK 2.13 resumes a root ``LlmAgent``'s invocation from
    the confirmation's function response with or without ``ResumabilityConfig``)."""
    return App(
        name=name, root_agent=payments_agent(), resumability_config=ResumabilityConfig(is_resumable=True)
    )


def runner_for(app: App, session_service: Any) -> Runner:
    return Runner(app=app, session_service=session_service)


async def afirst_run(runner: Runner, *, user_id: str = "alice", text: str = FIRST) -> tuple[str, list[Any]]:
    """The invocation that stops for the two confirmations: its session id and its events."""
    session = await runner.session_service.create_session(app_name=runner.app_name, user_id=user_id)
    events = [
        event
        async for event in runner.run_async(
            user_id=user_id, session_id=session.id, new_message=types.UserContent(text)
        )
    ]
    return session.id, events


APP = payments_app()
"""The app as ``TURNSTATE["AGENTS"]`` names it (``tests.contrib.google_adk.agents.APP``)."""
ROOT_AGENT = payments_agent(name="adk_root")
"""A root agent as ``AGENTS`` may name it instead: its sessions are the app of its own name."""
AGENTS = {
    APP_NAME: "tests.contrib.google_adk.agents.APP",
    "adk_root": "tests.contrib.google_adk.agents.ROOT_AGENT",
}
