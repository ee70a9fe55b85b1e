"""Two deterministic agent turns (no model, no network) that stop to ask a person.

Each builds the prompt and transcript a real agent would have at the moment it pauses,
then mints a pause with them: the transcript goes to the store, only claims go in the token.
"""

from __future__ import annotations

import uuid
from typing import Any

from demo_agents.models import AgentRun
from demo_agents.ports import TurnStateWriteFailsPort
from turnstate_app.pauses import MintedPause, mint_pause
from turnstate_app.turnstate import TurnCheckpointStore

SYSTEM = {"role": "system", "content": "You are a travel assistant. Ask before spending money."}


def ask_user_turn(owner: Any) -> MintedPause:
    """The agent calls its ``ask_user`` tool: which week suits the team?"""
    prompt = "Plan a two-day team offsite in Lisbon for six people."
    question = "Which week suits the team: May 4 or May 11?"
    messages = [
        SYSTEM,
        {"role": "user", "content": prompt},
        {"role": "assistant", "content": "Two venues are free on both weeks; I need a date."},
        {
            "role": "assistant",
            "tool_calls": [{"id": "call-ask-1", "name": "ask_user", "arguments": {"question": question}}],
        },
    ]
    return pause_run(
        prompt,
        messages,
        owner,
        tool_call_id="call-ask-1",
        name="ask_user",
        request={"question": question, "choices": ["May 4", "May 11"]},
    )


def interrupt_turn(owner: Any) -> MintedPause:
    """The agent hits an approval interrupt; its turn-state write fails (demo-only port)."""
    prompt = "Book the venue deposit."
    messages = [
        SYSTEM,
        {"role": "user", "content": prompt},
        {"role": "assistant", "content": "The deposit is EUR 2,400. Approval needed."},
    ]
    return pause_run(
        prompt,
        messages,
        owner,
        interrupt_id="approve-deposit",
        request={"question": "Approve a EUR 2,400 deposit?"},
        store=TurnCheckpointStore(commands=TurnStateWriteFailsPort()),
    )


def pause_run(prompt: str, messages: list[dict[str, Any]], owner: Any, **pause: Any) -> MintedPause:
    """Start a run the chat UI can show, then pause it: the same steps for every scripted turn."""
    run_id, thread_id = f"run-{uuid.uuid4().hex[:8]}", f"thread-{uuid.uuid4().hex[:8]}"
    AgentRun.objects.create(run_id=run_id, thread_id=thread_id, transcript=messages)
    return mint_pause(
        run_id=run_id,
        session_id="demo-session",
        thread_id=thread_id,
        checkpoint_id="cp-1",
        scope_hash="offsite-planning",
        prompt=prompt,
        messages=messages,
        owner=owner,
        **pause,
    )
