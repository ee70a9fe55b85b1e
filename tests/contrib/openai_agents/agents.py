"""A payments agent on the SDK's ``ScriptedModel`` (no network), choosing its step from the input.

Its first turn calls ``pay`` and ``notify`` together, both needing approval. Once both have
outputs, it says what happened; with ``follow_up`` it first wants one more approval
(``refund``). Each step is the SDK's own ``ScriptedModel`` answering with one scripted step,
picked from what the input already holds, so any process, on any turn, gets the same script.
Every execution of a tool is a row in the database, so a test in any process can count them.
"""

from __future__ import annotations

import uuid
from typing import Any

from agents import Agent, Runner, function_tool, set_tracing_disabled
from agents.testing import ScriptedModel, assistant_message, function_call
from asgiref.sync import sync_to_async

set_tracing_disabled(True)  # offline: no trace export

RUNS_THREAD = "oai-tool-runs"
PAY = {"amount": 2400, "to": "acme"}


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


class ByInput(ScriptedModel):
    """The SDK's scripted model, one step per call, chosen from the call ids answered so far."""

    def __init__(self, *, follow_up: bool) -> None:
        super().__init__()
        self.follow_up = follow_up

    def step(self, input: Any) -> list[Any]:
        items = input if isinstance(input, list) else []
        outputs = {
            item.get("call_id"): item.get("output")
            for item in items
            if isinstance(item, dict) and item.get("type") == "function_call_output"
        }
        if "c-pay" not in outputs:
            return [
                function_call("pay", PAY, call_id="c-pay"),
                function_call("notify", {"to": "bob"}, call_id="c-notify"),
            ]
        if self.follow_up and "c-refund" not in outputs:
            return [function_call("refund", {"amount": 100}, call_id="c-refund")]
        said = "; ".join(f"{key}: {value}" for key, value in sorted(outputs.items()))
        return [assistant_message(f"done. {said}")]

    async def get_response(self, system_instructions: Any, input: Any, *args: Any, **kwargs: Any) -> Any:
        self.enqueue(self.step(input))
        return await super().get_response(system_instructions, input, *args, **kwargs)


def payments_agent(*, name: str = "payments", follow_up: bool = False) -> Agent[Any]:
    @function_tool(needs_approval=True)
    async def pay(amount: int, to: str) -> str:
        """Pay someone (a person approves it first)."""
        await sync_to_async(record_tool_run, thread_sensitive=True)("pay", f"{amount} to {to}")
        return f"paid {amount} to {to}"

    @function_tool(needs_approval=True)
    async def notify(to: str) -> str:
        """Tell someone (a person approves it first)."""
        await sync_to_async(record_tool_run, thread_sensitive=True)("notify", to)
        return f"told {to}"

    @function_tool(needs_approval=True)
    async def refund(amount: int) -> str:
        """Refund (a person approves it first)."""
        await sync_to_async(record_tool_run, thread_sensitive=True)("refund", str(amount))
        return f"refunded {amount}"

    return Agent(name=name, model=ByInput(follow_up=follow_up), tools=[pay, notify, refund])


def first_run(agent: Agent[Any], *, session: Any = None) -> Any:
    """The run that stops for the two approvals."""
    return Runner.run_sync(agent, "Pay acme 2400 and tell bob.", session=session)
