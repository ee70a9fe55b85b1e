"""The scripted agent's worker (``make demo``): continue a turn from the store alone, in the worker.

The scripted agent is no framework's graph or agent, so its demo hands answers over with its own
``RESUME_HANDLER`` (:func:`enqueue_turn`); the LangGraph and PydanticAI demos use the app's own
``turnstate_app.handoff.enqueue_continuation`` and ``AGENTS``, with no code here.
"""

from __future__ import annotations

import os

from demo_agents.models import AgentRun
from turnstate_app.pauses import ResumedPause, resumed
from turnstate_app.tasks_api import task


def enqueue_turn(answered: ResumedPause) -> None:
    """``RESUME_HANDLER`` of the scripted demo."""
    continue_turn.enqueue(answered.claims.jti)


@task()
def continue_turn(jti: str) -> str:
    """Rebuild the paused turn from the database, append the answer and the agent's next message."""
    answered = resumed(jti)
    run = AgentRun.objects.get(run_id=answered.claims.run_id)
    if answered.checkpoint is None:
        run.status = "stranded"
        run.save(update_fields=["status", "updated_at"])
        return "no turn state: answered, but the run cannot be continued"
    answer = answered.answer
    run.transcript = [
        *answered.checkpoint.messages,
        {"role": "tool", "tool_call_id": answered.claims.tool_call_id, "content": answer},
        {
            "role": "assistant",
            "content": f"Booked: the offsite is the week of {answer}. Calendar invites are on their way.",
        },
    ]
    run.status = "continued"
    run.continued_by_pid = os.getpid()
    run.save(update_fields=["transcript", "status", "continued_by_pid", "updated_at"])
    return "continued"
