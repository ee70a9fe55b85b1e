"""A run as a chat UI shows it. A PydanticAI run is read from its saved conversation and the
ledger, an OpenAI Agents SDK run from its session and the ledger: the task worker that
continues it writes nothing of the demo's own."""

from __future__ import annotations

from typing import Any

from django.apps import apps

from demo_agents.models import AgentRun, Booking, Payment
from turnstate_app.models import ContinuationState, Pause


def shown(run: AgentRun) -> dict[str, Any]:
    if stored_payment_run(run.run_id):
        return payment_run(run)
    # Read before the conversation: the worker saves the conversation, then marks the pause
    # continued, so a run read as continued shows its last messages.
    continued = Pause.objects.filter(run_id=run.run_id, continuation=ContinuationState.CONTINUED).exists()
    conversation = saved_conversation(run.thread_id)
    if conversation is None:  # the scripted agent keeps its transcript on the run
        return {"status": run.status, "transcript": run.transcript, "continued_by_pid": run.continued_by_pid}
    from demo_agents.booking import transcript

    booked_by = Booking.objects.filter(run_id=run.run_id).values_list("booked_by_pid", flat=True).first()
    return {
        "status": "continued" if continued else "paused",
        "transcript": transcript(conversation),
        "continued_by_pid": booked_by,
    }


def saved_conversation(thread_id: str) -> Any:
    if not apps.is_installed("turnstate_app.contrib.pydantic_ai"):
        return None
    from turnstate_app.contrib.pydantic_ai import DjangoConversationStore

    return DjangoConversationStore().load_sync(thread_id)


def stored_payment_run(run_id: str) -> bool:
    if not apps.is_installed("turnstate_app.contrib.openai_agents"):
        return False
    from turnstate_app.contrib.openai_agents.models import StoredRunState

    return StoredRunState.objects.filter(run_id=run_id).exists()


def payment_run(run: AgentRun) -> dict[str, Any]:
    """An OpenAI Agents SDK run, read from its session and the ledger."""
    from demo_agents.payments import transcript
    from turnstate_app.contrib.openai_agents import DjangoSession

    continued = Pause.objects.filter(run_id=run.run_id, continuation=ContinuationState.CONTINUED).exists()
    paid_by = Payment.objects.filter(run_id=run.run_id, tool="pay").values_list("pid", flat=True).first()
    return {
        "status": "continued" if continued else "paused",
        "transcript": transcript(DjangoSession(run.thread_id)),
        "continued_by_pid": paid_by,
    }
