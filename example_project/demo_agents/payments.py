"""The OpenAI Agents SDK demo: a payments agent on the SDK's ``ScriptedModel`` (no model, no network).

Its one run wants two approvals at once: ``pay`` (2400 to acme) and ``notify`` (a message to
finance), both ``needs_approval=True``. The run's state is stored in the database
(``pause_approvals``), its conversation in a ``DjangoSession``, and both approvals become one
group of pauses; the task worker continues the run once, when both are answered.
"""

from __future__ import annotations

import os
import uuid
from typing import Any

from agents import Agent, RunContextWrapper, Runner, function_tool, set_tracing_disabled
from agents.testing import ScriptedModel, assistant_message, function_call
from asgiref.sync import sync_to_async

from demo_agents.models import AgentRun, Payment
from turnstate_app.contrib.openai_agents import DjangoSession, pause_approvals
from turnstate_app.pauses import MintedPause

set_tracing_disabled(True)  # the demo runs offline: no traces sent anywhere
PROMPT = "Pay acme's invoice (2400) and tell finance."


class Scripted(ScriptedModel):
    """The SDK's scripted model, one step per call, chosen from the calls answered so far: any
    process gets the same script, on any turn."""

    async def get_response(self, system_instructions: Any, input: Any, *args: Any, **kwargs: Any) -> Any:
        outputs = {
            item.get("call_id"): item.get("output")
            for item in (input if isinstance(input, list) else [])
            if isinstance(item, dict) and item.get("type") == "function_call_output"
        }
        if not outputs:
            step = [
                function_call("pay", {"amount": 2400, "to": "acme"}, call_id="call-pay"),
                function_call("notify", {"to": "finance", "text": "acme paid"}, call_id="call-notify"),
            ]
        else:
            step = [assistant_message(f"Paid: {outputs['call-pay']}; finance: {outputs['call-notify']}.")]
        self.enqueue(step)
        return await super().get_response(system_instructions, input, *args, **kwargs)


def record(run_id: str, tool: str, detail: str) -> None:
    Payment.objects.create(run_id=run_id, tool=tool, detail=detail, pid=os.getpid())


@function_tool(needs_approval=True)
async def pay(ctx: RunContextWrapper[Any], amount: int, to: str) -> str:
    """Pay someone (spends money: a person approves it first)."""
    await sync_to_async(record, thread_sensitive=True)(ctx.context["run_id"], "pay", f"{amount} to {to}")
    return f"{amount} to {to}"


@function_tool(needs_approval=True)
async def notify(ctx: RunContextWrapper[Any], to: str, text: str) -> str:
    """Send a message (a person approves it first)."""
    await sync_to_async(record, thread_sensitive=True)(ctx.context["run_id"], "notify", f"{to}: {text}")
    return f"told {to}"


agent = Agent(name="payments", model=Scripted(), tools=[pay, notify])
"""The agent ``TURNSTATE["AGENTS"]["payments"]`` names: the task worker continues its pauses with it."""


def start_payment(owner: Any) -> tuple[str, str, list[MintedPause]]:
    """Run the agent until it stops for both approvals; store the run; pause. Its run id, session id
    and pauses."""
    run_id = f"pay-run-{uuid.uuid4().hex[:12]}"
    session = DjangoSession(f"chat-{uuid.uuid4().hex[:12]}")
    result = Runner.run_sync(agent, PROMPT, session=session, context={"run_id": run_id})
    AgentRun.objects.create(run_id=run_id, thread_id=session.session_id, transcript=transcript(session))
    pauses = pause_approvals(result, agent=agent, run_id=run_id, session_id=session.session_id, owner=owner)
    return run_id, session.session_id, pauses


def transcript(session: DjangoSession) -> list[dict[str, Any]]:
    """What a chat UI would show, from the session's items."""
    shown: list[dict[str, Any]] = []
    for item in session.get_items_sync():
        kind = item.get("type")
        if kind == "function_call":
            shown.append(
                {"role": "assistant", "tool_calls": [{"name": item["name"], "arguments": item["arguments"]}]}
            )
        elif kind == "function_call_output":
            shown.append({"role": "tool", "content": str(item.get("output"))})
        elif isinstance(item.get("content"), str):
            shown.append({"role": item.get("role", "user"), "content": item["content"]})
        else:
            text = " ".join(
                part.get("text", "") for part in item.get("content") or [] if isinstance(part, dict)
            )
            shown.append({"role": item.get("role", "assistant"), "content": text})
    return shown
